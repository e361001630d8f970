"""pool.status(), pool.stats() and pool.call_records()."""

from __future__ import annotations

import os
import threading

import pytest
from support import Gates, MakePool, states, wait_until

from interp_rpc import CallRecord, InterpreterPool, PoolStats, RemoteError, WorkerStatus
from interp_rpc._pool.engine import _core
from interp_rpc.records import EngineRecord
from interp_rpc.testing import kill_worker


def test_a_fresh_pool_is_idle(pool: InterpreterPool) -> None:
    # (Idle at once, not eventually: test_workers_are_idle_when_the_constructor_returns.)
    wait_until(lambda: states(pool) == ["idle", "idle"])
    status = pool.status()
    assert [w.index for w in status] == [0, 1]
    for w in status:
        assert isinstance(w, WorkerStatus)
        assert w.state == "idle"
        assert w.target is None and w.item_index is None and w.detail is None
        assert w.busy_seconds == 0.0
        assert w.calls_done == 0
        assert w.busy_seconds_total == 0.0


def test_workers_are_idle_when_the_constructor_returns() -> None:
    # On one CPU (workers inherit this thread's affinity), the woken caller
    # usually runs before the worker's next statement; the race then shows in
    # most pools instead of about one in three.
    affinity = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {min(affinity)})
    seen = []
    try:
        for _ in range(30):
            pool = InterpreterPool(workers=2)
            seen.append(tuple(states(pool)))
            pool.close()
    finally:
        os.sched_setaffinity(0, affinity)
    assert set(seen) == {("idle", "idle")}


def test_a_busy_worker_shows_its_target_and_running_time(pool: InterpreterPool,
                                                         gates: Gates) -> None:
    gate = gates.new()
    future = pool.submit("pooltasks.block", *gate.args())
    gate.wait_started()
    (busy,) = [w for w in pool.status() if w.state == "busy"]
    (idle,) = [w for w in pool.status() if w.state == "idle"]
    assert busy.target == "pooltasks.block"
    assert busy.item_index is None
    assert idle.target is None
    wait_until(lambda: pool.status()[busy.index].busy_seconds > busy.busy_seconds,
               what="busy_seconds growing")
    gate.release()
    future.result(timeout=30)
    wait_until(lambda: pool.status()[busy.index].state == "idle")
    after = pool.status()[busy.index]
    assert after.target is None
    assert after.busy_seconds == 0.0
    assert after.calls_done == 1
    assert after.busy_seconds_total > 0


def test_calls_done_and_busy_time_add_up(pool: InterpreterPool) -> None:
    for i in range(10):
        pool.call("pooltasks.add", i, i)
    list(pool.map("pooltasks.sleep_then", [0.05] * 4, chunksize=1))
    status = pool.status()
    assert sum(w.calls_done for w in status) == 14
    assert sum(w.busy_seconds_total for w in status) >= 4 * 0.05


def test_item_index_during_map(pool: InterpreterPool, gates: Gates) -> None:
    gate = gates.new()
    items = [("ok", 0), ("ok", 1), ("ok", 2), gate.map_item("three"), ("ok", 4)]
    mapper = threading.Thread(target=lambda: results.append(
        list(pool.map("pooltasks.map_item", items, chunksize=1))))
    results: list[list[object]] = []
    mapper.start()
    try:
        gate.wait_started()
        # The other worker may still be running item 4, or be between two
        # items (one busy worker then says nothing): wait until every other
        # item has replied.
        wait_until(lambda: sorted(r.item_index for r in pool.call_records()
                                  if r.target == "pooltasks.map_item" and r.outcome == "replied")
                   == [0, 1, 2, 4], what="every item but the gated one done")
        (busy,) = [w for w in pool.status() if w.state == "busy"]
        assert busy.target == "pooltasks.map_item"
        assert busy.item_index == 3
    finally:
        gate.release()
        mapper.join(60)
    assert results == [[0, 1, 2, "three", 4]]


def test_item_index_is_the_first_item_of_the_running_chunk(pool: InterpreterPool,
                                                           gates: Gates) -> None:
    gate = gates.new()
    items = [("ok", i) for i in range(5)] + [gate.map_item(5)] + [("ok", i) for i in range(6, 10)]
    mapper = threading.Thread(target=pool.map, args=("pooltasks.map_item", items),
                              kwargs={"chunksize": 5})
    mapper.start()
    try:
        gate.wait_started()
        wait_until(lambda: states(pool).count("busy") == 1, what="one busy worker")
        (busy,) = [w for w in pool.status() if w.state == "busy"]
        assert busy.item_index == 5
    finally:
        gate.release()
        mapper.join(60)


def test_status_is_readable_from_another_thread_while_the_caller_waits(
        pool: InterpreterPool, gates: Gates) -> None:
    gate = gates.new()
    seen: list[list[WorkerStatus]] = []

    def observer() -> None:
        gate.wait_started()
        seen.append(pool.status())
        gate.release()

    thread = threading.Thread(target=observer)
    thread.start()
    # The main thread is blocked in call() the whole time the observer looks.
    assert pool.call("pooltasks.block", *gate.args("done"), timeout=60) == "done"
    thread.join(30)
    assert len(seen) == 1
    assert [w.target for w in seen[0] if w.state == "busy"] == ["pooltasks.block"]


def test_dead_and_stopped_states(make_pool: MakePool) -> None:
    pool = make_pool()
    kill_worker(pool, 1)
    wait_until(lambda: states(pool) == ["idle", "dead"])
    assert pool.status()[1].detail
    pool.close()
    assert states(pool) == ["stopped", "dead"]


