"""EnginePool: the executor over an engine, as InterpreterPool and
ProcessPool both are.

Everything a pool does above its workers is here once: checking the
constructor's arguments, reading the workers' setup reports, encoding and
queueing calls, futures, maps, runs in every worker, statuses, totals,
records and profiles. Each pool adds its engine (engine_face.PoolEngine),
how a call waits, and how it closes: InterpreterPool's calls block in the
C++ engine with the GIL released; ProcessPool's workers are processes that
it can kill.
"""

from __future__ import annotations

import abc
import sys
import threading
from collections.abc import Callable, Collection, Iterable
from concurrent.futures import Executor, Future
from typing import TYPE_CHECKING, Any, ClassVar, Self

from interp_rpc._pool import replies, targets
from interp_rpc._pool.encoding import EncodedCall, encode_call
from interp_rpc._pool.engine_face import EngineCall, PoolEngine
from interp_rpc._pool.everywhere import EverywhereRun
from interp_rpc._pool.futures import CallFuture
from interp_rpc._pool.map import MapIterator, MapRun
from interp_rpc._pool.validation import (
    available_memory,
    check_init,
    check_timeout,
    check_workers,
    check_workers_fit,
    checked_arguments,
)
from interp_rpc._worker import wire
from interp_rpc.errors import PoolClosedError, PoolInitError, WorkerInitFailure
from interp_rpc.profiling.recorder import ProfileRecorder, ProfileSession
from interp_rpc.records import CallRecord, EngineRecord, PoolStats, WorkerStatus

if TYPE_CHECKING:
    from interp_rpc._pool.contract import Pool

__all__ = ["EnginePool"]


