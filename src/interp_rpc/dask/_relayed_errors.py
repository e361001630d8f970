"""Errors raised by a dask worker process's pool, as the caller names them.

The errors pickle themselves (interp_rpc.errors), so they cross dask as they
are, and a RemoteError arrives as ``RemoteError[Original]``. They were made in
the process, where a worker is that process's subinterpreter and a map's
item is counted from its chunk: here they name the cluster's worker (a
ClusterWorker, which says where it lives) and the map's item, and errors
about the pool itself say which process they came from.
"""

from __future__ import annotations

from interp_rpc.dask._placement import ClusterWorker, Process
from interp_rpc.errors import (
    CallTimeoutError,
    InterpRpcError,
    PoolInitError,
    RemoteError,
    ShareabilityError,
    TargetResolutionError,
    WorkerDiedError,
    WorkerInitFailure,
)


def as_pool_error(error: BaseException) -> InterpRpcError:
    """What a process sends for an error of its own: an InterpRpcError as it
    is, anything else named by its type."""
    if isinstance(error, InterpRpcError):
        return error
    return InterpRpcError(f"{type(error).__name__}: {error}")


def relayed(error: InterpRpcError, process: Process, *, item_offset: int = 0) -> InterpRpcError:
    """``error`` from ``process``, named as the caller names things; a map
    chunk's item indexes are shifted by ``item_offset``, its first item."""
    if isinstance(error, RemoteError):
        return _relayed_remote(error, process, item_offset)
    if isinstance(error, ShareabilityError):
        item = None if error.item_index is None else error.item_index + item_offset
        return ShareabilityError(error.argument_path, error.value_type, error.reason,
                                 item_index=item, tree=error.tree)
    if isinstance(error, CallTimeoutError):
        return CallTimeoutError(error.target, error.timeout,
                                worker=_worker(process, error.worker),
                                running_seconds=error.running_seconds,
                                completed=error.completed, total=error.total)
    if isinstance(error, WorkerDiedError):
        return WorkerDiedError(error.target,
                               f"{error.detail} (in process {process.pid} on {process.host})")
    if isinstance(error, PoolInitError):
        return PoolInitError([relayed_init_failure(f, process) for f in error.failures],
                             init_timeout=error.init_timeout)
    if isinstance(error, TargetResolutionError):
        return error  # it names the target, which is the same everywhere
    # The pool's own state (broken, closed) or an unexpected error: say where.
    error.args = (f"{error} (dask worker {process.address}, process {process.pid} "
                  f"on {process.host})",)
    return error


def relayed_init_failure(failure: WorkerInitFailure, process: Process) -> WorkerInitFailure:
    """One subinterpreter's init failure, named by its place in the cluster."""
    error = None if failure.error is None else _relayed_remote(failure.error, process, 0)
    return WorkerInitFailure(process.worker(failure.worker), timed_out=failure.timed_out,
                             error=error, detail=failure.detail, during=failure.during)


def _relayed_remote(error: RemoteError, process: Process, item_offset: int) -> RemoteError:
    # Its message is made from these fields when it is shown.
    error.worker = _worker(process, error.worker)
    if error.item_index is not None:
        error.item_index += item_offset
    return error


def _worker(process: Process, subinterpreter: int | None) -> ClusterWorker | None:
    return None if subinterpreter is None else process.worker(subinterpreter)
