"""A call, encoded in the caller exactly as the local pool encodes it.

Encoding here, before anything is sent, means a target that cannot be
resolved by reference raises TargetResolutionError, and an argument that
cannot cross raises ShareabilityError with the same path as in the local
pool, without a round trip to the cluster. The bytes are what dask carries:
dask never looks inside the arguments (it would otherwise read a tuple
starting with a callable as a task of its own), and large buffers travel as
out-of-band frames, not copied into the request.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from interp_rpc import _replies, _targets, _wire


@dataclass(frozen=True)
class Request:
    name: str  # the target's display name
    data: bytes
    buffers: list[Any]  # pickle.PickleBuffer of large arguments, sent out of band


def encode(target: object, args: tuple[Any, ...], kwargs: dict[str, Any], mode: str = "call",
           item_index: int = 0) -> Request:
    """``mode`` is "call", or "chunk"/"starchunk" for a map chunk whose
    items are ``args[0]`` and whose first item is item ``item_index``."""
    if mode == "call" and isinstance(target, functools.partial):
        target, args, kwargs = _targets.unwrap_partial(target, args, kwargs)
    spec, name = _targets.normalize(target)
    try:
        data, buffers = _wire.encode_request(spec, mode, args, kwargs)
    except Exception:
        raise _replies.argument_error(target, args, kwargs, mode, item_index) from None
    return Request(name, data, list(buffers))

