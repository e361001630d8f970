"""The dask worker side: one InterpreterPool per dask worker process.

A ``WorkerPlugin`` is dask's public way to give every worker, including those
that join later, the same state: dask runs ``setup(worker)`` on each of them
and ``teardown`` when the plugin is unregistered or the worker closes. (The
pool cannot be dask's executor instead: dask runs its own task wrapper in the
executor, and that imports psutil, which refuses to load in a
subinterpreter.)

Dask tasks (``run_job``) then hand their call to the process's pool from
dask's worker threads. Nothing here raises into dask: outcomes and errors go
back as data; errors pickle themselves (see _relayed_errors).

%%parallel cells the ClusterPool remembers (its "definitions") are kept in
the scheduler's metadata store, dask's public place for small shared state,
under ``[pool name, DEFINITIONS]``, numbered in the order they were made. A
process replays the ones it lacks, in order, after its init= and before it
runs a call: in setup() for those made before it joined, and, for one made
while it was joining, before the first job that needs it (every job says how
many definitions it needs).
"""

from __future__ import annotations

import asyncio
import functools
import os
import socket
import threading
import time
import warnings
from typing import TYPE_CHECKING, Any

from distributed import WorkerPlugin, get_worker

from interp_rpc._pool import replies
from interp_rpc._pool.encoding import EncodedCall
from interp_rpc._pool.engine import _core
from interp_rpc._pool.exit_policy import EXIT_TIMEOUT
from interp_rpc._pool.pool import InterpreterPool
from interp_rpc._worker.wire import views_for_transport
from interp_rpc.dask import _profiling
from interp_rpc.dask._cluster_output import Forwarder
from interp_rpc.dask._definitions import DEFINITIONS
from interp_rpc.dask._relayed_errors import as_pool_error
from interp_rpc.errors import (
    CallTimeoutError,
    InterpRpcError,
    PoolBrokenError,
    PoolClosedError,
    PoolInitError,
    RemoteError,
    WorkerInitFailure,
)

if TYPE_CHECKING:
    from collections.abc import Callable

    from distributed import Worker

    from interp_rpc.profiling.recorder import ProfileSession

#: How a job's outcome travels back: ("ok", value), ("error", description),
#: or for a map chunk whose item failed ("error", description, the results
#: of the items before it).
Outcome = tuple[Any, ...]


#: How long a process waits for the scheduler to hand it the definitions.
METADATA_TIMEOUT = 30.0

#: Why a dask worker's subinterpreters keep no failure for post-mortem.
FRAMES_NOT_KEPT = ("it was raised in another process, a dask worker's, whose frames no "
                   "debugging session reaches, so it keeps none")

#: A remembered definition, as the scheduler keeps it (msgpack-friendly):
#: {"id": str, "label": str, "request": bytes, "buffers": [bytes, ...]}.
Definition = dict[str, Any]


