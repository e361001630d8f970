"""%parallel_pool --processes: the notebook's pool as worker processes, and
what only they do there (numpy, a timeout that stops its map). The magics'
behaviour case by case on every kind of pool is test_both_pools_magics.py's."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell
from shell_support import Run, cell_runner, shell_with_extension
from support import FIXTURES, wait_until

from interp_rpc import CallTimeoutError, InterpreterPool, PoolInitError, ProcessPool
from interp_rpc.notebook import current_pool

pytestmark = pytest.mark.timeout(300)

INIT = f"import sys; sys.path.insert(0, {str(FIXTURES)!r}); import pooltasks"
#: Upper bound for a worker process to be replaced; only reached on failure.
REPLACED_LIMIT = 60.0


@pytest.fixture(scope="module")
def shell() -> Iterator[InteractiveShell]:
    yield from shell_with_extension()


@pytest.fixture
def run(shell: InteractiveShell, capsys: pytest.CaptureFixture[str]) -> Run:
    return cell_runner(shell, capsys)


@pytest.mark.parametrize(("line", "message"), [
    ("--local --processes", "--local and --processes name different pools"),
    ("--processes --dask local:2", "--processes and --dask name different pools"),
])
def test_two_kinds_of_pool_at_once_are_refused(run: Run, line: str, message: str) -> None:
    ran = run(f"%parallel_pool {line}")
    assert isinstance(ran.error, UsageError), ran.shown
    assert message in str(ran.error)


def test_kill_on_timeout_is_only_for_processes(run: Run) -> None:
    assert run("%parallel_pool --local -n 1").error is None
    ran = run("%parallel_pool --kill-on-timeout")
    assert isinstance(ran.error, UsageError), ran.shown
    assert "add --processes" in str(ran.error)
    assert type(current_pool()) is InterpreterPool


def test_processes_and_local_switch_the_kind_and_keep_the_options(run: Run) -> None:
    ran = run(f"%parallel_pool --local -n 2 --init {INIT!r}")
    assert ran.error is None, ran.shown
    ran = run("%parallel_pool --processes")
    assert ran.error is None, ran.shown
    pool = current_pool()
    assert type(pool) is ProcessPool and pool.workers == 2
    assert os.getpid() not in pool.worker_pids()
    # The status table shows, as for any pool.
    assert ran.out.count("idle") == 2, ran.out
    # init= came along: its module is importable in the processes.
    ran = run("found = %parallel_map pooltasks.square range(4)")
    assert ran.error is None, ran.shown
    assert InteractiveShell.instance().user_ns["found"] == [0, 1, 4, 9]
    # The same --processes again keeps the pool.
    assert run("%parallel_pool --processes").error is None
    assert current_pool() is pool
    assert run("%parallel_pool --local").error is None
    assert type(current_pool()) is InterpreterPool and current_pool().workers == 2
    assert pool.closed


def test_a_pool_of_processes_that_fails_to_start_keeps_the_current_one(run: Run) -> None:
    assert run("%parallel_pool --local -n 1").error is None
    current = current_pool()
    ran = run("%parallel_pool --processes --init \"raise ValueError('no setup')\"")
    assert isinstance(ran.error, PoolInitError), ran.shown
    assert "ValueError: no setup" in ran.shown
    assert "the current one (1 workers) is still in use" in ran.err
    assert current_pool() is current and not current.closed
    assert run("%parallel_map abs [-1]").error is None


def test_numpy_runs_in_a_map_and_its_errors_keep_their_class(run: Run) -> None:
    pytest.importorskip("numpy")
    assert run("%parallel_pool --processes -n 2").error is None
    ran = run("import numpy\n"
              "def inverse_trace(n):\n"
              "    import numpy\n"
              "    return float(numpy.trace(numpy.linalg.inv(numpy.eye(2) * n)))\n"
              "found = %parallel_map inverse_trace [1, 2, 4]\n"
              "try:\n"
              "    %parallel_map inverse_trace [1, 0]\n"
              "except numpy.linalg.LinAlgError as error:\n"
              "    caught = error\n")
    assert ran.error is None, ran.shown
    namespace = InteractiveShell.instance().user_ns
    assert namespace["found"] == [2.0, 1.0, 0.5]
    assert "Singular matrix" in str(namespace["caught"])
    assert namespace["caught"].item_index == 1


def test_a_timeout_that_kills_leaves_no_stuck_worker(run: Run) -> None:
    ran = run(f"%parallel_pool --processes -n 2 --kill-on-timeout --init {INIT!r}")
    assert ran.error is None, ran.shown
    pool = current_pool()
    assert isinstance(pool, ProcessPool)
    before = set(pool.worker_pids())
    ran = run("%parallel_map --timeout 0.5 --chunksize 1 pooltasks.sleep_then [60, 60]")
    assert isinstance(ran.error, CallTimeoutError), ran.shown
    assert ran.error.stopped, ran.shown
    # Both workers were replaced, and are idle again: none still sleeps.
    wait_until(lambda: [w.state for w in pool.status()] == ["idle", "idle"],
               REPLACED_LIMIT, "both workers idle again")
    assert not before & set(pool.worker_pids())
    ran = run("found = %parallel_map pooltasks.square [3]")
    assert ran.error is None and InteractiveShell.instance().user_ns["found"] == [9]
    # --no-kill-on-timeout: a new pool whose timeouts only stop the waiting.
    assert run("%parallel_pool --no-kill-on-timeout").error is None
    assert current_pool() is not pool and pool.closed
