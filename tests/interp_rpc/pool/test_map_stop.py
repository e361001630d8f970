"""MapRun.request_stop(): another thread stops a map as Ctrl-C stops it in
the thread collecting it (what %parallel_stop does from a subshell)."""

from __future__ import annotations

import threading

import pytest
from support import Gates, wait_until

from interp_rpc import InterpreterPool
from interp_rpc._pool.map import MapRun


def run_map(pool: InterpreterPool, items: list[object]) -> MapRun:
    return MapRun(pool, "pooltasks.map_item", (items,), timeout=None, chunksize=1,
                  buffersize=None)


def test_a_stop_from_another_thread_interrupts_the_collecting_thread(
        pool: InterpreterPool, gates: Gates) -> None:
    blockers = [gates.new() for _ in range(2)]
    later = [gates.new() for _ in range(6)]
    run = run_map(pool, [g.map_item(i) for i, g in enumerate(blockers + later)])
    outcome: list[BaseException | list[object]] = []

    def collect() -> None:
        try:
            outcome.append(run.collect())
        except BaseException as exc:  # what the collecting thread saw
            outcome.append(exc)

    # The collector is not the main thread: no signal could reach its wait.
    collector = threading.Thread(target=collect, daemon=True)
    collector.start()
    wait_until(lambda: all(g.has_started() for g in blockers))
    run.request_stop()
    collector.join(10)
    assert not collector.is_alive(), "the stop did not end the wait"
    assert len(outcome) == 1 and isinstance(outcome[0], KeyboardInterrupt), outcome
    assert run.finished_items == 0
    gates.release_all()
    wait_until(lambda: all(w.state == "idle" for w in pool.status()))
    assert not any(g.has_started() for g in later), "queued chunks ran after the stop"
    assert list(pool.map("pooltasks.square", range(4))) == [0, 1, 4, 9]


def test_a_map_that_is_not_stopped_gives_its_results(pool: InterpreterPool,
                                                     gates: Gates) -> None:
    gate = gates.new()
    run = run_map(pool, [gate.map_item("slow"), ("ok", 2)])
    threading.Timer(0.3, gate.release).start()
    assert run.collect() == ["slow", 2]
    assert run.finished_items == 2


def test_a_stop_before_the_first_wait_still_interrupts(pool: InterpreterPool,
                                                       gates: Gates) -> None:
    gate = gates.new()
    run = run_map(pool, [gate.map_item(0)])
    run.request_stop()
    with pytest.raises(KeyboardInterrupt):
        run.collect()
    gate.release()


def test_a_stop_after_every_chunk_finished_still_interrupts(pool: InterpreterPool) -> None:
    """When the caller is the slower side, every chunk is done before it is
    waited for, and no wait times out: the stop must still end the map."""
    run = run_map(pool, [("ok", i) for i in range(8)])
    wait_until(lambda: run.finished_items == 8)
    run.request_stop()
    with pytest.raises(KeyboardInterrupt):
        run.collect()
    assert list(pool.map("pooltasks.square", range(4))) == [0, 1, 4, 9]
