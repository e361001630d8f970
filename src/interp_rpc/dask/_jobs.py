"""The work a ClusterPool has sent: one Job per call, map chunk or run in
every subinterpreter of one process, the caller's Future of it, and the
runs of a call in every subinterpreter (EverywhereRun, for %%parallel)."""

from __future__ import annotations

import concurrent.futures
import threading
import time
from concurrent.futures import CancelledError, Future
from typing import TYPE_CHECKING, Any

from interp_rpc._pool.encoding import EncodedCall
from interp_rpc._pool.everywhere import Interrupted
from interp_rpc.dask._asking import ANSWER_TIMEOUT
from interp_rpc.dask._placement import Process
from interp_rpc.dask._relayed_errors import relayed
from interp_rpc.errors import CallTimeoutError

if TYPE_CHECKING:
    import distributed

    from interp_rpc.dask._cluster_output import JobOutput
    from interp_rpc.dask._cluster_pool import ClusterPool


class Job:
    """One call or map chunk (or, for %%parallel, one call in every
    subinterpreter of one process), and the dask task currently running it."""

    def __init__(self, ident: int, request: EncodedCall, item_offset: int,
                 retries: int, *, item_count: int = 1, collect: bool = False,
                 pinned: Process | None = None,
                 everywhere: tuple[list[int] | None, float | None, str | None] | None = None
                 ) -> None:
        self.id = ident
        self.request = request
        self.item_offset = item_offset
        self.item_count = item_count
        # A map chunk whose failing items are collected among its results.
        self.collect = collect
        self.retries_left = retries
        # A job for one process only (never run again elsewhere), and what
        # run_everywhere needs: (subinterpreters, timeout, run id).
        self.pinned = pinned
        self.everywhere = everywhere
        self.future = JobFuture(self)
        self.process: Process | None = None
        self.task: distributed.Future | None = None
        self.dispatched = 0.0  # monotonic
        # A map chunk whose item failed: the results of the items before it.
        self.partial: list[Any] = []
        # A job whose workers' output goes to the caller: where it goes, and
        # which of the request's buffers says so (see _cluster_output).
        self.output: JobOutput | None = None
        self.output_buffer: int | None = None
        self.lock = threading.Lock()

    def settle(self, value: Any = None, error: BaseException | None = None) -> bool:
        """Give the job its outcome, once; False if it already had one."""
        with self.lock:
            if self.future.done():
                return False
            if isinstance(error, CancelledError):
                self.future.cancel_now()
            elif error is not None:
                self.future.set_exception(error)
            else:
                self.future.set_result(value)
            return True


class JobFuture(Future[Any]):
    """The caller's Future of a job. cancel() withdraws a call that has not
    started; a call already running in a subinterpreter runs to its end, but
    the future is cancelled either way, as dask cancels."""

    def __init__(self, job: Job) -> None:
        super().__init__()
        self._job = job

    def cancel_now(self) -> None:
        super().cancel()
        # As executors do: concurrent.futures.wait() counts a cancelled
        # future as done only once its waiters were told.
        self.set_running_or_notify_cancel()

    def cancel(self) -> bool:
        if self.done():
            return False
        # Detached first: dask settles a task it cancels through the same
        # callback as a finished one, which must not win the race.
        task, self._job.task = self._job.task, None
        cancelled = self._job.settle(error=CancelledError())
        if task is not None:
            task.cancel(reason="interp-rpc-cancel")
        return cancelled


class EverywhereRun:
    """One call sent to several subinterpreters of each of several processes."""

    def __init__(self, pool: ClusterPool, request: EncodedCall, run_id: str | None,
                 jobs: dict[Process, Job], timeout: float | None) -> None:
        self.name = request.name
        self.request = request
        self.run_id = run_id  # None: run on chosen subinterpreters only
        self.jobs = jobs
        self.timeout = timeout
        self.started = time.monotonic()
        self._pool = pool

    def remember(self, label: str) -> None:
        """Replay this call, in order after those remembered before it, in
        every process that joins the cluster later, after its init= and
        before it takes a call. For a run that succeeded in every
        subinterpreter (the caller judges), and was sent to all of them: a
        run on chosen subinterpreters cannot be replayed. ``label`` names it
        if its replay fails, e.g. "the %%parallel cell In[4]"."""
        if self.run_id is None:
            raise ValueError("a run on chosen subinterpreters is not replayed elsewhere")
        self._pool._definitions.remember(self.run_id, label, self.request)

    def wait(self) -> dict[int, Any | BaseException]:
        """Every subinterpreter's outcome once all have one; a process that
        does not answer within ``timeout`` (plus the time one answer takes)
        counts as still running it."""
        backstop = None if self.timeout is None else \
            max(0.0, self.started + self.timeout + ANSWER_TIMEOUT - time.monotonic())
        concurrent.futures.wait([job.future for job in self.jobs.values()], timeout=backstop)
        return self.outcomes()

    def outcomes(self, finished_only: bool = False) -> dict[int, Any | BaseException]:
        """Outcomes so far, in worker order; unless ``finished_only``, those
        of processes still running count as timed out."""
        # Keyed by ClusterWorker, an int that says where it lives.
        found: dict[int, Any | BaseException] = {}
        for process, job in self.jobs.items():
            assert job.everywhere is not None
            chosen = job.everywhere[0] or []
            if not job.future.done():
                if not finished_only:
                    found.update((process.worker(i), CallTimeoutError(
                        self.name, self.timeout or 0.0, worker=process.worker(i)))
                        for i in chosen)
                continue
            error = None if job.future.cancelled() else job.future.exception()
            if job.future.cancelled() or error is not None:
                found.update((process.worker(i), error or CancelledError()) for i in chosen)
                continue
            for index, (kind, value) in job.future.result():
                found[process.worker(index)] = (value if kind == "ok" else
                                                relayed(value, process))
        return dict(sorted(found.items()))

    def busy(self) -> list[int]:
        """Subinterpreters of the processes that have not answered yet."""
        return sorted(process.worker(i) for process, job in self.jobs.items()
                      if not job.future.done()
                      for i in (job.everywhere[0] if job.everywhere else None) or [])

    def cancel(self) -> None:
        """Withdraw the calls that have not started (running ones go on)."""
        for job in self.jobs.values():
            job.future.cancel()

    def interrupt(self) -> Interrupted:
        """On Ctrl-C: withdraw the calls that have not started. A process
        that has not answered cannot say whether its call started there, so
        its subinterpreters are reported as running it (one that had started
        goes on to its end)."""
        state = Interrupted(finished=self.outcomes(finished_only=True), running=self.busy())
        self.cancel()
        return state
