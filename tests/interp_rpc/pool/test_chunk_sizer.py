"""The adaptive chunk size of a map without chunksize (ChunkSizer)."""

from __future__ import annotations

from interp_rpc._pool.chunk_sizer import FIRST_CHUNK, MEASURABLE_NS, TARGET_NS, ChunkSizer

TINY_ITEM_NS = 100


def sizes(sizer: ChunkSizer, chunks: int, item_ns: float) -> list[int]:
    """The sizes of the next chunks when each item costs item_ns."""
    out = []
    for _ in range(chunks):
        size = sizer.next_size()
        out.append(size)
        sizer.observe(int(size * item_ns), size)
    return out


def test_sizes_grow_from_a_few_items_to_the_balanced_share() -> None:
    sizer = ChunkSizer(balanced=1250)
    assert sizes(sizer, 12, TINY_ITEM_NS) == [FIRST_CHUNK, 8, 16, 32, 64, 128, 256, 512, 1024,
                                              1250, 1250, 1250]


def test_slow_items_get_chunks_of_about_the_target_time() -> None:
    sizer = ChunkSizer(balanced=10_000)
    item_ns = TARGET_NS / 10  # ten items fill a chunk's target
    assert sizes(sizer, 6, item_ns)[2:] == [10, 10, 10, 10]


def test_items_slower_than_the_target_go_one_by_one_within_a_few_chunks() -> None:
    sizer = ChunkSizer(balanced=10_000)
    for _ in range(8):
        sizer.observe(int(64 * TARGET_NS * 2), 64)  # 64-item chunks of items twice the target
    assert sizes(sizer, 3, TARGET_NS * 2) == [1, 1, 1]


def test_one_preempted_chunk_does_not_collapse_the_sizes() -> None:
    # Under load a worker can lose its core for milliseconds inside a chunk:
    # that chunk alone looks thousands of times dearer per item.
    sizer = ChunkSizer(balanced=1250)
    sizes(sizer, 11, TINY_ITEM_NS)  # at the balanced share
    sizer.observe(20_000_000, 1250)  # one chunk took 20 ms instead of 125 us
    assert sizes(sizer, 3, TINY_ITEM_NS) == [1250, 1250, 1250]


def test_a_size_shrinks_by_at_most_half_per_chunk() -> None:
    sizer = ChunkSizer(balanced=1024)
    sizes(sizer, 10, TINY_ITEM_NS)
    assert sizer.next_size() == 1024
    for _ in range(5):  # the items became very slow: the median follows
        sizer.observe(1024 * TARGET_NS, 1024)
    assert [sizer.next_size() for _ in range(4)] == [512, 256, 128, 64]


def test_no_measurement_no_cost() -> None:
    sizer = ChunkSizer(balanced=10)
    sizer.observe(0, 4)  # a chunk with no run time (never ran): not a cost
    sizer.observe(1000, 0)
    assert sizer.item_ns is None
    assert sizer.next_size() == FIRST_CHUNK


def test_the_cost_is_the_median_of_the_last_chunks() -> None:
    sizer = ChunkSizer(balanced=100)
    for cost in (3, 1, 2, 100):
        sizer.observe(cost * MEASURABLE_NS, 1)
    assert sizer.item_ns == 2.5 * MEASURABLE_NS  # an even count: the mean of the middle two
    sizer.observe(int(1.5 * MEASURABLE_NS), 1)
    assert sizer.item_ns == 2 * MEASURABLE_NS


def test_a_chunk_too_short_to_measure_lets_the_sizes_grow() -> None:
    # A worker process spends tens of microseconds on any call: four tiny
    # items that took 50 us are not items of 12.5 us each.
    sizer = ChunkSizer(balanced=10_000)
    assert sizer.next_size() == FIRST_CHUNK
    sizer.observe(50_000, FIRST_CHUNK)
    assert sizer.item_ns is None
    assert [sizer.next_size() for _ in range(9)] == [8, 16, 32, 64, 128, 256, 512, 1024, 2048]