class PoolPlugin(WorkerPlugin):
    """Creates the process's InterpreterPool in setup() and closes it in teardown().

    setup() never raises: a pool that fails to start (its init=, or the
    replay of a definition) is recorded, reported by ``report()``, and turns
    every job sent here into the same PoolInitError.
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
        self.slots = 0  # the subinterpreters its pool has, or would have had
        self.failure: InterpRpcError | None = None
        self.ready = threading.Event()
        # Jobs running in this process: job id -> (target, monotonic start).
        self.running: dict[int, tuple[str, float]] = {}
        self.worker: Worker | None = None
        self.loop: asyncio.AbstractEventLoop | None = None  # the dask worker's
        # Ids of the %%parallel runs made here (run directly or replayed),
        # and how many of the pool's definitions this process has.
        self.applied: set[str] = set()
        self.replayed = 0
        self.replay_lock = threading.Lock()
        # The profiles on (ClusterPool.profile()), by token, and while one is
        # on, which job each map chunk's request (local call id) served.
        self.profiles: dict[str, ProfileSession] = {}
        self.chunk_jobs: dict[int, int] = {}

    def __getstate__(self) -> dict[str, Any]:
        return {"name": self.name, "workers_per_process": self.workers_per_process,
                "init": self.init, "init_timeout": self.init_timeout}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._reset()

    async def setup(self, worker: Worker) -> None:
        # Creating the pool waits for every subinterpreter's init=: off the
        # event loop, so the worker keeps answering the scheduler meanwhile.
        self.worker = worker
        self.loop = asyncio.get_running_loop()
        self.slots = slots = self.workers_per_process or worker.state.nthreads
        try:
            self.pool = await asyncio.to_thread(InterpreterPool, slots, self.init,
                                                self.init_timeout)
            await asyncio.to_thread(self.pool.run_everywhere(
                "_interp_rpc_worker.keep_no_failures", (FRAMES_NOT_KEPT,)).wait)
            definitions = await self._definitions()
            await asyncio.to_thread(self._replay, definitions, len(definitions))
        except Exception as exc:
            self.failure = as_pool_error(exc)
            await asyncio.to_thread(self.close, False, EXIT_TIMEOUT)
        finally:
            self.ready.set()

    async def _definitions(self) -> list[Definition]:
        """The pool's definitions, in order, as the scheduler has them now."""
        assert self.worker is not None
        found = await asyncio.wait_for(self.worker.scheduler.get_metadata(
            keys=[self.name, DEFINITIONS], default={}), METADATA_TIMEOUT)
        return [found[str(i)] for i in range(len(found))]

    def _catch_up(self, needed: int) -> None:
        """From a job's thread: replay what a job needs that this process
        lacks (definitions made while it was joining). A failure closes the
        pool, as a failing replay in setup() does."""
        if self.replayed >= needed:
            return
        with self.replay_lock:
            if self.replayed >= needed or self.pool is None:
                return
            assert self.loop is not None
            try:
                definitions = asyncio.run_coroutine_threadsafe(self._definitions(),
                                                               self.loop).result()
                self._replay(definitions, needed)
            except Exception as exc:
                self.failure = as_pool_error(exc)
                self.close(False, EXIT_TIMEOUT)

    def _replay(self, definitions: list[Definition], upto: int) -> None:
        """Run definitions[replayed:upto] not run here yet, in order, in
        every subinterpreter; PoolInitError, naming the cell, if one fails."""
        if len(definitions) < upto:
            raise PoolBrokenError(f"the dask scheduler holds {len(definitions)} of the pool's "
                                  f"{upto} %%parallel definitions")
        pool = self.pool
        assert pool is not None
        for definition in definitions[self.replayed:upto]:
            if definition["id"] not in self.applied:
                label = definition["label"]
                encoded = _received(label, definition["request"], definition["buffers"], False)
                outcomes = pool.run_everywhere_encoded(encoded, timeout=self.init_timeout).wait()
                failures = [failure for index, outcome in outcomes.items()
                            if (failure := _replay_failure(index, outcome, label)) is not None]
                if failures:
                    raise PoolInitError(failures, init_timeout=self.init_timeout)
                self.applied.add(definition["id"])
            self.replayed += 1

    async def teardown(self, worker: Worker) -> None:
        # The ClusterPool closed the pool already, unless this worker is
        # shutting down on its own: then queued calls are dropped and running
        # ones get as long as at interpreter exit.
        await asyncio.to_thread(self.close, False, EXIT_TIMEOUT)

    def close(self, wait: bool, timeout: float | None) -> list[str]:
        """Close the pool; describes each call it had to give up on."""
        pool, self.pool = self.pool, None
        if self.failure is None:
            self.failure = PoolClosedError("the pool is closed")
        if pool is None:
            return []
        with warnings.catch_warnings():
            # Calls left running are reported to the caller, not logged here.
            warnings.simplefilter("ignore", RuntimeWarning)
            pool.close(wait=wait, timeout=timeout)
        return [f"subinterpreter {w.index} running {w.target!r} for {w.busy_seconds:.1f} s"
                for w in pool.status() if w.state == "busy"]

    def _serve(self, job: int, target_name: str, needed: int, buffers: list[Any],
               output: int | None, work: Callable[[InterpreterPool, list[Any]], Outcome]
               ) -> Outcome:
        """``work(pool, buffers)`` for a job, once this process is ready and
        has the definitions the job needs; what it raises becomes an outcome.
        ``output``: the index among ``buffers`` of the destination of what
        the job prints, to forward to the caller (see _cluster_output)."""
        self.ready.wait()
        self._catch_up(needed)
        pool = self.pool
        if pool is None:
            assert self.failure is not None
            return "error", self.failure
        self.running[job] = (target_name, time.monotonic())
        forwarder = None
        try:
            buffers = list(buffers)
            if output is not None:
                assert self.worker is not None
                forwarder = Forwarder(self.worker, self.name, job, pool.output_labels)
                buffers[output] = forwarder.buffer
            return work(pool, buffers)
        except Exception as exc:
            return "error", as_pool_error(exc)
        finally:
            del self.running[job]
            if forwarder is not None:
                forwarder.close()

    def run(self, job: int, target_name: str, request: bytes, buffers: list[Any],
            needed: int, chunk_items: int | None, output: int | None) -> Outcome:
        """A call, or a map chunk of ``chunk_items`` items, as the caller
        encoded it: its bytes go to this process's pool unchanged (nothing is
        unpickled here, in the dask worker's own interpreter)."""
        def call_or_map(pool: InterpreterPool, buffers: list[Any]) -> Outcome:
            encoded = _received(target_name, request, buffers, chunk_items is not None)
            # dask pickles the outcome by its own means: a memoryview result
            # is made to arrive as from a local pool (wire.views_for_transport).
            if chunk_items is None:
                return "ok", views_for_transport(pool.call_encoded(encoded))
            values, failure = pool.map_chunk_encoded(encoded, chunk_items,
                                                     functools.partial(self._note_chunk, job))
            values = [views_for_transport(value) for value in values]
            if failure is not None:
                # A failing item: the chunk's results before it go back too,
                # so the caller yields them before raising, as the local map does.
                return "error", failure, values
            return "ok", values

        return self._serve(job, target_name, needed, buffers, output, call_or_map)

    def _note_chunk(self, job: int, call_id: int) -> None:
        """While a profile is on: the job a map chunk's request serves."""
        if self.profiles:
            self.chunk_jobs[call_id] = job

    def run_everywhere(self, job: int, target_name: str, request: bytes, buffers: list[Any],
                       needed: int, subinterpreters: list[int] | None, timeout: float | None,
                       run_id: str | None, output: int | None) -> Outcome:
        """The call once in each of ``subinterpreters`` (None: all), for
        %%parallel: ("ok", [(subinterpreter, outcome), ...]), each outcome
        ("ok", value) or ("error", description). ``run_id`` names a run in
        every subinterpreter: if the pool remembers it, this process does
        not replay it."""
        def in_each(pool: InterpreterPool, buffers: list[Any]) -> Outcome:
            outcomes = pool.run_everywhere_encoded(
                _received(target_name, request, buffers, False), timeout=timeout,
                workers=subinterpreters).wait()
            if run_id is not None:
                self.applied.add(run_id)
            return "ok", [(index, ("error", as_pool_error(outcome))
                           if isinstance(outcome, BaseException) else ("ok", outcome))
                          for index, outcome in outcomes.items()]

        return self._serve(job, target_name, needed, buffers, output, in_each)

    def start_profile(self, token: str, functions: bool, stale: list[str]) -> str | None:
        """Start profiling this process's pool, after ending the ``stale``
        profiles (their caller was interrupted before it ended them); why it
        could not, if it could not."""
        self.ready.wait()
        for earlier in stale:
            self.stop_profile(earlier, True)
        pool = self.pool
        if pool is None:
            return "its pool is closed"
        session = pool.profile(functions=functions)
        # Listed first: chunks sent from the moment it starts get their job noted.
        self.profiles[token] = session
        try:
            session.__enter__()
        except Exception as exc:
            del self.profiles[token]
            return f"{type(exc).__name__}: {exc}"
        return None

    def stop_profile(self, token: str, failed: bool) -> dict[str, Any] | None:
        """End a profile started here: its records and totals as plain data,
        with this process's clocks read together (see dask._profiling).
        ``failed``: the profiled block raised (stop waiting on busy workers sooner)."""
        session = self.profiles.pop(token, None)
        chunk_jobs = dict(self.chunk_jobs)
        if not self.profiles:
            self.chunk_jobs = {}
        if session is None:
            return None
        session.__exit__(RuntimeError if failed else None, None, None)
        profile = session.profile
        # The requests' log, not the item records: a few values per map
        # chunk, where the records are one object per item (the caller
        # builds them only if they are read).
        log = session.request_log
        assert log is not None
        mono, wall = _profiling.clock_pair()
        return {"log": log, "start_ns": profile.start_ns, "end_ns": profile.end_ns,
                "ran": bool(log.spans()), "notes": list(profile.notes),
                "lost_records": profile.lost_records,
                "item_timing_overhead_ns": profile.item_timing_overhead_ns,
                "function_overhead_ns": profile.function_overhead_ns,
                "worker_stats": dict(profile.worker_stats),
                "chunk_jobs": chunk_jobs, "host": socket.gethostname(),
                "clock": (mono, wall)}


