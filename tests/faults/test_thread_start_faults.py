"""A thread that cannot start (pthread_create fails with EAGAIN, as under a
pids limit or ``ulimit -u``), at each thread a pool starts while it is
created, makes its first calls and closes.

For every such thread: the error names it, with errno and the limits that
cause it; the process exits normally and soon; a second pool serves; and no
interpreter is left behind.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from fault_runs import EXIT_LIMIT, HERE, LIFECYCLE, Run, assert_ended_well, run_with_preloaded
from pool_lifecycle import STEPS

# What any thread-start error says (thread_start.hpp): the errno, its name,
# and the limits to look at.
ERRNO = "Resource temporarily unavailable (errno 11, EAGAIN)"
LIMITS = ("pids.max", "ulimit -u")


@pytest.fixture(scope="module")
def threads_per_step(thread_fault_library: Path) -> dict[str, int]:
    """How many threads each step starts, counted in a run without a fault."""
    if "libtsan" in os.environ.get("LD_PRELOAD", ""):
        pytest.skip("TSan starts a thread of its own through pthread_create at the process's "
                    "first thread, which shifts the position of every thread of the pool")
    run = run_with_preloaded(thread_fault_library, LIFECYCLE)()
    assert_ended_well(run)
    counts = {step: run.event(step)["threads"] for step in STEPS}
    assert all(run.event(step)["failed"] == 0 for step in STEPS), run
    return counts


def assert_names_the_thread(message: str, thread: str, run: Run) -> None:
    assert re.search(f"could not start {thread}: {re.escape(ERRNO)}", message), run
    assert all(limit in message for limit in LIMITS), run


def test_creating_a_pool_starts_a_completion_thread_and_one_thread_per_worker(
        threads_per_step: dict[str, int]) -> None:
    # The counts the other tests walk through; the first call starts the
    # runner of done-callbacks.
    assert threads_per_step == {"create": 4, "call": 1, "close": 0}


@pytest.mark.parametrize("nth", [1, 2, 3, 4])
def test_a_thread_that_cannot_start_during_creation_is_a_pool_init_error(
        nth: int, threads_per_step: dict[str, int], run_lifecycle: Callable[..., Run]) -> None:
    assert nth <= threads_per_step["create"]
    run = run_lifecycle("--fail-thread", "create", str(nth))
    created = run.event("create")
    assert created["failed"] == 1, run
    assert created["error"] == "PoolInitError", run
    # The completion thread starts first, then worker 0, 1, 2.
    if nth == 1:
        assert_names_the_thread(created["message"], "the pool's completion thread", run)
        assert created["message"].startswith("3 worker(s) failed to start"), run
    else:
        worker = nth - 2
        assert_names_the_thread(created["message"], f"worker {worker}'s thread", run)
        assert f"worker {worker}: could not start" in created["message"], run
    assert_ended_well(run)


def test_a_callback_runner_that_cannot_start_still_runs_the_callback(
        threads_per_step: dict[str, int], run_lifecycle: Callable[..., Run]) -> None:
    assert threads_per_step["call"] == 1
    run = run_lifecycle("--fail-thread", "call", "1")
    called = run.event("call")
    assert called["failed"] == 1, run
    assert called.get("results") == [3, 6, [1, 2, 3], -4], run
    assert "could not start" in run.stderr, run
    assert_ended_well(run)


def test_an_exit_whose_interrupting_thread_cannot_start_still_ends_the_process(
        thread_fault_library: Path) -> None:
    run = run_with_preloaded(thread_fault_library, HERE / "busy_at_exit.py")()
    assert run.exit_code == 0, run
    assert run.seconds_to_exit is not None and run.seconds_to_exit < EXIT_LIMIT, run
    assert "interp-rpc: no worker was interrupted: " in run.stderr, run
    assert_names_the_thread(run.stderr, "the thread that interrupts workers", run)
