"""Reply mapping: what an engine reply, or a request that could not be
encoded, means for the caller (a value, or the error to raise)."""

from __future__ import annotations

import types
from concurrent.futures import CancelledError
from typing import Any

from interp_rpc._pool import remote_classes, targets
from interp_rpc._pool.engine import _core
from interp_rpc._worker import wire
from interp_rpc.errors import (
    InterpRpcError,
    PoolBrokenError,
    PoolClosedError,
    RemoteError,
    ShareabilityError,
    TargetResolutionError,
    WorkerDiedError,
    refusal_fix,
    refused_module,
)


def reply_value(status: int, kind: int, reply: bytes, worker: int, target: object,
                args: tuple[Any, ...], kwargs: dict[str, Any],
                chunk_start: int | None = None) -> Any:
    """The call's return value, or the error it stands for, raised.

    For a map chunk (``chunk_start`` given) the value is the worker's
    ``(results, index of the failed item or -1, its pickled error)``.
    """
    if status == _core.STATUS_REPLIED and kind == wire.RETURNED:
        try:
            return wire.loads(reply)
        except Exception as exc:
            raise unloadable_result_error(exc) from None
    name = targets.describe(target)
    if status == _core.STATUS_CANCELLED:
        raise CancelledError()
    if status == _core.STATUS_WORKER_DIED:
        raise WorkerDiedError(name, reply.decode("utf-8", "replace"))
    if status == _core.STATUS_POOL_BROKEN:
        raise PoolBrokenError(f"every worker of the pool has died; call to {name!r} "
                              "never ran")
    if kind == wire.RAISED:
        raise remote_error(wire.loads(reply), target=name, worker=worker,
                           item_index=chunk_start)
    if kind == wire.RESULT_UNSHAREABLE:
        culprit = wire.loads(reply)
        item = None
        if chunk_start is not None:
            item = chunk_start + int(culprit.get("item_offset", 0))
        raise ShareabilityError(culprit["path"], culprit["value_type"], culprit["reason"],
                                item_index=item, tree=culprit.get("levels"))
    if kind == wire.TARGET_UNRESOLVED:
        info = wire.loads(reply)
        message = info["message"]
        module = refused_module(f"{message}\n{info.get('error', {}).get('traceback', '')}")
        if module is not None:  # what failed and the fix first, the library's text after
            message = f"{refusal_fix(module)}\n\n{message}"
        raise TargetResolutionError(message, target=name, failed_part=info["failed_part"])
    if kind == wire.ARGUMENTS_UNLOADABLE:
        raise unloadable_argument_error(wire.loads(reply), target, args, kwargs)
    raise InterpRpcError(f"internal error in the worker running {name!r}: "
                         f"{reply.decode('utf-8', 'replace')}")


def remote_error(info: dict[str, Any], *, target: str, worker: int | None,
                 item_index: int | None = None) -> RemoteError:
    """The RemoteError for a worker's describe_exception() of what it raised
    (also an instance of the original class when the caller has it; for an
    exception group, with a RemoteError for each of its exceptions)."""
    exceptions = [remote_error(sub, target=target, worker=worker, item_index=item_index)
                  for sub in info.get("exceptions", ())]
    error = remote_classes.remote_error(
        remote_type_name=info["type_name"], remote_module=info["module"],
        remote_message=info["message"], remote_traceback=info["traceback"],
        remote_qualname=info.get("qualname"), target=target, worker=worker,
        item_index=item_index, contents=info.get("contents"), exceptions=exceptions or None)
    error.post_mortem = info.get("post_mortem")
    return error