def _received(name: str, request: bytes, buffers: list[Any], is_chunk: bool) -> EncodedCall:
    """A request as the caller encoded it, for this process's pool to run
    (a function of the caller's notebook travels by value; this process's
    __main__ is dask's, not the caller's). It was submitted now, as far as
    this process's queue is concerned; its encoding was the caller's."""
    return EncodedCall(name, request, list(buffers), _core.monotonic_ns(), 0, is_chunk=is_chunk)


def _replay_failure(index: int, outcome: Any, label: str) -> WorkerInitFailure | None:
    """Why replaying ``label`` failed in subinterpreter ``index``, if it did.
    A cell's own error comes back as data (run_cell keeps the output printed
    before it), in its "error" entry."""
    during = f"replaying {label}"
    if isinstance(outcome, CallTimeoutError):
        return WorkerInitFailure(index, timed_out=True, error=None, during=during)
    if isinstance(outcome, RemoteError):
        return WorkerInitFailure(index, timed_out=False, error=outcome, during=during)
    if isinstance(outcome, BaseException):
        return WorkerInitFailure(index, timed_out=False, error=None, during=during,
                                 detail=f"{during} failed: {type(outcome).__name__}: {outcome}")
    if isinstance(outcome, dict) and outcome.get("error") is not None:
        return WorkerInitFailure(index, timed_out=False, during=during, error=replies.remote_error(
            outcome["error"], target=label, worker=index))
    return None


