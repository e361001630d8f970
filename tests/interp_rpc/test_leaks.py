"""Leak checks: interpreters after many pools, and memory after many calls."""

from __future__ import annotations

import concurrent.interpreters
import gc

import pytest
from support import non_main_interpreters, rss_bytes, wait_only_main_interpreter

from interp_rpc import InterpreterPool


@pytest.mark.slow
def test_200_create_close_cycles_leave_only_the_main_interpreter() -> None:
    wait_only_main_interpreter()  # nothing left over from earlier tests
    for _ in range(200):
        pool = InterpreterPool(workers=2)
        pool.close()
        # close() joins the workers: their interpreters are gone at once.
        assert non_main_interpreters() == []
    assert [i.id for i in concurrent.interpreters.list_all()] == [0]


@pytest.mark.slow
def test_100000_calls_grow_rss_by_less_than_10_mb() -> None:
    with InterpreterPool(workers=2, init="import pooltasks") as pool:
        payload = {"n": 1, "s": "x" * 100, "l": [1, 2, 3]}
        for _ in range(5_000):  # warm-up: caches, free lists, allocator arenas
            pool.call("pooltasks.identity", payload)
        gc.collect()
        before = rss_bytes()
        for _ in range(100_000):
            pool.call("pooltasks.identity", payload)
        gc.collect()
        grown = rss_bytes() - before
        assert pool.stats().calls == 105_000
    assert grown < 10 * 1024 * 1024, f"RSS grew by {grown / 2**20:.1f} MB"


@pytest.mark.slow
def test_submits_and_maps_do_not_leak_either() -> None:
    with InterpreterPool(workers=2, init="import pooltasks") as pool:
        def burst() -> None:
            futures = [pool.submit("pooltasks.square", i) for i in range(1_000)]
            assert [f.result(timeout=60) for f in futures][-1] == 999 * 999
            assert len(list(pool.map("pooltasks.square", range(5_000)))) == 5_000

        for _ in range(3):
            burst()
        gc.collect()
        before = rss_bytes()
        for _ in range(20):
            burst()
        gc.collect()
        grown = rss_bytes() - before
    assert grown < 10 * 1024 * 1024, f"RSS grew by {grown / 2**20:.1f} MB"
