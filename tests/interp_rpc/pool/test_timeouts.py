"""CallTimeoutError: only the wait stops; the worker stays busy, and status shows it."""

from __future__ import annotations

import pytest
from support import Gates, MakePool, wait_until

from interp_rpc import CallTimeoutError, InterpreterPool, InterpRpcError


def test_timeout_error_attributes_and_message(pool: InterpreterPool, gates: Gates) -> None:
    gate = gates.new()
    with pytest.raises(CallTimeoutError) as info:
        pool.call("pooltasks.block", *gate.args(), timeout=0.3)
    err = info.value
    assert isinstance(err, TimeoutError)
    assert isinstance(err, InterpRpcError)
    assert err.target == "pooltasks.block"
    assert err.timeout == 0.3
    busy = [w for w in pool.status() if w.state == "busy"]
    assert len(busy) == 1
    assert err.worker == busy[0].index
    message = str(err)
    assert "'pooltasks.block' did not finish within 0.3 s" in message
    assert f"worker {err.worker} is still running it" in message
    assert "not stopped" in message


def test_the_call_keeps_running_and_status_shows_it(pool: InterpreterPool, gates: Gates) -> None:
    gate = gates.new()
    with pytest.raises(CallTimeoutError) as info:
        pool.call("pooltasks.block", *gate.args(), timeout=0.2)
    gate.wait_started()
    worker = info.value.worker
    assert worker is not None
    status = pool.status()[worker]
    assert status.state == "busy"
    assert status.target == "pooltasks.block"
    # Busy time grows while it runs.
    wait_until(lambda: pool.status()[worker].busy_seconds > status.busy_seconds)
    # The other worker serves calls meanwhile.
    assert list(pool.map("pooltasks.square", range(6))) == [0, 1, 4, 9, 16, 25]
    assert pool.status()[worker].state == "busy"
    gate.release()
    wait_until(lambda: pool.status()[worker].state == "idle", what="the worker going idle")
    after = pool.status()[worker]
    assert after.target is None
    # The timed-out call finished on its own and counts as done.
    records = [r for r in pool.call_records() if r.target == "pooltasks.block"]
    assert [r.outcome for r in records] == ["replied"]
    assert records[0].worker == worker


def test_timeout_of_a_call_still_queued(make_pool: MakePool, gates: Gates) -> None:
    pool = make_pool(workers=1)
    gate = gates.new()
    running = pool.submit("pooltasks.block", *gate.args("first"))
    gate.wait_started()
    with pytest.raises(CallTimeoutError) as info:
        pool.call("pooltasks.add", 1, 2, timeout=0.2)
    err = info.value
    assert err.worker is None
    assert "still queued" in str(err)
    gate.release()
    assert running.result(timeout=30) == "first"


def test_timeout_zero_and_generous_timeouts(pool: InterpreterPool) -> None:
    assert pool.call("pooltasks.add", 1, 2, timeout=60) == 3
    with pytest.raises(CallTimeoutError):
        pool.call("pooltasks.sleep_then", 0.5, timeout=0)
    wait_until(lambda: all(w.state == "idle" for w in pool.status()))