def test_stats_count_calls_items_and_failures(pool: InterpreterPool, gates: Gates) -> None:
    stats = pool.stats()
    assert isinstance(stats, PoolStats)
    assert (stats.calls, stats.items, stats.replied, stats.failed) == (0, 0, 0, 0)

    for i in range(5):
        pool.call("pooltasks.add", i, 1)
    with pytest.raises(RemoteError):
        pool.call("pooltasks.fail", "counted as replied")
    list(pool.map("pooltasks.square", range(20), chunksize=4))
    stats = pool.stats()
    assert stats.calls == 5 + 1 + 5
    assert stats.items == 5 + 1 + 20
    assert stats.replied == 11
    assert stats.failed == 0

    # A cancelled call is a failed one.
    blockers = [gates.new() for _ in range(2)]
    running = [pool.submit("pooltasks.block", *g.args()) for g in blockers]
    for g in blockers:
        g.wait_started()
    queued = pool.submit("pooltasks.add", 1, 1)
    assert queued.cancel()
    gates.release_all()
    for f in running:
        f.result(timeout=30)
    stats = pool.stats()
    assert stats.replied == 13
    assert stats.failed == 1
    assert stats.calls == 14


def test_stats_times(pool: InterpreterPool) -> None:
    list(pool.map("pooltasks.sleep_then", [0.05] * 4, chunksize=1))
    pool.call("pooltasks.identity", b"x" * 100_000)
    stats = pool.stats()
    assert stats.run_seconds >= 4 * 0.05
    assert stats.queue_wait_seconds >= 0
    assert stats.serialize_seconds > 0
    assert stats.deserialize_seconds > 0
    assert stats.result_serialize_seconds > 0


def test_call_records_timings_are_ordered(pool: InterpreterPool) -> None:
    pool.call("pooltasks.add", 1, 2)
    list(pool.map("pooltasks.square", range(10), chunksize=3))
    pool.call("pooltasks.sleep_then", 0.02)
    records = pool.call_records()
    assert len(records) == 1 + 4 + 1
    assert len({r.id for r in records}) == 6
    for r in records:
        assert isinstance(r, CallRecord)
        assert r.outcome == "replied"
        assert r.worker in (0, 1)
        assert 0 < r.submitted_ns <= r.enqueued_ns <= r.started_ns <= r.finished_ns
        assert r.serialize_ns >= 0 and r.deserialize_ns >= 0 and r.result_serialize_ns >= 0
    first = records[0]
    assert (first.target, first.item_index, first.item_count) == ("pooltasks.add", None, 1)
    chunks = [r for r in records if r.target == "pooltasks.square"]
    assert sorted((r.item_index, r.item_count) for r in chunks) == [
        (0, 3), (3, 3), (6, 3), (9, 1)]
    slow = records[-1]
    assert slow.target == "pooltasks.sleep_then"
    assert slow.finished_ns - slow.started_ns >= 20_000_000


def test_call_records_outcomes(make_pool: MakePool, gates: Gates) -> None:
    pool = make_pool(workers=1)
    gate = gates.new()
    running = pool.submit("pooltasks.block", *gate.args())
    gate.wait_started()
    cancelled = pool.submit("pooltasks.add", 1, 1)
    assert cancelled.cancel()
    kill_worker(pool, 0, during_next_call=True)
    died = pool.submit("pooltasks.add", 2, 2)
    gate.release()
    running.result(timeout=30)
    with pytest.raises(Exception, match="died"):
        died.result(timeout=30)
    outcomes = {r.target + "/" + r.outcome for r in pool.call_records()}
    assert outcomes == {"pooltasks.block/replied", "pooltasks.add/cancelled",
                        "pooltasks.add/worker_died"}


def test_polling_call_records_sees_every_record_once(pool: InterpreterPool,
                                                     gates: Gates) -> None:
    seen: list[int] = []
    last = 0

    def poll() -> None:
        nonlocal last
        for record in pool.call_records(after=last):
            seen.append(record.id)
            last = max(last, record.seq)

    gate = gates.new()
    long_call = pool.submit("pooltasks.block", *gate.args())  # an early id ...
    gate.wait_started()
    for i in range(3):
        pool.call("pooltasks.add", i, 0)  # ... later ids finish first
    poll()
    gate.release()
    long_call.result(timeout=30)
    poll()
    pool.call("pooltasks.add", 9, 0)
    poll()
    assert sorted(seen) == sorted(r.id for r in pool.call_records())
    assert len(seen) == len(set(seen)) == 5


def test_call_records_after_a_seq_reads_later_records(pool: InterpreterPool) -> None:
    for i in range(5):
        pool.call("pooltasks.add", i, 0)
    records = pool.call_records()
    ids = [r.id for r in records]
    assert ids == sorted(ids)  # sequential calls finish in order
    later = pool.call_records(after=records[3].seq)
    assert [r.id for r in later] == ids[4:]


def test_status_names_the_running_call_by_id(pool: InterpreterPool, gates: Gates) -> None:
    assert [w.call_id for w in pool.status()] == [None, None]
    gate = gates.new()
    future = pool.submit("pooltasks.block", *gate.args())
    gate.wait_started()
    (busy,) = [w for w in pool.status() if w.state == "busy"]
    assert isinstance(busy.call_id, int) and busy.call_id > 0
    gate.release()
    future.result(timeout=30)
    wait_until(lambda: pool.status()[busy.index].call_id is None)
    (record,) = [r for r in pool.call_records() if r.id == busy.call_id]
    assert (record.target, record.worker) == ("pooltasks.block", busy.index)


def test_the_engines_record_fields_are_read_by_name_in_their_order() -> None:
    # The engine hands records over as plain tuples (cheap for a whole log);
    # EngineRecord names their fields, in the order the engine defines.
    assert EngineRecord._fields == _core.RECORD_FIELDS
