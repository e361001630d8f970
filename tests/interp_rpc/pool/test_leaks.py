"""Leak checks: interpreters after many pools, and memory after many calls and pools."""

from __future__ import annotations

import concurrent.interpreters
import ctypes
import gc
import platform

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


@pytest.mark.slow
@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="malloc_trim is glibc's")
def test_closed_pools_give_their_free_memory_back_to_the_os() -> None:
    # Each worker thread allocates in a glibc arena of its own, which keeps
    # its free pages after the thread ends. Without a trim at close(), pools
    # like these left about 10 MB of free pages each in the process (205 MB
    # for twenty), and a notebook that made pools for an hour kept growing.
    libc = ctypes.CDLL(None)
    gc.collect()
    libc.malloc_trim(0)
    for _ in range(6):
        with InterpreterPool(workers=2, init="import pooltasks, json, decimal") as pool:
            list(pool.map("pooltasks.identity", [b"x" * (1000 + 37 * i) for i in range(3000)]))
            futures = [pool.submit("pooltasks.echo", list(range(i))) for i in range(300)]
            for future in futures:
                future.result(timeout=60)
    gc.collect()
    untrimmed = rss_bytes()
    libc.malloc_trim(0)
    left_free = untrimmed - rss_bytes()
    assert left_free < 24 * 1024 * 1024, f"{left_free / 2**20:.0f} MB of free pages kept"
