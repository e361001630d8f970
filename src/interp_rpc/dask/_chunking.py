"""How ClusterPool.map cuts its items into dask tasks.

Every dask task costs about a millisecond of scheduling, so one task per
item would cost more than most items' work. A map is cut into a few chunks
per subinterpreter of the cluster instead: enough to keep every
subinterpreter busy while finished chunks come back and to even out items of
uneven cost, few enough that dask's cost per task is spread over many items.
Each chunk runs as one request in one subinterpreter.
"""

from __future__ import annotations

import math

#: Chunks per subinterpreter of the cluster, when the caller gives no chunksize.
CHUNKS_PER_SLOT = 4

#: Chunks in flight per subinterpreter: one running, one queued in its
#: process, so a subinterpreter never waits for the next chunk to arrive.
IN_FLIGHT_PER_SLOT = 2

#: A chunk this long (from its sending to its result) gains nothing from a
#: chunk queued behind it: the next one arrives within a millisecond or two.
#: And a queued chunk is pinned to its process, so at the end of a map it can
#: wait there behind a long one while another process idles (dask would steal
#: it; we cannot). Once one of a map's chunks has taken this long, its next
#: chunks go only to a process with a subinterpreter free.
QUEUE_AHEAD_LIMIT_S = 0.05


def chunk_size(items: int, slots: int, chunksize: int | None = None) -> int:
    if chunksize is not None:
        return chunksize
    return max(1, math.ceil(items / (max(1, slots) * CHUNKS_PER_SLOT)))


def chunk_starts(items: int, size: int) -> range:
    return range(0, items, size)
