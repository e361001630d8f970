"""What a finished dask task means for the Job it ran: the plugin's outcome
turned into the job's value or error, named as the caller names workers
and items, and dask's own failures turned into the pool's errors."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from interp_rpc.dask._relayed_errors import relayed
from interp_rpc.errors import (
    CallTimeoutError,
    PoolBrokenError,
    PoolInitError,
    RemoteError,
    WorkerDiedError,
)

if TYPE_CHECKING:
    import distributed

    from interp_rpc.dask._jobs import Job
    from interp_rpc.dask._placement import Process


def settle_finished(job: Job, process: Process, task: distributed.Future) -> PoolInitError | None:
    """Settle ``job`` from the outcome its finished task returned (see
    _plugin.Outcome). Returns the PoolInitError of a process whose pool
    failed after it joined (replaying a definition): no more calls go there."""
    try:
        kind, payload, *partial = task.result()
    except BaseException as exc:
        job.settle(error=PoolBrokenError(
            f"the result of {job.request.name!r} could not be fetched: {exc}"))
        return None
    if kind == "ok":
        if job.collect:  # its failed items, named as the caller names them
            payload = [relayed(value, process, item_offset=job.item_offset)
                       if isinstance(value, RemoteError) else value
                       for value in payload]
        job.settle(payload)
        return None
    if partial:
        job.partial = partial[0]
    error: Any = relayed(payload, process, item_offset=job.item_offset)
    job.settle(error=error)
    return error if isinstance(error, PoolInitError) else None


def task_error(job: Job, process: Process, task: distributed.Future) -> BaseException:
    """The error for a task that dask failed (not the call it ran)."""
    try:
        exc = task.exception()
    except BaseException as fetch_error:
        exc = fetch_error
    name = type(exc).__name__
    if name == "KilledWorker":
        return WorkerDiedError(job.request.name, death(process))
    return PoolBrokenError(f"dask failed the call to {job.request.name!r}: {name}: {exc}")


def death(process: Process) -> str:
    """Why a call died with its process."""
    return (f"dask worker {process.address} (process {process.pid} on {process.host}) "
            "died while the call was on it")


def timeout_error(job: Job, timeout: float, running: Any, *, completed: int | None = None,
                  total: int | None = None) -> CallTimeoutError:
    """The CallTimeoutError of a job whose caller stopped waiting; ``running``
    is its process's answer to the plugin's ``running_job`` (a tuple of the
    subinterpreter running it and for how long), if it answered."""
    process = job.process
    if process is not None and isinstance(running, tuple):
        return CallTimeoutError(job.request.name, timeout, worker=process.worker(running[0]),
                                running_seconds=running[1], completed=completed, total=total)
    return CallTimeoutError(job.request.name, timeout, completed=completed, total=total)
