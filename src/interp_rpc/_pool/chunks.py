"""A map chunk, the one way every pool builds its request and reads its reply.

A chunk is one request that runs a map's target on several items in one
worker. Its arguments are the items and, when the chunk needs them, its
hooks (see ``_hooked`` in _worker/main.py): the index its first item has in
its run, whether failing items are collected, where output goes, and a stop
flag read before each item. Its reply is ``(results, index of the failed
item or -1, the pickled error, [item times])``.

The local map (map.py) builds and reads chunks with these functions, and so
do a ClusterPool's caller, which encodes each chunk once, and the dask
worker process that runs it, which forwards those bytes to its own pool.
"""

from __future__ import annotations

import pickle
from typing import TYPE_CHECKING, Any

from interp_rpc._pool import replies
from interp_rpc._worker import wire

if TYPE_CHECKING:
    from interp_rpc._pool.engine_face import EngineCall
    from interp_rpc.errors import RemoteError
    from interp_rpc.profiling.recorder import ProfileRecorder


def chunk_arguments(items: list[Any] | range, start: int, *, collect: bool, output: object = None,
                    stop_flag: bytearray | int | None = None) -> tuple[Any, ...]:
    """The request arguments of a chunk of ``items`` whose first is item
    ``start`` of its run. ``collect``: a failing item's error takes its
    place among the results. ``output``: the id of the cross-interpreter
    queue its prints go to (or what stands for it, see
    Pool.output_destination). ``stop_flag``: the map's flag, which set to
    1 stops the chunk before its next item: a byte of the caller's memory
    (which a subinterpreter reads itself), or the index of the map's byte
    on a ProcessPool's stop board (process/stop_board.py)."""
    # A one-item chunk of a plain map carries no hooks (pickling them cost
    # 150 ns of the chunk's few µs in the caller).
    if len(items) == 1 and not collect and output is None:
        return (items,)
    hooks: dict[str, Any] = {"start": start, "collect": collect, "output": output}
    if len(items) > 1 and stop_flag is not None:
        # A chunk of one item has no next item to stop before. The flag
        # crosses as an out-of-band buffer, which the engine must release
        # after the call: with chunksize=1 that cost about a quarter of each
        # item's time.
        hooks["stop"] = (pickle.PickleBuffer(stop_flag) if isinstance(stop_flag, bytearray)
                         else stop_flag)
    return (items, hooks)


def chunk_results(handle: EngineCall, recorder: ProfileRecorder, target: object,
                  name: str, start: int) -> tuple[list[Any], RemoteError | None]:
    """A finished chunk's results, in order, and the error of its failing
    item, if one failed (the results are then those of the items before it).
    Collected failures are RemoteErrors among the results. Errors name items
    from ``start``, the index of the chunk's first item; the profiles on
    ``recorder`` get the chunk's item times. Raises the error the whole
    request stands for, if it did not run (died, cancelled, unshareable)."""
    status, kind, reply, worker = handle.take()
    values, failed, error, *marks = replies.reply_value(
        status, kind, reply, worker, target, (), {}, chunk_start=start)
    if marks or (failed >= 0 and recorder.on):
        # Its items' times (a profiled chunk), or which one failed.
        recorder.item_marks(handle.id, marks[0] if marks else None, failed)
    if failed >= 0:
        return values, replies.remote_error(wire.loads(error), target=name, worker=worker,
                                            item_index=start + failed)
    if error is not None:  # collected failures
        for offset, info in wire.loads(error):
            values[offset] = replies.remote_error(info, target=name, worker=worker,
                                                  item_index=start + offset)
    return values, None
