"""ProcessPool: the pool contract over worker processes.

Everything but the workers is the local pool's: requests are encoded by
_pool/encoding, replies mean what _pool/replies says, maps are _pool/map's
MapRun, futures _pool/futures', runs in every worker _pool/everywhere's,
profiles profiling/'s, and each worker process runs _worker/main.py as a
subinterpreter does. What differs is the engine (engine.py), and what only
a process can promise: a crash fails only the calls its worker held, and a
call past its timeout can be stopped (``kill_on_timeout=True``).
"""

from __future__ import annotations

import atexit
import sys
import threading
import weakref
from collections.abc import Callable, Collection, Iterable
from concurrent.futures import Executor, Future
from types import FrameType
from typing import TYPE_CHECKING, Any, Self, cast

from interp_rpc._pool import replies, targets
from interp_rpc._pool.encoding import EncodedCall, encode_call
from interp_rpc._pool.engine import _core
from interp_rpc._pool.everywhere import EverywhereRun
from interp_rpc._pool.map import MapIterator, MapRun
from interp_rpc._pool.pool import InterpreterPool
from interp_rpc._pool.validation import check_init, check_timeout, check_workers
from interp_rpc._worker import wire
from interp_rpc.errors import CallTimeoutError, PoolClosedError, PoolInitError
from interp_rpc.process.engine import ProcessEngine
from interp_rpc.process.futures import ProcessCallFuture
from interp_rpc.process.handle import ProcessCallHandle
from interp_rpc.process.map import StoppingMapRun
from interp_rpc.profiling.recorder import ProfileRecorder, ProfileSession
from interp_rpc.records import CallRecord, EngineRecord, PoolStats, WorkerStatus

__all__ = ["ProcessPool"]

#: At exit, how long pools still open give their running calls before
#: their workers are terminated.
EXIT_TIMEOUT = 1.0

_open_pools: weakref.WeakSet[ProcessPool] = weakref.WeakSet()


class ScriptImportStopped(BaseException):
    """Raised where a script without a main guard creates a ProcessPool at
    top level, when a worker imports that script (as ``__mp_main__``) to find
    what it defines: the import stops there, and the worker keeps what the
    script defined so far (``script_namespace``). Without it, each worker
    would start a pool of its own, and run the script's work again."""

    def __init__(self, namespace: dict[str, Any]) -> None:
        super().__init__("a worker imports the script only up to its ProcessPool")
        self.script_namespace = namespace


def _stop_a_worker_importing_the_script(caller: FrameType) -> None:
    if ("_interp_rpc_process_framing" in sys.modules  # this is a worker process
            and caller.f_code.co_name == "<module>"
            and caller.f_globals.get("__name__") == "__mp_main__"):
        raise ScriptImportStopped(dict(caller.f_globals))


