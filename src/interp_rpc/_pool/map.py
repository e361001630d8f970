"""map(): items sent in chunks as they are encoded, results yielded in order.

The semantics are ``Executor.map``'s: the call submits the work (all of it,
or ``buffersize`` items when that is given, so that infinite iterables work)
and returns an iterator; ``timeout`` runs from the call and is raised from
``__next__``; the first failing item raises there, in order; closing the
iterator, an error or Ctrl-C cancels the chunks that have not started, and
stops the running ones before their next item.

Each chunk carries hooks for its items (see chunks.py): the index of its
first item, the map's stop flag (a byte of this process's memory that the
worker reads before every item, where it can: not in a worker process),
and, when asked, where output goes (``output``: a cross-interpreter queue,
see notebook/relay.py) and whether a failing item is collected instead of
ending the map (``errors="collect"``).

Chunks are encoded and sent one at a time, so workers start on the first
while the caller encodes the rest. Unless ``chunksize`` is given, a
ChunkSizer picks each chunk's size from the item cost measured on the chunks
that have finished, without dropping below ``_CHUNKS_PER_WORKER`` chunks per
worker, so the load stays balanced.
"""

from __future__ import annotations

import collections
import itertools
import math
import time
from collections.abc import Callable, Generator, Iterable, Iterator
from typing import TYPE_CHECKING, Any, cast

from interp_rpc._pool.chunk_sizer import ChunkSizer
from interp_rpc._pool.chunks import chunk_arguments, chunk_results
from interp_rpc._pool.engine import _core
from interp_rpc._pool.map_spec import map_spec
from interp_rpc.errors import MISSING, CallTimeoutError, RemoteError

if TYPE_CHECKING:
    from interp_rpc._pool.encoding import EncodedCall
    from interp_rpc._pool.engine_face import EngineCall
    from interp_rpc._pool.engine_pool import EnginePool

_CHUNKS_PER_WORKER = 8  # at least this many chunks per worker, for balance
_MAX_BATCH_ITEMS = 1024  # the most items encoded before they are sent together
#: How often a caller waiting for a chunk looks whether another thread asked
#: the map to stop (request_stop); a finished chunk ends the wait at once.
STOP_CHECK_SECONDS = 0.05


def next_wait(deadline: float | None) -> tuple[float, bool]:
    """How long a caller waiting for a chunk may block before it looks again
    whether the map was asked to stop, and whether the map's ``deadline``
    (time.monotonic(), None: none) has come by the end of that wait."""
    if deadline is None:
        return STOP_CHECK_SECONDS, False
    remaining = max(0.0, deadline - time.monotonic())
    return min(remaining, STOP_CHECK_SECONDS), remaining <= STOP_CHECK_SECONDS


class MapIterator(itertools.chain[Any]):
    """What map() returns: the results in order, as Executor.map's iterator
    gives them, with its ``close()``. It chains the iterators of each
    chunk's results, so taking the next result runs no Python code; only
    the step to the next chunk does (MapRun._chunks). A generator yielding
    every result cost a tiny-item map a tenth of its time in the caller."""

    __slots__ = ("_chunks", "_run")
    _chunks: Generator[Iterator[Any]]
    _run: MapRun

    @classmethod
    def over(cls, run: MapRun) -> MapIterator:
        chunks = run._chunks()
        results = cast("MapIterator", cls.from_iterable(chunks))
        results._chunks, results._run = chunks, run
        return results

    def close(self) -> None:
        """Stop: cancel the chunks that have not started and stop the running
        ones before their next item (also before any result was taken)."""
        self._chunks.close()
        self._run._cancel_pending()


