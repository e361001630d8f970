"""Re-running a failed call in the caller's own interpreter, under pdb: the
way to debug a RemoteError whose worker's frames cannot be reached (a
ProcessPool's or a dask worker's, a closed pool, a later failure), as dask's
``recreate_error_locally`` does.

The worker sends the failing call's arguments back with its error, pickled,
when they are small (see _worker/post_mortem.py); the target is found here by
the name the error carries.
"""

from __future__ import annotations

import builtins
import importlib
import pickle
import sys
from collections.abc import Callable
from typing import Any

from interp_rpc._worker.post_mortem import RERUN_LIMIT
from interp_rpc.errors import DebugUnavailableError, RemoteError

__all__ = ["rerun_locally", "resolve_here"]


def resolve_here(name: str) -> Callable[..., Any]:
    """The target called ``name`` (a dotted path, or a name of this
    interpreter's ``__main__``), as found in this interpreter."""
    parts = name.split(".")
    if "<locals>" in parts or "<lambda>" in parts[-1] or not all(parts):
        raise DebugUnavailableError(
            f"{name!r} cannot be found by name here (a function defined inside another, or a "
            "lambda): call it yourself under pdb.runcall")
    main = sys.modules["__main__"]
    if parts[0] == "__main__":
        parts = parts[1:]
    elif len(parts) > 1:
        for split in range(len(parts) - 1, 0, -1):
            try:
                module = importlib.import_module(".".join(parts[:split]))
            except ImportError:
                continue
            return _walk(module, parts[split:], name)
    if not hasattr(main, parts[0]) and hasattr(builtins, parts[0]):
        return _walk(builtins, parts, name)
    return _walk(main, parts, name)


def _walk(owner: object, parts: list[str], name: str) -> Callable[..., Any]:
    value = owner
    for part in parts:
        try:
            value = getattr(value, part)
        except AttributeError:
            raise DebugUnavailableError(
                f"{name!r} is not defined in this interpreter (a %%parallel cell defines its "
                "names in the workers only): define it here too, then re-run") from None
    if not callable(value):
        raise DebugUnavailableError(f"{name!r} is a {type(value).__name__} here, not a function")
    return value


def rerun_locally(error: RemoteError) -> None:
    """Call the failing target here with the arguments that failed in the
    worker; when it raises again, open pdb's post-mortem on its frames here
    (commands are read with ``input()``). Raises DebugUnavailableError when
    it cannot be re-run, or when it did not fail here."""
    handle: dict[str, Any] = getattr(error, "post_mortem", None) or {}
    data = handle.get("call")
    if data is None or error.target is None:
        raise DebugUnavailableError(
            f"this {error.remote_type} cannot be re-run here: its call's arguments did not "
            "come back with it (they were views of the caller's memory, did not pickle, or "
            f"were larger than the {RERUN_LIMIT // 1024} KiB a failure's reply carries)")
    target = resolve_here(error.target)
    args, kwargs = pickle.loads(data)
    print(f"Re-running {error.target} here with the arguments that failed in worker "
          f"{error.worker}; pdb opens where it raises.")
    try:
        target(*args, **kwargs)
    except Exception as exc:
        import pdb

        # From the target's frame on: this function's own frame is not the user's.
        traceback = exc.__traceback__
        pdb.post_mortem(traceback.tb_next if traceback and traceback.tb_next else traceback)
        return
    raise DebugUnavailableError(
        f"re-run here, {error.target} returned without an error: what failed depends on "
        "the worker's own state (what its init= or a %%parallel cell set up there)")
