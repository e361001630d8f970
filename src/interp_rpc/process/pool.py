"""ProcessPool: the pool contract over worker processes.

Everything above the workers is _pool/engine_pool.EnginePool's, as it is
InterpreterPool's: encoding, replies, maps, futures, runs in every worker,
statuses and profiles; and each worker process runs _worker/main.py as a
subinterpreter does. What differs is the engine (engine.py), and what only
a process can promise: a crash fails only the calls its worker held, and a
call past its timeout can be stopped (``kill_on_timeout=True``).
"""

from __future__ import annotations

import atexit
import sys
import threading
import weakref
from collections.abc import Callable, Iterable
from types import FrameType
from typing import TYPE_CHECKING, Any

from interp_rpc._pool import replies
from interp_rpc._pool.engine_pool import EnginePool
from interp_rpc._pool.map import MapRun
from interp_rpc._pool.validation import check_timeout
from interp_rpc.errors import CallTimeoutError
from interp_rpc.process.engine import ProcessEngine
from interp_rpc.process.futures import ProcessCallFuture
from interp_rpc.process.handle import ProcessCallHandle
from interp_rpc.process.map import ProcessMapRun, StoppingMapRun

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


class ProcessPool(EnginePool[ProcessCallHandle]):
    """A warm pool of worker processes, each forked from the worker template:
    a ``python3.14`` that has loaded the worker code (see process/spawn.py).

    The same calls, maps, errors, records and profiles as InterpreterPool,
    for work a subinterpreter cannot do: C extensions that refuse to load in
    one (numpy), code that may crash its process, calls that must be
    stoppable. ``init`` is source code run once in every worker (and in each
    replacement); ``init_timeout`` bounds how long the constructor waits for
    every worker to be ready. With ``kill_on_timeout=True``, a call that
    runs past its ``timeout=`` has its worker killed and replaced.
    """

    _future_type = ProcessCallFuture
    # Workers whose setup failed are of no use: end them at once.
    _failed_setup_close_timeout = 0.0
    # Each chunk costs a process a wake-up, a read and a reply: a map of
    # tiny items reaches its full chunks in four chunks rather than eleven.
    _chunk_growth = 8
    # A python3.14 process of its own (6.7 MiB measured when each worker was
    # started anew; forked from the template, it shares some of that).
    _memory_per_worker = 6 * 2**20
    _engine: ProcessEngine

    def __init__(self, workers: int = 4, init: str | None = None,
                 init_timeout: float | None = 30.0, *, kill_on_timeout: bool = False,
                 max_workers: int | None = None) -> None:
        if not isinstance(kill_on_timeout, bool):
            raise TypeError(f"kill_on_timeout must be True or False, not {kill_on_timeout!r}")
        _stop_a_worker_importing_the_script(sys._getframe(1))
        self._kill_on_timeout = kill_on_timeout
        super().__init__(workers, init, init_timeout, max_workers)

    def _start_engine(self, workers: int, setup: bytes) -> ProcessEngine:
        engine = ProcessEngine(workers, setup)
        _open_pools.add(self)  # from now on, exit closes it (_close_open_pools)
        return engine

    def _map_stop_flag(self, run: MapRun) -> tuple[bytearray | memoryview, bytearray | int | None]:
        """The map's byte of the stop board, which every worker process maps;
        a chunk carries its index. Given back when the map goes. With every
        byte taken, the map has a flag of its own that no worker reads."""
        board = self._engine.stop_board
        taken = board.take()
        if taken is None:
            return bytearray(1), None
        index, flag = taken
        weakref.finalize(run, board.give_back, index)
        return flag, index

    # ------------------------------------------------------------------ calls

    def call(self, target: Callable[..., Any] | str, /, *args: Any,
             timeout: float | None = None, **kwargs: Any) -> Any:
        """Dispatch ``target(*args, **kwargs)`` and block until it returns.

        With ``timeout``, raise CallTimeoutError when it has not returned in
        time. The call goes on in its worker, unless the pool was made with
        ``kill_on_timeout=True``: then its worker is killed and replaced.
        """
        check_timeout("timeout", timeout)
        encoded = self._encode(target, args, kwargs)
        refused, handle = self._engine.submit(
            encoded.name, encoded.data, encoded.buffers, submitted_ns=encoded.submitted_ns,
            serialize_ns=encoded.serialize_ns, read_here=True)
        if handle is None:
            raise replies.refusal(refused, encoded.name)
        if not self._engine.wait_reply(handle, timeout):
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

    def map_run(self, fn: Callable[..., Any] | str, iterables: tuple[Iterable[Any], ...], *,
                timeout: float | None, chunksize: int | None, buffersize: int | None,
                errors: str, output: int | None = None,
                on_start: Callable[[MapRun], None] | None = None) -> MapRun:
        """The local pool's MapRun, whose timeout error says whether the calls
        were stopped; one that stops its running chunks at its timeout when
        this pool stops calls."""
        stopping = self._kill_on_timeout and timeout is not None
        return (StoppingMapRun if stopping else ProcessMapRun)(
            self, fn, iterables, timeout=timeout, chunksize=chunksize,
            buffersize=buffersize, errors=errors, output=output, on_start=on_start)

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
        left = super()._stop(cancel=cancel, timeout=timeout)
        _open_pools.discard(self)
        return left

    # ---------------------------------------------------------- observability

    def output_labels(self) -> dict[int, int]:
        """Each worker's index, by the label of the output it relays: the
        engine's reader labels it with the index itself, which outlasts the
        worker's process."""
        return {index: index for index in range(self.workers)}

    def worker_pids(self) -> list[int]:
        """The process ids of the workers running now (they change when a
        worker is replaced)."""
        return self._engine.pids()

    def __repr__(self) -> str:
        state = "closed" if self._closed else "broken" if self.broken else "open"
        return f"<ProcessPool workers={self.workers} {state}>"


@atexit.register
def _close_open_pools() -> None:
    """Pools left open at exit: their workers get EXIT_TIMEOUT to finish
    running calls, then are terminated, so exit never hangs on them."""
    for pool in list(_open_pools):
        pool._stop(cancel=True, timeout=EXIT_TIMEOUT)


if TYPE_CHECKING:
    from interp_rpc._pool.contract import Pool

    _KEEPS_THE_CONTRACT: type[Pool] = ProcessPool