class MapRun:
    """One map: what was submitted, in order, and the iterator over results."""

    def __init__(self, pool: EnginePool[Any], fn: Callable[..., Any] | str,
                 iterables: tuple[Iterable[Any], ...], *, timeout: float | None,
                 chunksize: int | None, buffersize: int | None,
                 on_dispatched: Callable[[], None] | None = None,
                 errors: str = "raise", output: int | None = None,
                 on_start: Callable[[MapRun], None] | None = None) -> None:
        """``errors="collect"``: a failing item's RemoteError takes its place
        among the results, and the map goes on. ``output``: the id of a
        cross-interpreter queue that receives what the targets print.
        ``on_start(self)``: before the first chunk is sent (see the pool
        contract's map_run)."""
        spec = map_spec(fn, iterables, timeout=timeout, chunksize=chunksize,
                        buffersize=buffersize, errors=errors, check_open=pool._check_open)
        self._spec = spec
        self._pool = pool
        self._total: int | None = spec.total
        # Read whole (a list or range): sliced; else read as the map goes.
        self._listed = spec.items if isinstance(spec.items, (list, range)) else None
        self._items = iter(spec.items)
        self._next_index = 0  # of the next item to read
        self._exhausted = False
        self._pending: collections.deque[tuple[int, int, EngineCall]] = collections.deque()
        self._in_flight = 0  # items in pending chunks
        self._done = 0  # items whose results were yielded
        self._sizer = ChunkSizer(self._balanced_size(), growth=pool._chunk_growth)
        self._measured_id = 0  # the last chunk whose cost the sizer has seen
        self._batch_items = 1  # how many items the next batch of chunks waits for
        self._output = output
        # Set to 1 to stop the running chunks before their next item; what
        # each chunk carries for its worker to read it.
        self._stop_flag, self._stop_carried = pool._map_stop_flag(self)
        self._finished_at_stop: int | None = None
        # Set by another thread (request_stop); read by the collecting one.
        self._stop_requested = False
        if on_start is not None:
            on_start(self)
        try:
            self._refill()
            if on_dispatched is not None and self._pending:
                on_dispatched()
        except BaseException:  # Ctrl-C while sending: nothing of the map goes on
            self._cancel_pending()
            raise

    # ------------------------------------------------------------ submitting

    def _balanced_size(self) -> int:
        workers = self._pool.workers
        if self._total is not None:
            return max(1, math.ceil(self._total / (workers * _CHUNKS_PER_WORKER)))
        assert self._spec.buffersize is not None
        return max(1, math.ceil(self._spec.buffersize / workers))

    def _next_size(self) -> int:
        size = self._spec.chunksize if self._spec.chunksize is not None else self._sizer.next_size()
        if self._spec.buffersize is not None:
            size = min(size, self._spec.buffersize - self._in_flight)
        return max(size, 1)

    def _has_room(self) -> bool:
        return self._spec.buffersize is None or self._in_flight < self._spec.buffersize

    def _refill(self) -> None:
        """Encode and submit chunks until the input ends or the buffer is full.

        When the input was read up front (no ``buffersize``), chunks are
        sent in batches that double from one chunk, capped at
        _MAX_BATCH_ITEMS items, each batch queued under one lock: the first
        goes out at once, and a worker that drains the queue finds its next
        call waiting instead of going to sleep and being woken for each one.
        A lazy input (``buffersize``) may be slow to yield its items, so each
        chunk is sent as soon as it is encoded."""
        batch: list[tuple[int, int, EncodedCall]] = []
        batch_items = 0
        while not self._exhausted and self._has_room():
            if self._spec.chunksize is None:
                self._measure_finished()
            size = self._next_size()
            chunk: list[Any] | range
            if self._listed is not None:
                chunk = self._listed[self._next_index:self._next_index + size]
            else:
                chunk = list(itertools.islice(self._items, size))
            if len(chunk) < size:
                self._exhausted = True
                if self._total is None:
                    self._total = self._next_index + len(chunk)
            if not chunk:
                break
            start = self._next_index
            self._next_index += len(chunk)
            self._in_flight += len(chunk)
            batch.append((start, len(chunk), self._encode_chunk(chunk, start)))
            batch_items += len(chunk)
            if batch_items >= self._batch_items:
                self._send(batch)
                batch, batch_items = [], 0
                if self._spec.buffersize is None:
                    self._batch_items = min(2 * self._batch_items, _MAX_BATCH_ITEMS)
        self._send(batch)

    def _encode_chunk(self, chunk: list[Any] | range, start: int) -> EncodedCall:
        pool = self._pool
        # Per chunk: a pool.profile() that starts during a lazy map times
        # the chunks sent after it started.
        mode = pool._profiling.chunk_mode(self._spec.mode, len(chunk))
        args = chunk_arguments(chunk, start, collect=self._spec.collect, output=self._output,
                               stop_flag=self._stop_carried)
        return pool._encode(self._spec.fn, args, {}, mode, start, self._spec.normalized)

    def _send(self, batch: list[tuple[int, int, EncodedCall]]) -> None:
        if len(batch) == 1:
            start, count, encoded = batch[0]
            handle = self._pool._submit(encoded, item_index=start, item_count=count)
            self._pending.append((start, count, handle))
        elif batch:
            handles = self._pool._submit_many(batch)
            self._pending.extend((start, count, handle)
                                 for (start, count, _), handle in zip(batch, handles, strict=True))

    def _measure_finished(self) -> None:
        """Learn the item cost from the oldest chunk, once it has finished."""
        if self._pending and self._pending[0][2].done:
            _, count, handle = self._pending[0]
            self._measure(handle, count)

    def _measure(self, handle: EngineCall, count: int) -> None:
        """Tell the sizer what a finished chunk cost, once per chunk."""
        if self._spec.chunksize is not None or handle.id <= self._measured_id:
            return
        self._measured_id = handle.id
        timing = handle.timing
        self._sizer.observe(timing["finished_ns"] - timing["started_ns"], count)

    # ------------------------------------------------------------ collecting

    def _cancel_pending(self) -> None:
        if not self._stop_flag[0]:
            # Counted before the stop: a chunk it ends early replies later.
            self._finished_at_stop = self._done + sum(
                count for _, count, handle in self._pending if handle.done)
            self._stop_flag[0] = 1
        engine = self._pool._engine
        while self._pending:
            start, count, handle = self._pending.popleft()
            if not engine.cancel(handle):  # it runs, or ran: its reply has its item times
                self._pool._profiling.abandoned(handle, start, count)

    def results(self) -> MapIterator:
        """The results, in order (what map() returns)."""
        return MapIterator.over(self)

    def _chunks(self) -> Generator[Iterator[Any]]:
        """Each chunk's results, in order, as an iterator that lets go of each
        one as it hands it over (_core_drain.hpp); the
        generator cancels what is left when closed, collected, or ended by
        an error. A failing item raises after the results before it."""
        try:
            while self._pending:
                start, count, handle = self._pending[0]
                self._wait_for(handle)
                self._pending.popleft()
                self._in_flight -= count
                if self._spec.chunksize is None:
                    self._measure(handle, count)
                values, failure = chunk_results(handle, self._pool._profiling, self._spec.fn,
                                                self._spec.name, start)
                if not self._exhausted:
                    self._refill()
                self._done += len(values)
                yield _core.drain(values)
                if failure is not None:
                    raise failure
        finally:
            self._cancel_pending()

    def _wait_for(self, handle: EngineCall) -> None:
        """Until ``handle`` finished; CallTimeoutError past the deadline,
        KeyboardInterrupt once another thread asked the map to stop."""
        while True:
            if self._stop_requested:
                # What Ctrl-C raises in the waiting thread, so the caller
                # reports and cleans up the same way. Looked at before each
                # wait: when the caller is the slower side, every chunk is
                # done before it is waited for, and no wait times out.
                raise KeyboardInterrupt
            wait, deadline_reached = next_wait(self._spec.deadline)
            if handle.wait(wait):
                return
            if deadline_reached:
                raise self._timeout_error(handle)

    def request_stop(self) -> None:
        """From any thread: the thread collecting the results gets a
        KeyboardInterrupt, as if Ctrl-C had interrupted it, within
        ``STOP_CHECK_SECONDS``; the chunks not started are cancelled and the
        running ones stop before their next item."""
        self._stop_requested = True

    def collect(self) -> list[Any]:
        """All the results, as a list. A failing item's RemoteError carries
        every result that arrived before it, in ``partial_results``."""
        results: list[Any] = []
        try:
            for chunk in self._chunks():
                results.extend(chunk)
        except RemoteError as failure:
            missing = (self.total or len(results)) - len(results)
            failure.partial_results = [*results, *[MISSING] * missing]
            raise
        return results

    @property
    def stops_running_chunks(self) -> bool:
        """Whether a stop (an error, close(), Ctrl-C, request_stop) stops the
        running chunks before their next item, rather than letting them run
        to their end: whether its workers read its stop flag."""
        return self._stop_carried is not None

    @property
    def delivered(self) -> int:
        """Items whose results were taken, in order: what a map that ended
        in an error had done."""
        return self._done

    @property
    def finished_items(self) -> int:
        """Items whose chunks had finished when the map stopped (or so far)."""
        if self._finished_at_stop is not None:
            return self._finished_at_stop
        # A copy first: another thread may ask (%parallel_status) while this
        # one takes chunks off the deque.
        pending = tuple(self._pending)
        return self._done + sum(count for _, count, handle in pending if handle.done)

    @property
    def total(self) -> int | None:
        """How many items the map has, once its input was read to the end."""
        return self._total

    def _timeout_error(self, handle: EngineCall) -> CallTimeoutError:
        assert self._spec.timeout is not None
        self._pool._profiling.gave_up(handle.id)
        busy_worker, seconds = self._pool._busy_worker(handle.id)
        return CallTimeoutError(self._spec.name, self._spec.timeout, worker=busy_worker,
                                running_seconds=seconds, completed=self._done,
                                total=self._total)