class ProcessPool(Executor):
    """A warm pool of worker processes, each a fresh ``python3.14``.

    The same calls, maps, errors, records and profiles as InterpreterPool,
    for work a subinterpreter cannot do: C extensions that refuse to load in
    one (numpy), code that may crash its process, calls that must be
    stoppable. ``init`` is source code run once in every worker (and in each
    replacement); ``init_timeout`` bounds how long the constructor waits for
    every worker to be ready. With ``kill_on_timeout=True``, a call that
    runs past its ``timeout=`` has its worker killed and replaced.
    """

    def __init__(self, workers: int = 4, init: str | None = None,
                 init_timeout: float | None = 30.0, *, kill_on_timeout: bool = False,
                 max_workers: int | None = None) -> None:
        if max_workers is not None:  # the Executor spelling, which wins
            workers = check_workers("max_workers", max_workers)
        else:
            check_workers("workers", workers)
        check_init(init)
        check_timeout("init_timeout", init_timeout)
        if not isinstance(kill_on_timeout, bool):
            raise TypeError(f"kill_on_timeout must be True or False, not {kill_on_timeout!r}")
        _stop_a_worker_importing_the_script(sys._getframe(1))
        self._kill_on_timeout = kill_on_timeout
        self._lock = threading.Lock()
        self._closed = False
        self._profiling = ProfileRecorder()
        setup = {"sys_path": list(sys.path), "main": targets.main_module_spec(), "init": init}
        self._engine = ProcessEngine(workers, wire.dumps(setup))
        _open_pools.add(self)
        try:
            reports = self._engine.wait_ready(init_timeout)
        except BaseException:
            self._stop(cancel=True, timeout=0)
            raise
        failures = [InterpreterPool._init_failure(r) for r in reports if not r["ok"]]
        if failures:
            self._stop(cancel=True, timeout=0)
            raise PoolInitError(failures, init_timeout=init_timeout)

    # ------------------------------------------------------------------ calls

    def submit(self, fn: Callable[..., Any] | str, /, *args: Any, **kwargs: Any) -> Future[Any]:
        """Dispatch ``fn(*args, **kwargs)`` without blocking."""
        future = ProcessCallFuture(self._as_local(), fn, args, kwargs)
        # A handle of the engine's face (see handle.py), which CallFuture drives.
        future._attach(cast("_core.CallHandle", self._dispatch(fn, args, kwargs, owner=future)))
        return future

    def call(self, target: Callable[..., Any] | str, /, *args: Any,
             timeout: float | None = None, **kwargs: Any) -> Any:
        """Dispatch ``target(*args, **kwargs)`` and block until it returns.

        With ``timeout``, raise CallTimeoutError when it has not returned in
        time. The call goes on in its worker, unless the pool was made with
        ``kill_on_timeout=True``: then its worker is killed and replaced.
        """
        check_timeout("timeout", timeout)
        handle = self._dispatch(target, args, kwargs)
        if not handle.wait(timeout):
            assert timeout is not None
            raise self._timed_out(handle, timeout)
        status, kind, reply, worker = handle.take()
        return replies.reply_value(status, kind, reply, worker, target, args, kwargs)

    def _timed_out(self, handle: ProcessCallHandle, timeout: float,
                   **progress: int | None) -> CallTimeoutError:
        """The error for a call past its timeout, stopping it first when the
        pool stops such calls (one still queued is withdrawn)."""
        self._profiling.gave_up(handle.id)
        busy_worker, seconds = self._busy_worker(handle.id)
        stopped = False
        if self._kill_on_timeout:
            stopped = self._engine.cancel(handle) or self._engine.stop_call(
                handle, f"its call ran past its timeout of {timeout:g} s, so it was stopped")
        return CallTimeoutError(handle.target, timeout, worker=busy_worker,
                                running_seconds=seconds, stopped=stopped, **progress)

    def map(self, fn: Callable[..., Any] | str, *iterables: Iterable[Any],
            timeout: float | None = None, chunksize: int | None = None,
            buffersize: int | None = None, errors: str = "raise") -> MapIterator:
        """``fn(item)`` for every item, in parallel, as InterpreterPool.map:
        an iterator over the results, in order, with ``close()``."""
        return self._map_run(fn, iterables, timeout=timeout, chunksize=chunksize,
                             buffersize=buffersize, errors=errors).results()

    def _map_run(self, fn: Callable[..., Any] | str, iterables: tuple[Iterable[Any], ...], *,
                 timeout: float | None, chunksize: int | None, buffersize: int | None,
                 errors: str) -> MapRun:
        """The local pool's MapRun, or one that stops its running chunks at
        its timeout when this pool stops calls."""
        stopping = self._kill_on_timeout and timeout is not None
        run = (StoppingMapRun if stopping else MapRun)(
            self._as_local(), fn, iterables, timeout=timeout, chunksize=chunksize,
            buffersize=buffersize, errors=errors)
        if isinstance(run, StoppingMapRun):
            run.process_pool = self
        return run

    def run_everywhere(self, target: Callable[..., Any] | str, args: tuple[Any, ...] = (),
                       kwargs: dict[str, Any] | None = None, *, timeout: float | None = None,
                       workers: Collection[int] | None = None) -> EverywhereRun:
        """Send ``target(*args, **kwargs)`` once to each worker (or each of
        ``workers``). A worker's replacement does not run it again."""
        check_timeout("timeout", timeout)
        encoded = self._encode(target, args, kwargs or {})
        chosen = range(self.workers) if workers is None else workers
        return EverywhereRun(self._as_local(), encoded, target, timeout, chosen)

    def worker_indices(self) -> list[int]:
        return list(range(self.workers))

    # -------------------------------------------------------------- lifecycle

    def close(self, wait: bool = True, timeout: float | None = None) -> None:
        """Stop accepting calls and shut every worker process down.

        ``wait=True`` lets queued calls finish first; ``wait=False`` cancels
        them. After ``timeout`` seconds (None: no limit), the calls still
        queued are cancelled and workers still running one are terminated:
        those calls fail with WorkerDiedError. No worker process outlives
        the pool.
        """
        check_timeout("timeout", timeout)
        self._stop(cancel=not wait, timeout=timeout)

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """The Executor spelling of close(): ``wait=False`` returns at once,
        leaving the workers to finish queued calls and exit on their own."""
        if wait:
            self._stop(cancel=cancel_futures, timeout=None)
            return
        with self._lock:
            self._closed = True
        threading.Thread(target=self._stop, kwargs={"cancel": cancel_futures, "timeout": None},
                         name="interp-rpc process pool shutdown", daemon=True).start()

    def _stop(self, *, cancel: bool, timeout: float | None) -> list[tuple[int, str, float]]:
        with self._lock:
            self._closed = True
        left = self._engine.close(cancel_pending=cancel, timeout=timeout)
        _open_pools.discard(self)
        return left

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # ---------------------------------------------------------- observability

    @property
    def workers(self) -> int:
        return self._engine.workers

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def broken(self) -> bool:
        return self._engine.broken

    def worker_pids(self) -> list[int]:
        """The process ids of the workers running now (they change when a
        worker is replaced)."""
        return self._engine.pids()

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
        """Profile what the pool runs in a ``with`` block, as
        InterpreterPool.profile() does."""
        return ProfileSession(self._as_local(), self._profiling, functions)

    def call_records(self, after: int = 0) -> list[CallRecord]:
        """Finished requests (calls and map chunks), oldest first, after
        record ``after`` (a CallRecord.seq); the last 16,384 are kept."""
        return [EngineRecord._make(r).public() for r in self._engine.records(after)]

    # -------------------------------------------------------------- internals

    def _as_local(self) -> InterpreterPool:
        # The shared parts (map, futures, everywhere, profiling) are typed
        # against InterpreterPool; this pool has every attribute they use,
        # with an engine and handles of the same face.
        return cast("InterpreterPool", self)

    def _encode(self, target: object, args: tuple[Any, ...], kwargs: dict[str, Any],
                mode: str = "call", item_index: int = -1,
                normalized: tuple[targets.TargetSpec, str] | None = None) -> EncodedCall:
        return encode_call(target, args, kwargs, mode=mode, item_index=item_index,
                           normalized=normalized, check_open=self._check_open)

    def _check_open(self, name: str) -> None:
        if self._closed:
            raise PoolClosedError(f"the pool is closed; cannot call {name!r}")

    def _dispatch(self, target: object, args: tuple[Any, ...], kwargs: dict[str, Any], *,
                  owner: object = None) -> ProcessCallHandle:
        return self._submit(self._encode(target, args, kwargs), owner=owner)

    def _submit(self, encoded: EncodedCall, *, owner: object = None,
                item_index: int = -1, item_count: int = 1, worker: int = -1
                ) -> ProcessCallHandle:
        status, handle = self._engine.submit(encoded.name, encoded.data, encoded.buffers,
                                             item_index, item_count, owner,
                                             encoded.submitted_ns, encoded.serialize_ns, worker)
        if handle is None:
            raise replies.refusal(status, encoded.name)
        return handle

    def _submit_many(self, batch: list[tuple[int, int, EncodedCall]]
                     ) -> list[ProcessCallHandle]:
        status, handles = self._engine.submit_many([
            (e.name, e.data, e.buffers, start, count, e.submitted_ns, e.serialize_ns)
            for start, count, e in batch])
        if handles is None:
            raise replies.refusal(status, batch[0][2].name)
        return handles

    def _busy_worker(self, call_id: int) -> tuple[int | None, float | None]:
        for w in self._engine.status():
            if w["call_id"] == call_id:
                return int(w["index"]), float(w["busy_seconds"])
        return None, None


@atexit.register
def _close_open_pools() -> None:
    """Pools left open at exit: their workers get EXIT_TIMEOUT to finish
    running calls, then are terminated, so exit never hangs on them."""
    for pool in list(_open_pools):
        pool._stop(cancel=True, timeout=EXIT_TIMEOUT)


if TYPE_CHECKING:
    from interp_rpc._pool.contract import Pool

    _KEEPS_THE_CONTRACT: type[Pool] = ProcessPool
