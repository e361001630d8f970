"""A worker whose interpreter cannot be created (the engine's fault hook,
core/fault_injection.hpp, makes CPython refuse it), at each worker.

The same guarantees as for a thread that cannot start: a PoolInitError that
says which worker and why, a process that exits normally and soon, a second
pool that serves, and no interpreter left behind.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from fault_runs import Run, assert_ended_well
from pool_lifecycle import WORKERS

FAULT_VARIABLE = "INTERP_RPC_FAIL_INTERPRETER"


@pytest.mark.parametrize("worker", range(WORKERS))
def test_an_interpreter_that_cannot_be_created_is_a_pool_init_error(
        worker: int, run_lifecycle: Callable[..., Run]) -> None:
    run = run_lifecycle(env={FAULT_VARIABLE: str(worker)})
    created = run.event("create")
    assert created["error"] == "PoolInitError", run
    message = created["message"]
    assert message.startswith("1 worker(s) failed to start"), run
    assert f"worker {worker}: could not create the subinterpreter: " in message, run
    assert "(an injected fault)" in message, run
    assert_ended_well(run)

