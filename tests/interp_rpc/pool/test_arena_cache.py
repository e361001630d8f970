"""Freed pymalloc arenas wait for the next interpreter (core/arena_cache.hpp).

Each worker's pymalloc hands an arena back to the system once it is empty;
without the cache, every list of a million floats a worker builds costs its
pages anew, in page faults, even right after a worker freed the same amount.
"""

from __future__ import annotations

from interp_rpc import InterpreterPool
from interp_rpc._core import cached_arenas

ITEMS = 2**20
FLOAT_PAGES = ITEMS * 24 // 4096  # 24 MiB of float objects: 24 arenas


def test_a_list_built_after_another_was_freed_takes_no_new_pages() -> None:
    with InterpreterPool(workers=1, init="import pooltasks") as pool:
        first = pool.call("pooltasks.faults_building_floats", ITEMS)
        second = pool.call("pooltasks.faults_building_floats", ITEMS)
    # Its 24 MiB of arenas are 6,144 pages, which the second list finds
    # cached (without the cache, each list took them all anew).
    assert second < FLOAT_PAGES / 4, f"{second} page faults (the first list: {first})"


def test_a_pool_that_ends_gives_the_cached_arenas_back() -> None:
    pool = InterpreterPool(workers=2, init="import pooltasks")
    try:
        pool.call("pooltasks.faults_building_floats", ITEMS)
        kept = cached_arenas()
    finally:
        pool.close()
    assert kept >= 16, f"only {kept} arenas cached after a worker freed 24 MiB of floats"
    # The caller's own frees may cache an arena or two again by now.
    assert cached_arenas() <= 2
