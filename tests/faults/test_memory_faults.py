"""Allocation failures: asking for more memory than an address-space limit
allows (RLIMIT_AS), in a worker and in a result, is a MemoryError and the
pool serves on (memory_limits.py); the engine's own copy of a reply failing
to allocate (its fault hook) is a clear error, never the end of the process."""

from __future__ import annotations

import os

import pytest
from fault_runs import EXIT_LIMIT, HERE, LIFECYCLE, Run, assert_ended_well, run_program
from memory_limits import STEPS
from pool_lifecycle import WORKERS

REPLY_COPY_FAULT = "INTERP_RPC_FAIL_REPLY_COPY"
OUT_OF_MEMORY = "out of memory: the engine could not copy the worker's "


@pytest.fixture(scope="module")
def run() -> Run:
    preloaded = os.environ.get("LD_PRELOAD", "")
    if "libasan" in preloaded or "libtsan" in preloaded:
        pytest.skip("a sanitizer maps terabytes of shadow memory: RLIMIT_AS means nothing "
                    "under it")
    return run_program([str(HERE / "memory_limits.py")], {})


@pytest.mark.parametrize("step", [name for name, _, _ in STEPS])
def test_memory_beyond_the_limit_is_a_memory_error_and_the_pool_serves_on(
        step: str, run: Run) -> None:
    assert run.exit_code == 0, run
    assert run.seconds_to_exit is not None and run.seconds_to_exit < EXIT_LIMIT, run
    outcome = run.event(step)
    assert outcome["memory_error"] is True, run
    assert outcome["then"] == 3, run


def test_a_setup_reply_the_engine_cannot_copy_is_a_pool_init_error() -> None:
    run = run_program([str(LIFECYCLE)], {REPLY_COPY_FAULT: "1"})  # a worker's setup() reply
    created = run.event("create")
    assert created["error"] == "PoolInitError", run
    assert OUT_OF_MEMORY in created["message"], run
    assert_ended_well(run)


def test_a_call_reply_the_engine_cannot_copy_is_an_error_and_the_pool_serves_on() -> None:
    # The setup() replies of the WORKERS workers are copied first.
    run = run_program([str(LIFECYCLE)], {REPLY_COPY_FAULT: str(WORKERS + 1)})
    called = run.event("call")
    assert called["error"] == "InterpRpcError", run
    assert OUT_OF_MEMORY in called["message"], run
    assert "error" not in run.event("close"), run
    assert_ended_well(run)
