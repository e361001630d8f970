"""The dask worker side: one InterpreterPool per dask worker process.

A ``WorkerPlugin`` is dask's public way to give every worker, including those
that join later, the same state: dask runs ``setup(worker)`` on each of them
and ``teardown`` when the plugin is unregistered or the worker closes. (The
pool cannot be dask's executor instead: dask runs its own task wrapper in the
executor, and that imports psutil, which refuses to load in a
subinterpreter.)

Dask tasks (``run_job``) then hand their call to the process's pool from
dask's worker threads. Nothing here raises into dask: outcomes and errors go
back as plain data (see _error_mapping).
"""

from __future__ import annotations

import asyncio
import marshal
import os
import pickle
import socket
import sys
import threading
import time
import types
import warnings
from typing import TYPE_CHECKING, Any

from distributed import WorkerPlugin, get_worker

from interp_rpc import _wire
from interp_rpc._errors import InterpRpcError, PoolClosedError
from interp_rpc._exit_policy import EXIT_TIMEOUT
from interp_rpc._pool import InterpreterPool
from interp_rpc.dask import _error_mapping

if TYPE_CHECKING:
    from collections.abc import Callable

    from distributed import Worker

#: How a job's outcome travels back: ("ok", value) or ("error", description).
Outcome = tuple[str, Any]


class PoolPlugin(WorkerPlugin):
    """Creates the process's InterpreterPool in setup() and closes it in teardown().

    setup() never raises: a pool that fails to start is recorded, reported by
    ``report()``, and turns every job sent here into the same PoolInitError.
    """

    def __init__(self, name: str, workers_per_process: int | None, init: str | None,
                 init_timeout: float | None) -> None:
        self.name = name
        self.workers_per_process = workers_per_process
        self.init = init
        self.init_timeout = init_timeout
        self._reset()

    def _reset(self) -> None:
        self.pool: InterpreterPool | None = None
        self.failure: _error_mapping.Description | None = None
        self.ready = threading.Event()
        # Jobs running in this process: job id -> (target, monotonic start).
        self.running: dict[int, tuple[str, float]] = {}

    def __getstate__(self) -> dict[str, Any]:
        return {"name": self.name, "workers_per_process": self.workers_per_process,
                "init": self.init, "init_timeout": self.init_timeout}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._reset()

    async def setup(self, worker: Worker) -> None:
        # Creating the pool waits for every subinterpreter's init=: off the
        # event loop, so the worker keeps answering the scheduler meanwhile.
        slots = self.workers_per_process or worker.state.nthreads
        try:
            self.pool = await asyncio.to_thread(InterpreterPool, slots, self.init,
                                                self.init_timeout)
        except Exception as exc:
            self.failure = _error_mapping.describe(exc)
        finally:
            self.ready.set()

    async def teardown(self, worker: Worker) -> None:
        # The ClusterPool closed the pool already, unless this worker is
        # shutting down on its own: then queued calls are dropped and running
        # ones get as long as at interpreter exit.
        await asyncio.to_thread(self.close, False, EXIT_TIMEOUT)

    def close(self, wait: bool, timeout: float | None) -> list[str]:
        """Close the pool; describes each call it had to give up on."""
        pool, self.pool = self.pool, None
        if self.failure is None:
            self.failure = _error_mapping.describe(PoolClosedError("the pool is closed"))
        if pool is None:
            return []
        with warnings.catch_warnings():
            # Calls left running are reported to the caller, not logged here.
            warnings.simplefilter("ignore", RuntimeWarning)
            pool.close(wait=wait, timeout=timeout)
        return [f"subinterpreter {w.index} running {w.target!r} for {w.busy_seconds:.1f} s"
                for w in pool.status() if w.state == "busy"]

    def run(self, job: int, target_name: str, request: bytes, buffers: list[Any]) -> Outcome:
        self.ready.wait()
        pool = self.pool
        if pool is None:
            assert self.failure is not None
            return "error", self.failure
        self.running[job] = (target_name, time.monotonic())
        try:
            spec, mode, args, kwargs = _wire.loads(request, buffers)
            target = _local_target(spec)
            if mode == "call":
                return "ok", pool.call(target, *args, **kwargs)
            (items,) = args
            return "ok", list(pool.map(target, *(zip(*items, strict=True)
                                                 if mode == "starchunk" else (items,)),
                                       chunksize=len(items)))
        except InterpRpcError as exc:
            return "error", _error_mapping.describe(exc)
        except Exception as exc:
            return "error", {"kind": "other", "type_name": type(exc).__name__,
                             "message": str(exc)}
        finally:
            del self.running[job]


