"""interp-rpc's errors, carried from a dask worker process back to the caller.

The errors themselves cannot ride dask's own exception transport: their
constructors take keyword arguments, so pickle cannot rebuild them. A worker
process describes the error as plain data instead (``describe``), and the
caller rebuilds the same error type with the same attributes (``rebuild``),
naming the host, process and subinterpreter where it happened.
"""

from __future__ import annotations

from typing import Any

from interp_rpc._errors import (
    CallTimeoutError,
    InterpRpcError,
    PoolBrokenError,
    PoolClosedError,
    PoolInitError,
    RemoteError,
    ShareabilityError,
    TargetResolutionError,
    WorkerDiedError,
    WorkerInitFailure,
)
from interp_rpc.dask._placement import Process

Description = dict[str, Any]


def _remote(exc: RemoteError) -> Description:
    return {"type_name": exc.remote_type_name, "module": exc.remote_module,
            "message": exc.remote_message, "traceback": exc.remote_traceback,
            "qualname": exc.remote_qualname, "target": exc.target,
            "subinterpreter": exc.worker, "item_index": exc.item_index}


def describe(exc: BaseException) -> Description:
    """What the caller needs to raise ``exc`` again (in a dask worker process)."""
    if isinstance(exc, RemoteError):
        return {"kind": "remote", **_remote(exc)}
    if isinstance(exc, ShareabilityError):
        return {"kind": "shareability", "path": exc.argument_path, "value_type": exc.value_type,
                "reason": exc.reason, "item_index": exc.item_index, "tree": exc.tree}
    if isinstance(exc, TargetResolutionError):
        return {"kind": "target", "message": str(exc), "target": exc.target,
                "failed_part": exc.failed_part}
    if isinstance(exc, CallTimeoutError):
        return {"kind": "timeout", "target": exc.target, "timeout": exc.timeout,
                "subinterpreter": exc.worker, "running_seconds": exc.running_seconds}
    if isinstance(exc, WorkerDiedError):
        return {"kind": "died", "target": exc.target, "detail": exc.detail}
    if isinstance(exc, PoolInitError):
        return {"kind": "init", "init_timeout": exc.init_timeout, "failures": [
            {"subinterpreter": f.worker, "timed_out": f.timed_out, "detail": f.detail,
             "during": f.during, "error": None if f.error is None else _remote(f.error)}
            for f in exc.failures]}
    kind = ("broken" if isinstance(exc, PoolBrokenError)
            else "closed" if isinstance(exc, PoolClosedError) else "other")
    return {"kind": kind, "type_name": type(exc).__name__, "message": str(exc)}


def rebuild(info: Description, process: Process, *, item_offset: int = 0) -> InterpRpcError:
    """The error ``info`` describes, as raised by ``process``; item indexes of a
    map chunk are shifted by ``item_offset``, the chunk's first item."""
    kind = info["kind"]
    if kind == "remote":
        return _rebuild_remote(info, process, item_offset)
    if kind == "shareability":
        item = info["item_index"]
        return ShareabilityError(info["path"], info["value_type"], info["reason"],
                                 item_index=None if item is None else item + item_offset,
                                 tree=info["tree"])
    if kind == "target":
        return TargetResolutionError(info["message"], target=info["target"],
                                     failed_part=info["failed_part"])
    if kind == "timeout":
        sub = info["subinterpreter"]
        return CallTimeoutError(info["target"], info["timeout"],
                                worker=None if sub is None else process.worker(sub),
                                running_seconds=info["running_seconds"])
    if kind == "died":
        return WorkerDiedError(info["target"], f"{info['detail']} (in process {process.pid} "
                                               f"on {process.host})")
    if kind == "init":
        return PoolInitError([init_failure(f, process) for f in info["failures"]],
                             init_timeout=info["init_timeout"])
    where = f" (dask worker {process.address}, process {process.pid} on {process.host})"
    if kind == "broken":
        return PoolBrokenError(info["message"] + where)
    if kind == "closed":
        return PoolClosedError(info["message"] + where)
    return InterpRpcError(f"{info['type_name']}: {info['message']}{where}")


def _rebuild_remote(info: Description, process: Process, item_offset: int) -> RemoteError:
    sub, item = info["subinterpreter"], info["item_index"]
    return RemoteError(remote_type_name=info["type_name"], remote_module=info["module"],
                       remote_message=info["message"], remote_traceback=info["traceback"],
                       remote_qualname=info["qualname"], target=info["target"],
                       worker=None if sub is None else process.worker(sub),
                       item_index=None if item is None else item + item_offset)


def init_failure(info: Description, process: Process) -> WorkerInitFailure:
    """One subinterpreter's init failure, named by its place in the cluster."""
    error = info["error"]
    return WorkerInitFailure(process.worker(info["subinterpreter"]),
                             timed_out=info["timed_out"], detail=info["detail"],
                             during=info["during"],
                             error=None if error is None else _rebuild_remote(error, process, 0))
