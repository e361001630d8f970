"""ClusterPool: the InterpreterPool API over a dask.distributed cluster."""

from __future__ import annotations

import concurrent.futures
import itertools
import threading
import time
import uuid
import warnings
from collections.abc import Callable, Collection, Iterable
from concurrent.futures import CancelledError, Executor, Future
from typing import TYPE_CHECKING, Any, Self

from interp_rpc._pool.encoding import EncodedCall, encode_call
from interp_rpc._pool.validation import (
    check_count,
    check_init,
    check_timeout,
    checked_arguments,
)
from interp_rpc.dask import _asking, _cluster_map, _profiling
from interp_rpc.dask._asking import ANSWER_TIMEOUT
from interp_rpc.dask._cluster_output import (
    LAST_OUTPUT_GRACE,
    OutputDestination,
    OutputReceiver,
    destination_in,
)
from interp_rpc.dask._cluster_reports import (
    RecordLog,
    cluster_status,
    summed_stats,
    take_in_report,
    warn_if_gave_up,
)
from interp_rpc.dask._connect import client_for, unregister_plugin
from interp_rpc.dask._definitions import Definitions
from interp_rpc.dask._jobs import EverywhereRun, Job
from interp_rpc.dask._open_pools import open_pools, register_exit_handler
from interp_rpc.dask._placement import ClusterWorker, Placement, Process
from interp_rpc.dask._task_outcomes import death, settle_finished, task_error, timeout_error
from interp_rpc.errors import (
    CallTimeoutError,
    InterpRpcError,
    PoolBrokenError,
    PoolClosedError,
    PoolInitError,
    WorkerDiedError,
    WorkerInitFailure,
)
from interp_rpc.records import CallRecord, PoolStats, WorkerStatus

if TYPE_CHECKING:
    import distributed

#: How often the watcher looks for dask workers that died or joined.
WATCH_INTERVAL = 0.2

#: The same wait for where a call that timed out runs: it only adds detail to
#: the CallTimeoutError, so it must not add much to the caller's timeout.
WHERE_TIMEOUT = 1.0