class EnginePool[Call: EngineCall](Executor, metaclass=abc.ABCMeta):
    """A pool whose workers an engine runs; see InterpreterPool and
    ProcessPool for the two kinds.

    ``init`` is source code run once in every worker before it serves calls;
    ``init_timeout`` bounds how long the constructor waits for every worker to
    be ready (None: no limit). ``max_workers``, the Executor spelling of
    ``workers``, takes precedence when given.
    """

    #: The Future that submit() returns.
    _future_type: ClassVar[type[CallFuture]] = CallFuture
    #: How long a pool whose setup failed gives its workers to end.
    _failed_setup_close_timeout: ClassVar[float] = 1.0
    #: How fast a map's chunks grow before the item cost is known (see
    #: ChunkSizer): faster where each chunk costs more to send and reply.
    _chunk_growth: ClassVar[int] = 2
    #: What a worker adds to the memory in use, at the least: a bound under
    #: the measured figure (docs/guide/choosing-a-pool.md), so that only a
    #: count that surely cannot fit is refused.
    _memory_per_worker: ClassVar[int] = 3 * 2**20
    _engine: PoolEngine[Call]

    def __init__(self, workers: int, init: str | None, init_timeout: float | None,
                 max_workers: int | None) -> None:
        name = "workers" if max_workers is None else "max_workers"
        if max_workers is not None:  # the Executor spelling, which wins
            workers = max_workers
        check_workers(name, workers)
        check_workers_fit(name, workers, self._memory_per_worker, available_memory())
        check_init(init)
        check_timeout("init_timeout", init_timeout)
        self._lock = threading.Lock()
        self._closed = False
        self._profiling = ProfileRecorder()
        # What every worker is told as it starts: where to import from, the
        # caller's __main__ (so that its functions resolve there), and init.
        main = targets.main_module_spec()
        if main is not None:
            # A worker imports the caller's script as __mp_main__, so an
            # instance of one of its classes comes back named that way: the
            # alias multiprocessing sets in its parent process loads it here.
            sys.modules.setdefault("__mp_main__", sys.modules["__main__"])
        setup = {"sys_path": list(sys.path), "argv": list(sys.argv), "main": main,
                 "init": init}
        self._engine = self._start_engine(workers, wire.dumps(setup))
        try:
            reports = self._engine.wait_ready(init_timeout)
        except BaseException:  # Ctrl-C in the wait, too
            self._stop(cancel=True, timeout=0)
            raise
        failures = [self._init_failure(r) for r in reports if not r["ok"]]
        if failures:
            self._stop(cancel=True, timeout=self._failed_setup_close_timeout)
            raise PoolInitError(failures, init_timeout=init_timeout)

    @abc.abstractmethod
    def _start_engine(self, workers: int, setup: bytes) -> PoolEngine[Call]:
        """The engine, its workers starting with the ``setup`` request."""

    @staticmethod
    def _init_failure(report: dict[str, Any]) -> WorkerInitFailure:
        index = int(report["index"])
        if not report["finished"]:
            return WorkerInitFailure(index, timed_out=True, error=None)
        kind, reply = report["kind"], report["reply"]
        if kind == wire.SETUP_FAILED:
            return WorkerInitFailure(index, timed_out=False, error=replies.remote_error(
                wire.loads(reply), target="init", worker=index))
        return WorkerInitFailure(index, timed_out=False, error=None,
                                 detail=reply.decode("utf-8", "replace"))

    # ------------------------------------------------------------------ calls

    @abc.abstractmethod
    def call(self, target: Callable[..., Any] | str, /, *args: Any,
             timeout: float | None = None, **kwargs: Any) -> Any:
        """Dispatch ``target(*args, **kwargs)`` and block until it returns."""

    def submit(self, fn: Callable[..., Any] | str, /, *args: Any, **kwargs: Any) -> Future[Any]:
        """Dispatch ``fn(*args, **kwargs)`` without blocking."""
        future = self._future_type(self, fn, args, kwargs)
        future._attach(self._dispatch(fn, args, kwargs, owner=future))
        return future

    def map(self, fn: Callable[..., Any] | str, *iterables: Iterable[Any],
            timeout: float | None = None, chunksize: int | None = None,
            buffersize: int | None = None, errors: str = "raise") -> MapIterator:
        """``fn(item)`` for every item, in parallel: an iterator over the
        results, in order, as ``Executor.map``.

        With several iterables, ``fn(*items)`` for each tuple of items, as the
        builtin ``map``. The work is submitted by the call (all of it, or
        ``buffersize`` items ahead of the consumer, so infinite iterables
        work); ``timeout`` runs from the call and is raised by ``__next__``.
        Items go out in chunks, adaptive unless ``chunksize`` is given. The
        first failing item raises, in order; that, a timeout, or closing the
        iterator cancels the chunks that have not started. With
        ``errors="collect"`` a failing item's RemoteError takes its place among
        the results instead, and the map goes on.
        """
        return self.map_run(fn, iterables, timeout=timeout, chunksize=chunksize,
                            buffersize=buffersize, errors=errors).results()

    def map_run(self, fn: Callable[..., Any] | str, iterables: tuple[Iterable[Any], ...], *,
                timeout: float | None, chunksize: int | None, buffersize: int | None,
                errors: str, output: int | None = None,
                on_start: Callable[[MapRun], None] | None = None) -> MapRun:
        """The run behind map(), begun: its ``results()`` are what map()
        returns. ``output`` names the queue what the workers print is
        relayed into, so a notebook cell shows it under the item that
        printed it; ``on_start``: see the pool contract."""
        return MapRun(self, fn, iterables, timeout=timeout, chunksize=chunksize,
                      buffersize=buffersize, errors=errors, output=output, on_start=on_start)

    def run_everywhere(self, target: Callable[..., Any] | str, args: tuple[Any, ...] = (),
                       kwargs: dict[str, Any] | None = None, *, timeout: float | None = None,
                       workers: Collection[int] | None = None) -> EverywhereRun:
        """Send ``target(*args, **kwargs)`` once to each worker (or each of
        ``workers``), for code that defines things everywhere, as %%parallel
        does. ``wait()`` on the run gives each worker's result or the error it
        stands for; ``timeout`` is a deadline for all of them. A worker that
        replaces one that died later does not run it again."""
        check_timeout("timeout", timeout)
        args, kwargs = checked_arguments(args, kwargs)
        encoded = self._encode(target, args, kwargs)
        chosen = range(self.workers) if workers is None else workers
        return EverywhereRun(self, encoded, target, timeout, chosen)

    def output_destination(self, queue_id: int) -> int:
        """What a request carries so that its workers' output goes into the
        caller's queue ``queue_id``: the id itself, which every worker
        reaches (a subinterpreter directly, a worker process through the
        pool's reader)."""
        return queue_id

    @abc.abstractmethod
    def output_labels(self) -> dict[int, int]:
        """Each worker's index, by the label that the output it relays into
        a notebook cell carries (see notebook/relay.py)."""

    def worker_indices(self) -> list[int]:
        """0 to workers - 1: the indices ``run_everywhere(workers=...)``
        accepts, and that statuses, records and errors name workers by."""
        return list(range(self.workers))

    # -------------------------------------------------------------- lifecycle

    def _stop(self, *, cancel: bool, timeout: float | None) -> list[tuple[int, str, float]]:
        """Close the engine. Returns the workers still running a call when
        ``timeout`` ran out: (index, target or "", seconds running)."""
        with self._lock:
            self._closed = True
        return list(self._engine.close(cancel_pending=cancel, timeout=timeout))

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @abc.abstractmethod
    def close(self, wait: bool = True, timeout: float | None = None) -> None:
        """Stop accepting calls and shut every worker down."""

    @abc.abstractmethod
    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """The Executor spelling of close()."""

    # ---------------------------------------------------------- observability

    @property
    def workers(self) -> int:
        return int(self._engine.workers)

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def broken(self) -> bool:
        return bool(self._engine.broken)

    def status(self) -> list[WorkerStatus]:
        """What every worker is doing now."""
        return [WorkerStatus(index=w["index"], state=w["state"], target=w["target"],
                             item_index=w["item_index"], busy_seconds=w["busy_seconds"],
                             calls_done=w["calls_done"],
                             busy_seconds_total=w["busy_seconds_total"], detail=w["detail"],
                             call_id=w["call_id"] or None)
                for w in self._engine.status()]

    def stats(self) -> PoolStats:
        t = self._engine.totals()
        return PoolStats(calls=t["calls"], items=t["items"], replied=t["replied"],
                         failed=t["failed"], queue_wait_seconds=t["queue_wait_ns"] / 1e9,
                         run_seconds=t["run_ns"] / 1e9, serialize_seconds=t["serialize_ns"] / 1e9,
                         deserialize_seconds=t["deserialize_ns"] / 1e9,
                         result_serialize_seconds=t["result_serialize_ns"] / 1e9)

    def profile(self, functions: bool = False) -> ProfileSession:
        """Profile what the pool runs in a ``with`` block::

            with pool.profile(functions=True) as prof:
                list(pool.map(f, items))
            prof.stats.sort_stats("cumtime").print_stats(10)

        ``prof`` is a Profile: one record per map item or call (``.records``),
        a summary, ``export(path)`` (Chrome trace JSON or pstats) and, in a
        notebook, a timeline. Map items are timed one by one (short ones in
        groups). With ``functions=True`` every worker runs its calls under
        cProfile and ``prof.stats`` merges their stats.
        """
        return ProfileSession(self, self._profiling, functions)

    def call_records(self, after: int = 0) -> list[CallRecord]:
        """Finished requests (calls and map chunks), in the order they
        finished, oldest first.

        The engine keeps the last ``CALL_LOG_CAPACITY`` (16384). ``after`` is a
        ``seq`` seen before: polling with the largest ``seq`` seen so far
        returns every record exactly once.
        """
        return [EngineRecord._make(r).public() for r in self._engine.records(after)]

    # -------------------------------------------------------------- internals

    def _map_stop_flag(self, run: MapRun) -> tuple[bytearray | memoryview, bytearray | int | None]:
        """A map's stop flag: the byte the map sets to stop its running
        chunks before their next item, and what each chunk carries for its
        worker to read it (see chunks.chunk_arguments; None: nothing). Here
        a subinterpreter reads the byte itself, in the caller's memory."""
        flag = bytearray(1)
        return flag, flag

    def _encode(self, target: object, args: tuple[Any, ...], kwargs: dict[str, Any],
                mode: str = "call", item_index: int = -1,
                normalized: tuple[targets.TargetSpec, str] | None = None) -> EncodedCall:
        """The request, encoded (see encoding.encode_call)."""
        return encode_call(target, args, kwargs, mode=mode, item_index=item_index,
                           normalized=normalized, check_open=self._check_open)

    def _check_open(self, name: str) -> None:
        if self._closed:
            raise PoolClosedError(f"the pool is closed; cannot call {name!r}")

    def _dispatch(self, target: object, args: tuple[Any, ...], kwargs: dict[str, Any], *,
                  owner: object = None) -> Call:
        return self._submit(self._encode(target, args, kwargs), owner=owner)

    def _submit(self, encoded: EncodedCall, *, owner: object = None,
                item_index: int = -1, item_count: int = 1, worker: int = -1) -> Call:
        status, handle = self._engine.submit(encoded.name, encoded.data, encoded.buffers,
                                             item_index, item_count, owner,
                                             encoded.submitted_ns, encoded.serialize_ns, worker)
        if handle is None:
            raise replies.refusal(status, encoded.name)
        return handle

    def _submit_many(self, batch: list[tuple[int, int, EncodedCall]]) -> list[Call]:
        """Queue a map's chunks together, all or none: each is (its first
        item's index, its item count, the encoded chunk)."""
        status, handles = self._engine.submit_many([
            (e.name, e.data, e.buffers, start, count, e.submitted_ns, e.serialize_ns)
            for start, count, e in batch])
        if handles is None:
            raise replies.refusal(status, batch[0][2].name)
        return handles

    def _busy_worker(self, call_id: int) -> tuple[int | None, float | None]:
        """(worker, seconds) of the worker running call ``call_id``, if one is."""
        for w in self._engine.status():
            if w["call_id"] == call_id:
                return int(w["index"]), float(w["busy_seconds"])
        return None, None


if TYPE_CHECKING:
    def _keeps_the_contract(pool: EnginePool[Any]) -> Pool:
        return pool
