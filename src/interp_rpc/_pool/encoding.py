"""A call, encoded in the caller, the one way every pool encodes it.

Encoding before anything is sent means that a target that cannot be
resolved by reference raises TargetResolutionError, and an argument that
cannot cross raises ShareabilityError naming its path, in the caller and
without a round trip. The bytes are what a worker's ``execute`` reads (see
_worker/wire.py); large buffers go out of band, not copied into them. A
ClusterPool sends these same bytes to a dask worker process.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from interp_rpc._pool import replies, targets
from interp_rpc._pool.engine import _core
from interp_rpc._worker import columns, wire


@dataclass(frozen=True, slots=True)
class EncodedCall:
    name: str  # the target's display name
    data: bytes  # the request, as pickled for the worker
    buffers: list[Any]  # pickle.PickleBuffer of large arguments, sent out of band
    submitted_ns: int  # when encoding began, on the engine's clock
    serialize_ns: int  # what encoding took
    is_chunk: bool = False  # a map chunk, not a call


def encode_call(target: object, args: tuple[Any, ...], kwargs: dict[str, Any], *,
                mode: str = "call", item_index: int = -1,
                normalized: tuple[targets.TargetSpec, str] | None = None,
                check_open: Callable[[str], None] | None = None) -> EncodedCall:
    """``target(*args, **kwargs)`` encoded; ``mode`` is "call", or
    "chunk"/"starchunk" (and their profiled forms) for a map chunk whose
    items are ``args[0]`` and whose first item is item ``item_index``.
    ``normalized``: what targets.normalize(target) returned already (a map's
    chunks share it). ``check_open(name)`` raises if the pool cannot take
    the call, before the arguments are encoded."""
    if mode == "call" and isinstance(target, functools.partial):
        target, args, kwargs = targets.unwrap_partial(target, args, kwargs)
    spec, name = normalized if normalized is not None else targets.normalize(target)
    if check_open is not None:
        check_open(name)
    submitted = _core.monotonic_ns()
    beside = wire.OUT_OF_BAND_THRESHOLD
    packed_args, packed_kwargs = args, kwargs
    if mode != "call":
        packed_args = (columns.pack_items(args[0], _core.pack_column, beside), *args[1:])
    elif kwargs or not columns.SEQUENCES.isdisjoint(map(type, args)):  # else: nothing to pack
        packed_args, packed_kwargs = columns.pack_arguments(args, kwargs, _core.pack_column,
                                                            beside)
    try:
        data, buffers = wire.encode_request(spec, mode, packed_args, packed_kwargs)
    except Exception:
        raise replies.argument_error(target, args, kwargs, mode, item_index) from None
    return EncodedCall(name, data, buffers, submitted, _core.monotonic_ns() - submitted,
                       is_chunk=mode != "call")
