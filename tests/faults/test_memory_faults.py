"""Asking for more memory than an address-space limit allows (RLIMIT_AS), in a
worker and in a result: MemoryError, and the pool serves on (memory_limits.py)."""

from __future__ import annotations

import pytest
from conftest import EXIT_LIMIT, HERE, Run, run_program
from memory_limits import STEPS


@pytest.fixture(scope="module")
def run() -> Run:
    return run_program([str(HERE / "memory_limits.py")], {})


@pytest.mark.parametrize("step", [name for name, _, _ in STEPS])
def test_memory_beyond_the_limit_is_a_memory_error_and_the_pool_serves_on(
        step: str, run: Run) -> None:
    assert run.exit_code == 0, run
    assert run.seconds_to_exit is not None and run.seconds_to_exit < EXIT_LIMIT, run
    outcome = run.event(step)
    assert outcome["memory_error"] is True, run
    assert outcome["then"] == 3, run