def _plugin(worker: Worker, name: str) -> PoolPlugin | None:
    plugin = worker.plugins.get(name)
    return plugin if isinstance(plugin, PoolPlugin) else None


def run_job(name: str, job: int, target_name: str, request: bytes,
            buffers: list[Any], needed: int, chunk_items: int | None,
            output: int | None) -> Outcome:
    """The dask task of a call, or of a map chunk of ``chunk_items`` items,
    once this process has the first ``needed`` definitions of the pool;
    ``output``: see PoolPlugin._serve."""
    plugin = _plugin(get_worker(), name)
    if plugin is None:
        return "error", PoolClosedError(
            f"the pool is closed on this dask worker; cannot call {target_name!r}")
    return plugin.run(job, target_name, request, buffers, needed, chunk_items, output)


def run_everywhere(name: str, job: int, target_name: str, request: bytes, buffers: list[Any],
                   needed: int, subinterpreters: list[int] | None, timeout: float | None,
                   run_id: str | None, output: int | None) -> Outcome:
    """The dask task of a call run once in several subinterpreters of one process."""
    plugin = _plugin(get_worker(), name)
    if plugin is None:
        return "error", PoolClosedError(
            f"the pool is closed on this dask worker; cannot call {target_name!r}")
    return plugin.run_everywhere(job, target_name, request, buffers, needed, subinterpreters,
                                 timeout, run_id, output)


# Functions the caller runs on every worker with Client.run (dask passes the
# worker as ``dask_worker``).

def report(name: str, dask_worker: Worker) -> dict[str, Any]:
    """Where this process is, and whether its pool is ready."""
    plugin = _plugin(dask_worker, name)
    state = ("absent" if plugin is None else "starting" if not plugin.ready.is_set()
             else "failed" if plugin.pool is None else "ready")
    return {"state": state, "host": socket.gethostname(), "pid": os.getpid(),
            "slots": plugin.slots if plugin is not None else 0,
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


async def profile_start(name: str, token: str, functions: bool, stale: list[str],
                        dask_worker: Worker) -> str | None:
    """Start a profile of this process's pool (off the event loop: starting
    function profilers waits for every subinterpreter)."""
    plugin = _plugin(dask_worker, name)
    if plugin is None:
        return "the pool is closed on this dask worker"
    return await asyncio.to_thread(plugin.start_profile, token, functions, stale)


async def profile_stop(name: str, token: str, failed: bool,
                       dask_worker: Worker) -> dict[str, Any] | None:
    plugin = _plugin(dask_worker, name)
    if plugin is None:
        return None
    return await asyncio.to_thread(plugin.stop_profile, token, failed)


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
