"""How many items a map's next chunk gets, when the caller gave no chunksize.

Chunk sizes grow from a few items (workers start at once, and the first
chunks measure what an item costs), doubling, or faster where each chunk
costs more (``growth``: a worker process pays a wake-up, a read and a reply
for each), and then aim at about ``TARGET_NS`` of worker time per chunk,
never above a balanced share of the items, so the load stays even across
workers.

An item's cost is the wall time a chunk took in its worker, per item. On a
busy machine a worker thread can lose its core for milliseconds in the
middle of a chunk, which makes that one chunk look many times dearer than
its items are. Two rules keep one such chunk from collapsing the sizes (it
once cut a 20,000-item map into 4,943 chunks): the cost used is the median
of the last few chunks, and a size shrinks by at most half per chunk.
Items that really are slow still bring the size down within a few chunks.

A chunk's time also holds what every call costs whatever its items
(unpickling, replying: tens of microseconds in a worker process), which
makes the items of a small chunk look dearer than they are. A chunk that
ran for less than ``MEASURABLE_NS`` is therefore not used to measure: it
says only that its items are cheap, and the sizes go on growing. Without
this rule the first chunk of four tiny items set the cost at a hundred
times its true value, and a map of 10^5 tiny items went out in hundreds of
small chunks. Since short chunks no longer dilute one slow chunk, the cost
is known only once ``MIN_MEASURED`` chunks have measured it.
"""

from __future__ import annotations

import collections

#: Items in the first chunk: workers start at once.
FIRST_CHUNK = 4
#: Worker time a chunk aims at, once the item cost is known.
TARGET_NS = 5_000_000
#: How many recent chunks the item cost is the median of.
COST_WINDOW = 5
#: Chunks that ran shorter than this do not measure the item cost.
MEASURABLE_NS = 1_000_000
#: How many chunks must have measured the item cost before it is used.
MIN_MEASURED = 2


class ChunkSizer:
    """The size of each next chunk of one map."""

    def __init__(self, balanced: int, growth: int = 2) -> None:
        """``balanced``: the most items a chunk may get, so that every worker
        gets several chunks (see MapRun); ``growth``: how many times larger
        each chunk is than the one before, until the item cost is known."""
        self._balanced = max(1, balanced)
        self._growth = growth
        self._costs: collections.deque[float] = collections.deque(maxlen=COST_WINDOW)
        self._last = 0

    def observe(self, run_ns: int, items: int) -> None:
        """A chunk of ``items`` items ran for ``run_ns`` in its worker."""
        if run_ns >= MEASURABLE_NS and items > 0:
            self._costs.append(run_ns / items)

    @property
    def item_ns(self) -> float | None:
        """The estimated worker time of one item, once a chunk has finished."""
        if len(self._costs) < MIN_MEASURED:
            return None
        # Not statistics.median: importing statistics imports decimal and
        # fractions, which every `import interp_rpc` would then pay for.
        costs = sorted(self._costs)
        middle = len(costs) // 2
        return costs[middle] if len(costs) % 2 else (costs[middle - 1] + costs[middle]) / 2

    def next_size(self) -> int:
        size = min(max(FIRST_CHUNK, self._last * self._growth), self._balanced)
        cost = self.item_ns
        if cost is not None:
            aimed = int(TARGET_NS / max(cost, 1.0))
            size = min(size, max(aimed, self._last // 2, 1))
        self._last = size
        return size
