"""kill_on_timeout=True: a call past its timeout is stopped, its worker replaced."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from process_support import wait_ended
from support import wait_until

from interp_rpc import CallTimeoutError, ProcessPool


def test_a_call_past_its_timeout_is_stopped_and_its_worker_replaced(
        make_process_pool: Callable[..., ProcessPool]) -> None:
    pool = make_process_pool(workers=1, kill_on_timeout=True)
    before = pool.worker_pids()
    with pytest.raises(CallTimeoutError, match="The call was stopped") as caught:
        pool.call("processtasks.sleep_then", 600, timeout=0.3)
    assert caught.value.stopped is True
    wait_ended(before)
    assert pool.call("processtasks.pid", timeout=60) not in before
    assert pool.status()[0].state == "idle"


def test_without_it_the_call_goes_on_and_the_error_says_so(
        make_process_pool: Callable[..., ProcessPool]) -> None:
    pool = make_process_pool(workers=1)
    with pytest.raises(CallTimeoutError, match="kill_on_timeout=True") as caught:
        pool.call("processtasks.sleep_then", 0.5, timeout=0.05)
    assert caught.value.stopped is False
    assert pool.call("processtasks.sleep_then", 0, "after") == "after"


def test_a_map_past_its_timeout_stops_its_running_chunks(
        make_process_pool: Callable[..., ProcessPool]) -> None:
    pool = make_process_pool(workers=2, kill_on_timeout=True)
    before = pool.worker_pids()
    results = pool.map("processtasks.sleep_then", [600] * 4, timeout=0.3, chunksize=1)
    with pytest.raises(CallTimeoutError, match="stopped"):
        list(results)
    wait_ended(before)
    wait_until(lambda: all(w.state == "idle" for w in pool.status()),
               what="both workers replaced and idle (no chunk of the map left to run)")
    assert list(pool.map("processtasks.sleep_then", [0, 0], [1, 2])) == [1, 2]


def test_kill_on_timeout_must_be_a_bool() -> None:
    with pytest.raises(TypeError, match="kill_on_timeout"):
        ProcessPool(workers=1, kill_on_timeout="yes")  # type: ignore[arg-type]


def test_without_it_a_map_past_its_timeout_says_so_too(
        make_process_pool: Callable[..., ProcessPool]) -> None:
    # Not "subinterpreters cannot be interrupted": a ProcessPool could stop it.
    pool = make_process_pool(workers=1)
    with pytest.raises(CallTimeoutError, match="kill_on_timeout=True") as caught:
        list(pool.map("processtasks.sleep_then", [0.5, 0.5], timeout=0.05, chunksize=1))
    assert caught.value.stopped is False
    assert "subinterpreters" not in str(caught.value)
