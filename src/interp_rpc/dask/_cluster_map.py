"""ClusterPool.map: chunks of items as dask tasks, results yielded in order.

The semantics are ``Executor.map``'s, as for InterpreterPool.map: the call
submits the work and returns an iterator; ``timeout`` runs from the call and
is raised by ``__next__``; the first failing item raises in its place, after
the results of the items before it; closing the iterator, an error or a
timeout cancels the chunks that have not started.

Without ``buffersize`` the call reads and encodes every item (one that cannot
cross fails the map before anything runs) and sends a window of chunks, a few
per subinterpreter; each chunk that finishes sends the next one, from dask's
callback thread, so the cluster keeps working whether or not the caller reads
results, and every chunk goes to the process least loaded when it is sent.
With ``buffersize`` the input is read lazily (infinite iterables work): at
most ``buffersize`` items are submitted ahead of the consumer, whose thread
reads and sends the next ones.
"""

from __future__ import annotations

import collections
import functools
import itertools
import math
import threading
import time
from collections.abc import Callable, Generator, Iterable, Iterator
from typing import TYPE_CHECKING, Any

from interp_rpc._pool.chunks import chunk_arguments
from interp_rpc._pool.encoding import encode_call
from interp_rpc._pool.map import next_wait
from interp_rpc._pool.map_spec import map_spec
from interp_rpc.dask import _chunking
from interp_rpc.errors import RemoteError
from interp_rpc.profiling.recorder import chunk_mode

if TYPE_CHECKING:
    from interp_rpc.dask._cluster_pool import ClusterPool
    from interp_rpc.dask._jobs import Job