def unloadable_result_error(exc: Exception) -> ShareabilityError:
    """A result that the worker pickled but that does not load here: most
    often an instance of a class the workers have and this interpreter lacks
    (defined by a %%parallel cell, by init=, or in a module only they import)."""
    owner, name = getattr(exc, "obj", None), getattr(exc, "name", None)
    if isinstance(exc, AttributeError) and isinstance(owner, types.ModuleType) and name:
        cls = f"{owner.__name__}.{name}"
        if owner.__name__ == "__main__":
            fix = ("the workers' __main__ defines it (a %%parallel cell, init= or the script "
                   "did) but this one does not: run its definition here too, or move it "
                   "into a module that both import")
        else:
            fix = (f"this interpreter's {owner.__name__!r} has no {name!r}: the workers' "
                   "copy of that module differs from this one")
        return ShareabilityError("return value", cls, f"it holds an instance of {cls}, and "
                                 f"{fix}")
    if isinstance(exc, ModuleNotFoundError) and exc.name:
        return ShareabilityError("return value", f"{exc.name}.*", f"it needs module "
                                 f"{exc.name!r}, which the workers import and this "
                                 "interpreter cannot: make it importable here too")
    return ShareabilityError("return value", "unknown", f"it could not be loaded here: {exc}")


def refusal(status: str | int, name: str) -> InterpRpcError:
    """The error for a call the engine would not queue."""
    if status in ("closed", _core.STATUS_CLOSED):
        return PoolClosedError(f"the pool is closed; cannot call {name!r}")
    return PoolBrokenError(f"every worker of the pool has died; cannot call {name!r}")


def argument_error(target: object, args: tuple[Any, ...], kwargs: dict[str, Any],
                   mode: str, item_index: int) -> ShareabilityError:
    """The request could not be encoded: find the argument (or map item) at fault."""
    calls: list[tuple[int | None, tuple[Any, ...], dict[str, Any]]]
    calls = [(None, args, kwargs)] if mode == "call" else [
        (item_index + offset, tuple(item) if mode.startswith("starchunk") else (item,), {})
        for offset, item in enumerate(args[0])]
    for item, item_args, item_kwargs in calls:
        labels = targets.argument_labels(target, item_args, item_kwargs)
        for position, (label, value) in enumerate(labels):
            if wire.is_buffer_argument(value):
                # Buffers cross their own way (pickle alone refuses memoryviews).
                problem = wire.buffer_problem(value)
                if problem is None:
                    continue
                root = ("arguments", [name for name, _ in labels], position)
                return ShareabilityError(label, type(value).__name__, problem,
                                         item_index=item, tree=[root])
            culprit = wire.find_culprit(value, label)
            if culprit is not None:
                root = ("arguments", [name for name, _ in labels], position)
                return ShareabilityError(culprit.path, culprit.value_type, culprit.reason,
                                         item_index=item, tree=[root, *culprit.levels])
    return ShareabilityError("the arguments", "tuple", "pickling the request failed")


def unloadable_argument_error(error: dict[str, str], target: object, args: tuple[Any, ...],
                              kwargs: dict[str, Any]) -> ShareabilityError:
    """The worker could not unpickle the arguments: find the value whose
    class (or function) the worker cannot import."""
    if "advice" in error:  # the worker could not import the caller's script
        for module in ("__main__", "__mp_main__"):
            for label, value in targets.argument_labels(target, args, kwargs):
                culprit = wire.find_culprit(value, label, wire.refers_to(module, None))
                if culprit is not None:
                    return ShareabilityError(culprit.path, culprit.value_type, error["advice"])
        return ShareabilityError("an argument", "unknown", error["advice"])
    message = f"{error['type_name']}: {error['message']}"
    missing = wire.unresolvable_reference(error["message"])
    if missing is not None:
        module, qualname = missing
        what = f"{module}.{qualname}" if qualname else f"module {module!r}"
        reason = f"the worker cannot import {what}: {message}"
        for label, value in targets.argument_labels(target, args, kwargs):
            culprit = wire.find_culprit(value, label, wire.refers_to(module, qualname))
            if culprit is not None:
                return ShareabilityError(culprit.path, culprit.value_type, reason)
        return ShareabilityError("an argument", "unknown", reason)
    return ShareabilityError("the arguments", "unknown",
                             f"the worker could not load them: {message}")
