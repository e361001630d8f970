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
import os
import socket
import threading
import time
import warnings
from typing import TYPE_CHECKING, Any

from distributed import WorkerPlugin, get_worker

from interp_rpc import _targets, _wire
from interp_rpc._errors import InterpRpcError, PoolClosedError, RemoteError
from interp_rpc._exit_policy import EXIT_TIMEOUT
from interp_rpc._pool import InterpreterPool
from interp_rpc.dask import _error_mapping

if TYPE_CHECKING:
    from distributed import Worker

#: How a job's outcome travels back: ("ok", value), ("error", description),
#: or for a map chunk whose item failed ("error", description, the results
#: of the items before it).
Outcome = tuple[Any, ...]


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
            target = _local_target(spec, target_name)
            if mode == "call":
                return "ok", pool.call(target, *args, **kwargs)
            (items,) = args
            iterables = tuple(zip(*items, strict=True)) if mode == "starchunk" else (items,)
            return "ok", pool._map(target, iterables, chunksize=len(items))
        except RemoteError as exc:
            # A failing map item: the chunk's results before it go back too,
            # so the caller yields them before raising, as the local map does.
            done = [] if exc.partial_results is None or exc.item_index is None \
                else exc.partial_results[:exc.item_index]
            return "error", _error_mapping.describe(exc), done
        except InterpRpcError as exc:
            return "error", _error_mapping.describe(exc)
        except Exception as exc:
            return "error", {"kind": "other", "type_name": type(exc).__name__,
                             "message": str(exc)}
        finally:
            del self.running[job]


    def run_everywhere(self, job: int, target_name: str, request: bytes, buffers: list[Any],
                       subinterpreters: list[int] | None, timeout: float | None
                       ) -> Outcome:
        """The call once in each of ``subinterpreters`` (None: all), for
        %%parallel: ("ok", [(subinterpreter, outcome), ...]), each outcome
        ("ok", value) or ("error", description)."""
        self.ready.wait()
        pool = self.pool
        if pool is None:
            assert self.failure is not None
            return "error", self.failure
        self.running[job] = (target_name, time.monotonic())
        try:
            spec, _, args, kwargs = _wire.loads(request, buffers)
            chosen = list(range(pool.workers)) if subinterpreters is None else subinterpreters
            outcomes = pool._on_every_worker(_local_target(spec, target_name), args, kwargs,
                                             timeout, workers=chosen)
        except InterpRpcError as exc:
            return "error", _error_mapping.describe(exc)
        except Exception as exc:
            return "error", {"kind": "other", "type_name": type(exc).__name__,
                             "message": str(exc)}
        finally:
            del self.running[job]
        return "ok", [(index, ("error", _error_mapping.describe(outcome))
                       if isinstance(outcome, BaseException) else ("ok", outcome))
                      for index, outcome in zip(chosen, outcomes, strict=True)]


def _local_target(spec: _targets.TargetSpec, name: str) -> Any:
    """The target as the caller encoded it: this process's pool sends it on
    unchanged (a function of the caller's notebook travels by value; this
    process's __main__ is dask's, not the caller's). Typed Any: the pool's
    signature lists what users pass, not this internal form."""
    return _targets.Normalized(spec, name)


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


def run_everywhere(name: str, job: int, target_name: str, request: bytes, buffers: list[Any],
                   subinterpreters: list[int] | None, timeout: float | None) -> Outcome:
    """The dask task of a call run once in several subinterpreters of one process."""
    plugin = _plugin(get_worker(), name)
    if plugin is None:
        return "error", _error_mapping.describe(PoolClosedError(
            f"the pool is closed on this dask worker; cannot call {target_name!r}"))
    return plugin.run_everywhere(job, target_name, request, buffers, subinterpreters, timeout)


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