class ClusterMapRun:
    """One map: its chunks, in order, and the iterator over their results."""

    def __init__(self, pool: ClusterPool, fn: Callable[..., Any] | str,
                 iterables: tuple[Iterable[Any], ...], *, timeout: float | None,
                 chunksize: int | None, buffersize: int | None, errors: str = "raise",
                 output: object = None,
                 on_start: Callable[[ClusterMapRun], None] | None = None) -> None:
        """``on_start(self)``: before the first chunk is sent (see the pool
        contract's map_run)."""
        spec = map_spec(fn, iterables, timeout=timeout, chunksize=chunksize,
                        buffersize=buffersize, errors=errors, check_open=pool._check_open)
        self._spec = spec
        self._pool = pool
        # Where what the items print goes (ClusterPool.output_destination).
        self._output = output
        self._lock = threading.Lock()
        self._jobs: collections.deque[Job] = collections.deque()  # in order, until yielded
        self._held: collections.deque[Job] = collections.deque()  # encoded, not sent yet
        self._sent_in_flight = 0  # chunks sent and not finished
        self._sending = False  # a thread is in _send_held's loop
        self._long_chunks = False  # one took QUEUE_AHEAD_LIMIT_S or more
        self._stopped = False
        # Set by another thread (request_stop); read by the collecting one.
        self._stop_requested = False
        self._done = 0  # items whose results were yielded
        if on_start is not None:
            on_start(self)
        slots = max(1, pool.workers)
        if isinstance(spec.items, (list, range)):
            listed = spec.items
            self._total: int | None = len(listed)
            self._items: Iterator[Any] = iter(())
            self._exhausted = True
            size = _chunking.chunk_size(len(listed), slots, chunksize)
            # Every chunk is encoded before any is sent: an item that cannot
            # cross fails the map before anything runs, as in the local pool.
            for start in _chunking.chunk_starts(len(listed), size):
                self._held.append(self._chunk(listed[start:start + size], start))
            self._jobs.extend(self._held)
            try:
                self._send_held()
            except BaseException:  # Ctrl-C while sending: nothing of the map goes on
                self._cancel()
                raise
        else:
            assert buffersize is not None
            self._total = None
            self._items = spec.items
            self._exhausted = False
            self._size = min(chunksize or math.ceil(buffersize / slots), buffersize)
            self._next_index = 0
            self._unyielded = 0  # items submitted and not yet yielded
            try:
                self._read_ahead()
            except BaseException:
                self._cancel()
                raise

    def _chunk(self, items: list[Any] | range, start: int) -> Job:
        # Encoded once, here: the process that runs it forwards these bytes
        # to its pool, whose items are numbered from the chunk's first.
        mode = chunk_mode(self._spec.mode, len(items), profiled=bool(self._pool._profile_sessions))
        arguments = chunk_arguments(items, 0, collect=self._spec.collect, output=self._output)
        request = encode_call(self._spec.fn, arguments, {}, mode=mode, item_index=start,
                              normalized=self._spec.normalized)
        return self._pool._new_job(request, item_offset=start, item_count=len(items),
                                   collect=self._spec.collect)

    # ------------------------------------------------------------ sending

    def _send_held(self) -> None:
        """Send held chunks while the window has room (any thread).

        One thread at a time runs the loop; a chunk that finishes meanwhile
        (in another thread, or in this one, as a chunk refused at once does)
        only frees its place, which the loop sees on its next turn. So
        nothing recurses, and no lock is held while a chunk is sent."""
        with self._lock:
            if self._sending:
                return
            self._sending = True
        try:
            while True:
                window = _chunking.IN_FLIGHT_PER_SLOT * max(1, self._pool.workers)
                with self._lock:
                    # Cleared in the same hold as the check: a chunk that
                    # finishes after it finds no loop running and sends.
                    # Long chunks wait for a free subinterpreter, unless
                    # none of this map's is in flight: then no callback of
                    # its own would come to send it (another map's or call's
                    # job may hold the slots). A finished chunk's process
                    # counts it off before its callback runs.
                    if self._stopped or not self._held or self._sent_in_flight >= window or (
                            self._long_chunks and self._sent_in_flight > 0
                            and not self._pool._placement.has_free_slot()):
                        self._sending = False
                        return
                    job = self._held.popleft()
                    self._sent_in_flight += 1
                job.future.add_done_callback(functools.partial(self._chunk_finished, job))
                self._pool._start_job(job)
        except BaseException:
            with self._lock:
                self._sending = False
            raise

    def _chunk_finished(self, job: Job, _: object) -> None:
        took = time.monotonic() - job.dispatched
        with self._lock:
            self._sent_in_flight -= 1
            if job.dispatched and took >= _chunking.QUEUE_AHEAD_LIMIT_S:
                self._long_chunks = True
        self._send_held()

    def _read_ahead(self) -> None:
        """With buffersize: read, encode and send chunks until ``buffersize``
        items are ahead of the consumer or the input ends (consumer's thread)."""
        assert self._spec.buffersize is not None
        while not self._exhausted and self._unyielded < self._spec.buffersize:
            size = min(self._size, self._spec.buffersize - self._unyielded)
            chunk = list(itertools.islice(self._items, size))
            if len(chunk) < size:
                self._exhausted = True
                self._total = self._next_index + len(chunk)
            if not chunk:
                return
            job = self._chunk(chunk, self._next_index)
            self._next_index += len(chunk)
            self._unyielded += len(chunk)
            self._jobs.append(job)
            self._pool._start_job(job)

    # ---------------------------------------------------------- collecting

    def results(self) -> MapResults:
        """The results, in order (what map() returns)."""
        return MapResults(self)

    #: A stop cancels the chunks not started; the running ones run to their
    #: end, in interpreters of other processes that read no flag of this one.
    stops_running_chunks = False

    def request_stop(self) -> None:
        """From any thread: the thread collecting the results gets a
        KeyboardInterrupt, as if Ctrl-C had interrupted it, within
        STOP_CHECK_SECONDS, and the chunks not started are cancelled."""
        self._stop_requested = True

    def _values(self, job: Job) -> list[Any]:
        """The chunk's values once it has finished; TimeoutError at the map's
        deadline; KeyboardInterrupt once another thread asked the map to
        stop, looked at before each wait (see MapRun._wait_for)."""
        while True:
            if self._stop_requested:
                raise KeyboardInterrupt
            wait, deadline_reached = next_wait(self._spec.deadline)
            try:
                values: list[Any] = job.future.result(wait)
                return values
            except TimeoutError:
                if job.future.done() or deadline_reached:
                    raise

    def _generate(self) -> Generator[Any]:
        """The results, in order; the generator cancels what is left when
        closed, collected, or ended by an error."""
        try:
            while self._jobs:
                job = self._jobs[0]
                try:
                    values = self._values(job)
                except TimeoutError:
                    if job.future.done():
                        raise
                    assert self._spec.timeout is not None
                    raise self._pool._timeout_error(job, self._spec.timeout, completed=self._done,
                                                    total=self._total) from None
                except RemoteError:
                    yield from job.partial
                    raise
                self._jobs.popleft()
                if self._spec.buffersize is not None:
                    self._unyielded -= job.item_count
                    self._read_ahead()
                # Popped one by one, so that no result stays referenced here
                # after it was yielded.
                values.reverse()
                self._done += len(values)
                yield from map(list.pop, itertools.repeat(values, len(values)))
        finally:
            self._cancel()

    def _cancel(self) -> None:
        with self._lock:
            self._stopped = True
            self._held.clear()
        while self._jobs:
            self._jobs.popleft().future.cancel()


class MapResults(Iterator[Any]):
    """What ClusterPool.map returns: the results in order, as a generator
    gives them, and ``close()``, which cancels the chunks not started even if
    no result was read yet (closing a generator that never started runs
    nothing, so it would cancel nothing)."""

    def __init__(self, run: ClusterMapRun) -> None:
        self._run = run
        self._results = run._generate()

    def __iter__(self) -> MapResults:
        return self

    def __next__(self) -> Any:
        return next(self._results)

    def close(self) -> None:
        self._results.close()
        self._run._cancel()