def _local_target(spec: tuple[str | bytes, ...]) -> Callable[..., Any] | str:
    """The target, as this process's pool takes it: a dotted path, or a
    function defined interactively in the caller, rebuilt from its code."""
    if spec[0] == "path":
        return str(spec[1])
    if spec[0] == "pickled":  # a bound method, sent with its instance
        assert isinstance(spec[1], bytes)
        return pickle.loads(spec[1])  # type: ignore[no-any-return]
    _, code, qualname, defaults = spec
    assert isinstance(code, bytes) and isinstance(qualname, str) and isinstance(defaults, bytes)
    main = sys.modules["__main__"]
    fn = types.FunctionType(marshal.loads(code), main.__dict__, qualname.rpartition(".")[2])
    fn.__qualname__ = qualname
    fn.__module__ = "__main__"
    fn.__defaults__, fn.__kwdefaults__ = pickle.loads(defaults)
    return fn


def _plugin(worker: Worker, name: str) -> PoolPlugin | None:
    plugin = worker.plugins.get(name)
    return plugin if isinstance(plugin, PoolPlugin) else None


def run_job(name: str, job: int, target_name: str, request: bytes,
            buffers: list[Any]) -> Outcome:
    """The dask task of a call or a map chunk."""
    plugin = _plugin(get_worker(), name)
    if plugin is None:
        return "error", _error_mapping.describe(PoolClosedError(
            f"the pool is closed on this dask worker; cannot call {target_name!r}"))
    return plugin.run(job, target_name, request, buffers)


# Functions the caller runs on every worker with Client.run (dask passes the
# worker as ``dask_worker``).

def report(name: str, dask_worker: Worker) -> dict[str, Any]:
    """Where this process is, and whether its pool is ready."""
    plugin = _plugin(dask_worker, name)
    state = ("absent" if plugin is None else "starting" if not plugin.ready.is_set()
             else "failed" if plugin.pool is None else "ready")
    return {"state": state, "host": socket.gethostname(), "pid": os.getpid(),
            "slots": plugin.pool.workers if plugin is not None and plugin.pool else 0,
            "failure": plugin.failure if plugin is not None else None}


def close_pool(name: str, wait: bool, timeout: float | None,
               dask_worker: Worker) -> list[str]:
    plugin = _plugin(dask_worker, name)
    return [] if plugin is None else plugin.close(wait, timeout)


def pool_status(name: str, dask_worker: Worker) -> list[Any]:
    plugin = _plugin(dask_worker, name)
    return [] if plugin is None or plugin.pool is None else plugin.pool.status()


def pool_stats(name: str, dask_worker: Worker) -> Any:
    plugin = _plugin(dask_worker, name)
    return None if plugin is None or plugin.pool is None else plugin.pool.stats()


def pool_records(name: str, after: int, dask_worker: Worker) -> list[Any]:
    plugin = _plugin(dask_worker, name)
    return [] if plugin is None or plugin.pool is None else plugin.pool.call_records(after)


def running_job(name: str, job: int, dask_worker: Worker) -> tuple[int, float] | None:
    """(subinterpreter, seconds) running job ``job``, if it runs here: the
    busy subinterpreter running its target for about as long as the job."""
    plugin = _plugin(dask_worker, name)
    if plugin is None or plugin.pool is None or job not in plugin.running:
        return None
    target, started = plugin.running[job]
    elapsed = time.monotonic() - started
    busy = [w for w in plugin.pool.status()
            if w.state == "busy" and w.target == target and w.busy_seconds <= elapsed + 0.05]
    if not busy:
        return None
    best = max(busy, key=lambda w: w.busy_seconds)
    return best.index, best.busy_seconds
