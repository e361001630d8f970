"""Ctrl-C at a wait for a future, just as its call finishes: the future is
settled all the same (interrupted_wait.py)."""

from __future__ import annotations

from fault_runs import HERE, run_program


def test_a_call_that_finishes_during_an_interrupted_wait_still_settles_its_future() -> None:
    run = run_program([str(HERE / "interrupted_wait.py")], {})
    assert run.exit_code == 0, run
    assert run.event("interrupted")["call_done"] is True, run
    assert run.event("settled") == {"event": "settled", "done": True, "result": None}, run