class ClusterPool(Executor):
    """InterpreterPool's API, served by every process of a dask.distributed cluster.

    Each dask worker process hosts one InterpreterPool (through a
    WorkerPlugin, so workers that join later get one too); its subinterpreters
    run the calls. ``cluster`` is a scheduler address, a distributed.Client,
    or None to start a LocalCluster of ``processes`` processes (one core each
    by default) that closes with the pool.

    ``workers_per_process`` is the number of subinterpreters in each process
    (default: the dask worker's thread count). ``init`` and ``init_timeout``
    are InterpreterPool's, applied in every process; a process that joins
    later also replays the %%parallel cells the pool remembers (see
    EverywhereRun.remember), each bounded by ``init_timeout``. ``retries`` is how many
    times a call whose dask worker process died is run again on another
    process; with 0, it fails with WorkerDiedError. ``connect_timeout`` bounds
    the wait for a scheduler given by address (None: dask's configured
    ``distributed.comm.timeouts.connect``); a scheduler that cannot be reached
    raises ConnectionError, a malformed address ValueError.
    """

    def __init__(self, cluster: str | distributed.Client | None = None, *,
                 workers_per_process: int | None = None, init: str | None = None,
                 init_timeout: float | None = 30.0, retries: int = 0,
                 processes: int | None = None, connect_timeout: float | None = None) -> None:
        check_count("workers_per_process", workers_per_process, 1)
        check_count("retries", retries, 0)
        check_count("processes", processes, 1)
        check_timeout("init_timeout", init_timeout)
        check_timeout("connect_timeout", connect_timeout)
        check_init(init)
        if processes is not None and cluster is not None:
            raise ValueError("processes= is for the LocalCluster started when cluster is None")
        import distributed

        from interp_rpc.dask import _plugin

        register_exit_handler()

        self._plugin_module = _plugin
        self._retries = retries
        self._lock = threading.Lock()
        self._closed = False
        self._broken: str | None = None
        self._jobs: dict[int, Job] = {}
        self._job_ids = itertools.count()
        self._placement = Placement()
        self._failed: dict[str, list[WorkerInitFailure]] = {}  # address -> why
        self._records = RecordLog()
        self._profile_sessions: set[_profiling.ClusterProfileSession] = set()
        # Profiles whose end a Ctrl-C may have kept from the processes: the
        # next profile ends them there first.
        self._stale_profiles: list[str] = []
        self._client, self._owned_cluster = client_for(cluster, processes, connect_timeout)
        self._owns_client = not isinstance(cluster, distributed.Client)
        self._name = f"interp-rpc-{uuid.uuid4().hex[:12]}"
        self._init_timeout = init_timeout
        self._output = OutputReceiver(self._client, self._name)
        self._definitions = Definitions(self._client, self._name)
        try:
            self._start(_plugin.PoolPlugin(self._name, workers_per_process, init, init_timeout))
        except BaseException:
            self._shut_down_client()
            raise
        self._stop_watching = threading.Event()
        self._watcher = threading.Thread(target=self._watch, name="interp-rpc-cluster-watch",
                                         daemon=True)
        self._watcher.start()
        open_pools.add(self)

    def _start(self, plugin: Any) -> None:
        # Dask awaits setup() on every current worker before this returns.
        self._client.register_plugin(plugin, name=self._name)
        reports = self._client.run(self._plugin_module.report, self._name)
        failures: list[WorkerInitFailure] = []
        for address, report in sorted(reports.items()):
            failures += self._learn(address, report)
        if failures:
            self._unregister()
            raise PoolInitError(failures, init_timeout=self._init_timeout)
        if not self._placement.live():
            self._unregister()
            raise PoolInitError([], init_timeout=self._init_timeout)

    def _learn(self, address: str, report: dict[str, Any]) -> list[WorkerInitFailure]:
        """Take in a worker's report; the init failures it describes."""
        found = take_in_report(self._placement, address, report)
        if found:
            self._failed[address] = found
        return found

    def _unregister(self, wait: float = ANSWER_TIMEOUT) -> None:
        unregister_plugin(self._client, self._name, wait)

    def _known_addresses(self) -> list[str]:
        """The dask workers this pool knows and that are not gone: those
        serving it, and those whose pool failed to start."""
        return sorted({p.address for p in self._placement.every() if not p.gone}
                      | set(self._failed))

    def _ask(self, function: Callable[..., Any], *args: Any,
             addresses: Collection[str] | None = None,
             timeout: float | None = ANSWER_TIMEOUT) -> dict[str, Any]:
        """``function(pool name, *args)`` run by each live process (or the
        dask workers at ``addresses``), each asked on its own (see _asking)."""
        chosen = [p.address for p in self._placement.live()] if addresses is None \
            else list(addresses)
        return _asking.ask_each(self._client, chosen, function, self._name, *args,
                                timeout=timeout)

    def _shut_down_client(self) -> None:
        if self._owns_client:
            self._client.close(timeout=ANSWER_TIMEOUT)
        if self._owned_cluster is not None:
            self._owned_cluster.close(timeout=ANSWER_TIMEOUT)

    # ------------------------------------------------------------------ calls

    def submit(self, fn: Callable[..., Any] | str, /, *args: Any, **kwargs: Any) -> Future[Any]:
        """Dispatch ``fn(*args, **kwargs)`` to the cluster without blocking."""
        request = encode_call(fn, args, kwargs, check_open=self._check_open)
        return self._run(request, item_offset=0).future

    def call(self, target: Callable[..., Any] | str, /, *args: Any,
             timeout: float | None = None, **kwargs: Any) -> Any:
        """Dispatch ``target(*args, **kwargs)`` and block until it returns.

        With ``timeout``, raise CallTimeoutError when it has not returned in
        time; the call itself goes on running in its subinterpreter.
        """
        check_timeout("timeout", timeout)
        job = self._run(encode_call(target, args, kwargs, check_open=self._check_open),
                        item_offset=0)
        try:
            return job.future.result(timeout)
        except TimeoutError:
            if job.future.done():
                raise
            assert timeout is not None
            raise self._timeout_error(job, timeout) from None

    def map(self, fn: Callable[..., Any] | str, *iterables: Iterable[Any],
            timeout: float | None = None, chunksize: int | None = None,
            buffersize: int | None = None, errors: str = "raise") -> _cluster_map.MapResults:
        """``fn(item)`` for every item, across the cluster: an iterator over
        the results, in order, as ``Executor.map`` and ``InterpreterPool.map``.

        With several iterables, ``fn(*items)`` for each tuple of items. The
        call submits the work (all of it, or ``buffersize`` items ahead of the
        consumer, so infinite iterables work); ``timeout`` runs from the call
        and is raised by ``__next__``. Items go out in chunks, a few per
        subinterpreter of the cluster (``chunksize`` overrides), each chunk
        one dask task run by one subinterpreter, sent to the least loaded
        process. The first failing item raises, in order, after the results
        before it; that, a timeout, or closing the iterator cancels the
        chunks that have not started. With ``errors="collect"`` a failing
        item's RemoteError takes its place among the results instead, and the
        map goes on.
        """
        return self.map_run(fn, iterables, timeout=timeout, chunksize=chunksize,
                            buffersize=buffersize, errors=errors).results()

    def map_run(self, fn: Callable[..., Any] | str, iterables: tuple[Iterable[Any], ...], *,
                timeout: float | None, chunksize: int | None, buffersize: int | None,
                errors: str, output: object = None,
                on_start: Callable[[_cluster_map.ClusterMapRun], None] | None = None
                ) -> _cluster_map.ClusterMapRun:
        """The run behind map(), begun; ``output``: where what the items
        print goes (see output_destination); ``on_start``: see the pool
        contract."""
        return _cluster_map.ClusterMapRun(self, fn, iterables, timeout=timeout,
                                          chunksize=chunksize, buffersize=buffersize,
                                          errors=errors, output=output, on_start=on_start)

    def output_destination(self, queue_id: int) -> OutputDestination:
        """What a request carries so that what its workers print reaches the
        caller's cross-interpreter queue ``queue_id`` (see _cluster_output)."""
        return OutputDestination(queue_id)

    def output_labels(self) -> dict[int, int]:
        """Each worker's index, by the label of the output it relays: the
        receiver labels it with the index itself."""
        return {int(w): int(w) for p in self._placement.every() for w in map(p.worker,
                                                                            range(p.slots))}

    def profile(self, functions: bool = False) -> _profiling.ClusterProfileSession:
        """Profile what the cluster runs in a ``with`` block, as
        ``InterpreterPool.profile()`` does::

            with pool.profile() as prof:
                pool.map(f, items)

        Each process times its own subinterpreters' work; at the end of the
        block the caller fetches each process's records (one request per
        process) and ``prof`` merges them: one lane per subinterpreter of the
        cluster (``prof.lane_groups`` says which process holds which lanes),
        times on this process's clock (how precisely: see
        ``interp_rpc.dask._profiling``). With ``functions=True``,
        ``prof.stats`` merges the function stats of every subinterpreter of
        every process. A process that dies meanwhile leaves a note in the
        profile, not an error.
        """
        return _profiling.ClusterProfileSession(self, functions)

    def run_everywhere(self, target: Callable[..., Any] | str, args: tuple[Any, ...] = (),
                       kwargs: dict[str, Any] | None = None, *, timeout: float | None = None,
                       workers: Collection[int] | None = None) -> EverywhereRun:
        """Send ``target(*args, **kwargs)`` once to every subinterpreter of
        every live process (or each of ``workers``, cluster indices), as
        InterpreterPool.run_everywhere does. Processes that join later do not
        run it unless the run is remembered (EverywhereRun.remember, which
        %%parallel uses)."""
        check_timeout("timeout", timeout)
        args, kwargs = checked_arguments(args, kwargs)
        request = encode_call(target, args, kwargs, check_open=self._check_open)
        # Replayed later, where nobody shows what it prints.
        replayable = request if destination_in(request) is None else encode_call(
            target, tuple(None if isinstance(a, OutputDestination) else a for a in args),
            kwargs or {})
        wanted = None if workers is None else set(workers)
        run_id = uuid.uuid4().hex if workers is None else None
        jobs: dict[Process, Job] = {}
        for process in self._placement.live():
            chosen = [i for i in range(process.slots)
                      if wanted is None or process.worker(i) in wanted]
            if not chosen:
                continue
            job = self._new_job(request, pinned=process, everywhere=(chosen, timeout, run_id))
            jobs[process] = job
        for job in jobs.values():
            self._start_job(job)
        return EverywhereRun(self, replayable, run_id, jobs, timeout)

    def _check_open(self, name: str) -> None:
        if self._closed:
            raise PoolClosedError(f"the pool is closed; cannot call {name!r}")
        if self._broken is not None:
            raise PoolBrokenError(f"{self._broken}; cannot call {name!r}")

    def _run(self, request: EncodedCall, *, item_offset: int) -> Job:
        self._check_open(request.name)
        job = self._new_job(request, item_offset=item_offset)
        self._start_job(job)
        return job

    def _new_job(self, request: EncodedCall, *, item_offset: int = 0,
                 item_count: int = 1, collect: bool = False, pinned: Process | None = None,
                 everywhere: tuple[list[int] | None, float | None, str | None] | None = None
                 ) -> Job:
        """A job not sent yet (a map keeps chunks back until there is room)."""
        job = Job(next(self._job_ids), request, item_offset,
                  0 if pinned is not None else self._retries, item_count=item_count,
                  collect=collect, pinned=pinned, everywhere=everywhere)
        self._output.attach(job)
        return job

    def _start_job(self, job: Job) -> None:
        """Send the job: close() waits for it from now on."""
        if job.future.done():
            return  # cancelled before it was sent (a map closed meanwhile)
        with self._lock:
            closed = self._closed
            if not closed:
                self._jobs[job.id] = job
        if closed:
            # Outside the lock: the future's callbacks may send more jobs.
            job.settle(error=PoolClosedError(
                f"the pool is closed; cannot call {job.request.name!r}"))
            return
        job.future.add_done_callback(lambda _: self._forget(job))
        if job.everywhere is None:
            for session in list(self._profile_sessions):
                session.chunk_sent(job.id, job.item_offset)
        self._dispatch(job, exclude=frozenset())

    def _forget(self, job: Job) -> None:
        with self._lock:
            self._jobs.pop(job.id, None)
        self._output.forget(job)

    def _dispatch(self, job: Job, exclude: frozenset[str]) -> None:
        """Pin the job to the least loaded process, as a dask task that may
        run on that process only: if it dies, dask cannot run the call again
        elsewhere behind our back (a call that crashes its process would crash
        the next one too); the watcher decides, from ``retries``."""
        if job.pinned is not None:
            process = job.pinned if self._placement.acquire_this(job.pinned) else None
            why = f"its dask worker process {job.pinned.address} is gone"
        else:
            process = self._placement.acquire(exclude)
            why = "no dask worker process of the cluster is left to run it"
        if process is None:
            job.settle(error=WorkerDiedError(job.request.name, why))
            return
        request = job.request
        job.process = process
        job.dispatched = time.monotonic()
        function, extra = ((self._plugin_module.run_job,
                            (job.item_count if request.is_chunk else None, job.output_buffer))
                           if job.everywhere is None
                           else (self._plugin_module.run_everywhere,
                                 (*job.everywhere, job.output_buffer)))
        # The definitions remembered so far: the process replays those it
        # lacks before running the job.
        needed = len(self._definitions)
        try:
            task = self._client.submit(
                function, self._name, job.id, request.name, request.data,
                request.buffers, needed, *extra,
                key=f"interp-rpc-{request.name}-{uuid.uuid4().hex}",
                workers=[process.address], allow_other_workers=False, pure=False)
        except Exception as exc:
            self._placement.release(process)
            job.settle(error=exc if isinstance(exc, InterpRpcError) else PoolBrokenError(
                f"dask refused the call to {request.name!r}: {exc}"))
            return
        except BaseException:
            # Ctrl-C in the caller's thread, while dask took the task: it is
            # the caller's to see now, not a failure of this job to show
            # once its turn comes (a map of blocked items waited for them).
            self._placement.release(process)
            job.settle(error=CancelledError())
            raise
        job.task = task
        task.add_done_callback(lambda finished: self._settle(job, process, finished))

    def _settle(self, job: Job, process: Process, task: distributed.Future) -> None:
        """Runs in dask's callback thread when a job's task is done."""
        self._placement.release(process)
        if job.task is not task or job.future.done():
            return  # an attempt the watcher gave up on, or a cancelled call
        if task.status == "finished":
            if job.output is not None:
                # Its output's last piece went out before its result.
                job.output.complete.wait(LAST_OUTPUT_GRACE)
            failed_pool = settle_finished(job, process, task)
            if failed_pool is not None:
                self._failed.setdefault(process.address, failed_pool.failures)
                self._placement.mark_gone(process.address)
        elif task.status == "cancelled":
            job.settle(error=self._lost_error(job))
        else:
            job.settle(error=task_error(job, process, task))

    def _lost_error(self, job: Job) -> InterpRpcError:
        """A task dask cancelled, not us: the client lost its scheduler (it
        then cancels every task at once), or someone cancelled it."""
        if self._client.status != "running":
            self._broken = f"lost the connection to the dask scheduler at {self._address()}"
            return PoolBrokenError(f"{self._broken} while {job.request.name!r} was in flight; "
                                   "it may or may not have run")
        return PoolBrokenError(f"dask cancelled the call to {job.request.name!r}")

    def _timeout_error(self, job: Job, timeout: float, *, completed: int | None = None,
                       total: int | None = None) -> CallTimeoutError:
        process = job.process
        running = None if process is None else self._ask(
            self._plugin_module.running_job, job.id, addresses=[process.address],
            timeout=WHERE_TIMEOUT).get(process.address)
        return timeout_error(job, timeout, running, completed=completed, total=total)

    # ------------------------------------------------------------ the watcher

    def _watch(self) -> None:
        """Finds dask worker processes that died (their calls fail, or run
        again elsewhere) and those that joined (they get calls once their pool
        is ready)."""
        while not self._stop_watching.wait(WATCH_INTERVAL):
            scheduler = self._client.scheduler
            if self._client.status != "running" or scheduler is None:
                continue  # dask cancels every task at once when the scheduler is lost
            try:
                identity = self._client.sync(scheduler.identity, callback_timeout=ANSWER_TIMEOUT)
            except Exception:
                continue
            listed = set(identity.get("workers", {}))
            for process in self._placement.live():
                if process.address not in listed and self._placement.mark_gone(process.address):
                    self._on_death(process)
            newcomers = sorted(listed - set(self._known_addresses()))
            if newcomers:
                self._welcome(newcomers)

    def _welcome(self, addresses: list[str]) -> None:
        for address, report in self._ask(self._plugin_module.report,
                                         addresses=addresses).items():
            if isinstance(report, dict):
                failures = self._learn(address, report)
                for failure in failures:
                    warnings.warn(f"interp-rpc: a dask worker that joined cannot serve the pool: "
                                  f"{failure}", RuntimeWarning, stacklevel=1)

    def _on_death(self, process: Process) -> None:
        with self._lock:
            jobs = [job for job in self._jobs.values() if job.process is process]
        for job in jobs:
            task, job.task = job.task, None  # its callback is ignored from now on
            if job.future.done():
                continue
            if task is not None:
                task.cancel(reason="interp-rpc-worker-died")
            if job.retries_left > 0:
                job.retries_left -= 1
                self._dispatch(job, exclude=frozenset({process.address}))
            else:
                job.settle(error=WorkerDiedError(job.request.name, death(process)))

    # -------------------------------------------------------------- lifecycle

    def close(self, wait: bool = True, timeout: float | None = None) -> None:
        """Stop accepting calls, close every process's pool, and the cluster
        if the pool started it.

        ``wait=True`` lets calls already submitted finish first; ``wait=False``
        cancels those that have not started. Running calls cannot be stopped:
        after ``timeout`` seconds (None: no limit), close() warns with a
        RuntimeWarning naming each call still running, and returns.
        """
        check_timeout("timeout", timeout)
        with self._lock:
            if self._closed:
                return
            self._closed = True
            jobs = list(self._jobs.values())
        open_pools.discard(self)
        deadline = None if timeout is None else time.monotonic() + timeout
        if wait:
            concurrent.futures.wait([job.future for job in jobs], timeout=timeout)
        else:
            for job in jobs:
                job.future.cancel()
        self._stop_watching.set()
        self._watcher.join()
        self._output.close()
        stuck: list[str] = []
        silent: list[str] = []
        answer_wait: float | None = None
        if self._client.status == "running":
            remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
            # A process that does not answer within the timeout is left to
            # its own: the scheduler forgets the plugin anyway (below), and
            # the process closes its pool when it leaves the cluster.
            answer_wait = None if remaining is None else remaining + ANSWER_TIMEOUT
            answers = self._ask(self._plugin_module.close_pool, wait, remaining,
                                addresses=self._known_addresses(), timeout=answer_wait)
            stuck = [f"{address}: {call}" for address, calls in sorted(answers.items())
                     if isinstance(calls, list) for call in calls]
            silent = [address for address, answer in sorted(answers.items())
                      if isinstance(answer, TimeoutError)]
            # With a worker silent, dask's wait for every worker's teardown
            # would last until the scheduler removes it.
            self._unregister(wait=0.0 if silent else ANSWER_TIMEOUT)
            self._definitions.drop()
        self._shut_down_client()
        warn_if_gave_up(stuck, timeout, silent, answer_wait)

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """The Executor spelling of close()."""
        self.close(wait=not cancel_futures, timeout=None if wait else 0)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # ---------------------------------------------------------- observability

    @property
    def client(self) -> distributed.Client:
        return self._client

    @property
    def workers(self) -> int:
        """Subinterpreters serving the pool, across every live process."""
        return self._placement.slots()

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def broken(self) -> bool:
        return self._broken is not None

    def processes(self) -> list[tuple[str, str, int, int]]:
        """(dask worker address, host, pid, subinterpreters) of each live process."""
        return [(p.address, p.host, p.pid, p.slots) for p in self._placement.live()]

    def subinterpreters(self) -> list[ClusterWorker]:
        """Every subinterpreter of the live processes: the ints that statuses,
        call records and errors name, each saying where it lives."""
        return [p.worker(i) for p in self._placement.live() for i in range(p.slots)]

    def worker_indices(self) -> list[int]:
        """Each live subinterpreter's index across the cluster: what
        ``run_everywhere(workers=...)`` accepts, and what statuses, records
        and errors name workers by."""
        return [int(w) for w in self.subinterpreters()]

    def _ask_every_process(self, function: Callable[..., Any], *args: Any) -> dict[str, Any]:
        return {} if self._closed else self._ask(function, *args)

    def status(self) -> list[WorkerStatus]:
        """What every subinterpreter of the cluster is doing now; those of a
        process that died, or whose pool failed to start there (its init=, or
        replaying a %%parallel cell), are listed as "dead", saying why."""
        answers = self._ask_every_process(self._plugin_module.pool_status)
        return cluster_status(self._placement.every(), self._failed, answers)

    def stats(self) -> PoolStats:
        """Totals of every live process's pool."""
        return summed_stats(self._ask_every_process(self._plugin_module.pool_stats).values())

    def call_records(self, after: int = 0) -> list[CallRecord]:
        """Finished requests of every process, oldest first, numbered (``seq``)
        in the order this pool collected them: polling with the largest
        ``seq`` seen returns every record once. A map chunk is one request.
        Times are each host's ``time.monotonic_ns()``: comparable between
        processes of one host only."""
        def fetch(process: Process, cursor: int) -> Any:
            return self._ask(self._plugin_module.pool_records, cursor,
                             addresses=[process.address]).get(process.address)

        return self._records.collect(self._placement.live(), fetch, after)

    def _address(self) -> str:
        return str(getattr(self._client.scheduler, "address", None) or "?")

    def __repr__(self) -> str:
        state = "closed" if self._closed else "broken" if self.broken else "open"
        return (f"<ClusterPool {self._address()} processes={len(self._placement.live())} "
                f"workers={self.workers} {state}>")


__all__ = ["ClusterPool", "ClusterWorker"]


if TYPE_CHECKING:
    from interp_rpc._pool.contract import Pool

    _KEEPS_THE_CONTRACT: type[Pool] = ClusterPool
