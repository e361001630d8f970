"""A thread that cannot start (pthread_create fails with EAGAIN, as under a
pids limit or ``ulimit -u``) in the kernel: at each thread the kernel starts
up to its first cell (zmq's, the interrupt relay, the stream captures, the
IOPub and control threads, IPython's), and the live view's publisher in a cell.

Whichever it is, the kernel never hangs: it either exits with a line on
stderr that says what could not start, or it serves and its cell says what
failed; a kernel that serves shuts down when asked (kernel_runs.py bounds
every wait).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

import pytest
from kernel_runs import Cell, kernel_under

FAULT_VARIABLE = "INTERP_RPC_FAIL_PTHREAD_CREATE"
COUNT_THREADS = ("import ctypes\n"
                 "print(ctypes.CDLL(None).interp_rpc_pthread_create_calls())")
#: More than the threads the kernel starts up to its first cell's answer.
MOST_THREADS = 14
#: What an exit or an error says about a thread that could not start: ours
#: (thread_start.hpp), Python's threading, or zmq's own.
SAYS_WHAT_FAILED = ("could not start", "can't start new thread", "Resource temporarily unavailable")
#: The kernel's own threads, as their start errors name them.
KERNEL_THREADS = ("the kernel's interrupt relay thread", "the kernel's stdout capture thread",
                  "the kernel's stderr capture thread", "the kernel's IOPub thread",
                  "the kernel's shell router thread", "the kernel's control thread")


@pytest.fixture(scope="module")
def threads_to_first_cell(thread_fault_library: Path) -> int:
    """How many pthread_create calls a kernel makes up to its first cell's
    answer, counted in a run without a fault."""
    with kernel_under(thread_fault_library, {}) as kernel:
        assert kernel.serving(), kernel
        cell = kernel.execute(COUNT_THREADS)
        assert cell.status == "ok", kernel
        assert kernel.shut_down() == 0, kernel
    count = int(cell.stdout)
    assert 0 < count <= MOST_THREADS, f"{count} threads: raise MOST_THREADS"
    return count


@dataclass(frozen=True)
class Outcome:
    """How a kernel whose nth pthread_create failed ended up."""

    exit_code: int | None  # if it exited instead of serving
    cell: Cell | None  # if it served: its first cell
    shutdown_code: int | None  # if it served: its exit code after a shutdown request
    stderr: str
    report: str


@functools.cache
def outcome_of(library: Path, nth: int) -> Outcome:
    """The kernel's outcome when its nth pthread_create fails (run once per
    nth for the tests of this module; a hang fails the test that asked)."""
    with kernel_under(library, {FAULT_VARIABLE: str(nth)}) as kernel:
        if not kernel.serving():
            code = kernel.exit_code()
            return Outcome(code, None, None, kernel.stderr, repr(kernel))
        cell = kernel.execute("print('served')")
        shutdown_code = kernel.shut_down()
        return Outcome(None, cell, shutdown_code, kernel.stderr, repr(kernel))


@pytest.mark.parametrize("nth", range(1, MOST_THREADS + 1))
def test_a_kernel_thread_that_cannot_start_never_hangs_the_kernel(
        nth: int, threads_to_first_cell: int, thread_fault_library: Path) -> None:
    if nth > threads_to_first_cell:
        pytest.skip(f"the kernel starts {threads_to_first_cell} threads up to its first cell")
    run = outcome_of(thread_fault_library, nth)
    if run.cell is None:
        assert run.exit_code != 0, run.report
        assert any(s in run.stderr for s in SAYS_WHAT_FAILED), run.report
        return
    if run.cell.status == "ok":
        assert run.cell.stdout == "served\n", run.report
    else:
        assert any(s in run.cell.error for s in SAYS_WHAT_FAILED), run.report
    assert run.shutdown_code == 0, run.report


def test_each_of_the_kernels_own_threads_that_cannot_start_is_named(
        threads_to_first_cell: int, thread_fault_library: Path) -> None:
    # Each of the kernel's own threads, failing in turn, is named: in the
    # line the kernel exits with, or in the first cell's error when it
    # starts with the shell (the stream captures).
    said = [outcome_of(thread_fault_library, nth)
            for nth in range(1, threads_to_first_cell + 1)]
    named = {thread for outcome in said for thread in KERNEL_THREADS
             if f"interp-rpc-kernel: could not start {thread}: " in outcome.stderr
             or (outcome.cell is not None
                 and f"could not start {thread}: " in outcome.cell.error)}
    assert named == set(KERNEL_THREADS), [o.report for o in said]


LIVE_VIEW_WITHOUT_ITS_THREAD = """
import ctypes
from interp_rpc import InterpreterPool
from interp_rpc.notebook import live

pool = InterpreterPool(workers=1)
assert live._kernel_publisher() is not None, "not the kernel's C++ publisher"
view = live.LiveView(pool, target="nothing", refresh=0.05)
faults = ctypes.CDLL(None)
faults.interp_rpc_fail_pthread_create(1)
try:
    view.start()
finally:
    failed = faults.interp_rpc_pthread_create_failures()
    faults.interp_rpc_fail_pthread_create(0)
    pool.close()
"""


def test_a_live_view_whose_thread_cannot_start_is_an_error_in_its_cell(
        thread_fault_library: Path) -> None:
    with kernel_under(thread_fault_library, {}) as kernel:
        assert kernel.serving(), kernel
        cell = kernel.execute(LIVE_VIEW_WITHOUT_ITS_THREAD)
        assert cell.status == "error", kernel
        assert "could not start the live view's publisher thread: " in cell.error, kernel
        assert "errno 11, EAGAIN" in cell.error, kernel
        after = kernel.execute("print(failed, pool.closed)")
        assert after.stdout == "1 True\n", kernel
        assert kernel.shut_down() == 0, kernel


def test_a_subshell_whose_thread_cannot_start_is_an_error_reply(
        thread_fault_library: Path) -> None:
    """JupyterLab asks for a subshell when a console opens: the reply says
    which thread could not start, and the kernel serves on."""
    with kernel_under(thread_fault_library, {}) as kernel:
        assert kernel.serving(), kernel
        armed = kernel.execute("import ctypes\n"
                               "faults = ctypes.CDLL(None)\n"
                               "faults.interp_rpc_fail_pthread_create(1)")
        assert armed.status == "ok", kernel
        refused = kernel.control("create_subshell_request")
        assert refused["status"] == "error", kernel
        assert "could not start subshell " in refused["evalue"], refused
        assert "errno 11, EAGAIN" in refused["evalue"], refused
        assert kernel.control("list_subshell_request")["subshell_id"] == [], kernel
        after = kernel.execute("print(faults.interp_rpc_pthread_create_failures())")
        assert after.stdout == "1\n", kernel
        assert kernel.control("create_subshell_request")["status"] == "ok", kernel
        assert len(kernel.control("list_subshell_request")["subshell_id"]) == 1, kernel
        assert kernel.shut_down() == 0, kernel
