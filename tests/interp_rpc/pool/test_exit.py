"""A program that exits while a worker is stuck exits promptly, with its own exit code."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from support import FIXTURES

CRASH_SIGNS = ("Fatal Python error", "Aborted", "Segmentation", "core dumped",
               "Assertion", "terminate called")

SCRIPT = '''
import sys
import time

ORIGINAL_EXIT = sys.exit

sys.path.insert(0, {fixtures!r})

from interp_rpc import InterpreterPool


def spin_forever():
    while True:
        pass


def leave(code):
    sys.exit(code)


if __name__ == "__main__":
    how, ending = sys.argv[1], sys.argv[2]
    pool = InterpreterPool(workers=2, init="import pooltasks")
    assert pool.call("pooltasks.add", 1, 2) == 3
    if how == "sleep":
        pool.submit("time.sleep", 60)
    else:
        pool.submit(spin_forever)  # a function of this script, imported by the worker
    while not any(w.state == "busy" for w in pool.status()):
        time.sleep(0.01)
    print("stuck worker running", flush=True)
    print("sys.exit untouched:", sys.exit is ORIGINAL_EXIT, flush=True)
    if ending == "exit":
        sys.exit(3)
    if ending == "SystemExit":
        raise SystemExit(3)
    if ending == "builtin-exit":
        exit(3)
    if ending == "message":
        sys.exit("goodbye from the script")
    if ending == "KeyboardInterrupt":
        raise KeyboardInterrupt
    if ending == "in-function":
        leave(4)
    raise RuntimeError("uncaught at top level")
'''


@pytest.fixture
def script(tmp_path: Path) -> Path:
    path = tmp_path / "stuck_at_exit.py"
    path.write_text(SCRIPT.format(fixtures=str(FIXTURES)))
    return path


def run(script: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(script), *args], capture_output=True, text=True,
                          timeout=15, cwd=script.parent)


def assert_no_crash(result: subprocess.CompletedProcess[str]) -> None:
    for sign in CRASH_SIGNS:
        assert sign not in result.stderr, result.stderr
    assert "stuck worker running" in result.stdout, result.stderr


# At exit, CPython's finalize_subinterpreters() ends every interpreter still
# there, under any thread running in it; a worker that touched its interpreter
# after that used to crash the process (gdb: a spinning worker in
# _Py_HandlePending, a worker returning from sleep in PyEval_RestoreThread).
# These tests cover both kinds of stuck worker, and a call that ends while the
# program finalizes.
@pytest.mark.parametrize("how", ["sleep", "spin"])
def test_sys_exit_with_a_stuck_worker_keeps_its_exit_code(script: Path, how: str) -> None:
    result = run(script, how, "exit")
    assert_no_crash(result)
    assert result.returncode == 3, result.stderr


# Regression: the status was taken from a sys.exit() monkeypatch, so
# `raise SystemExit(3)` and `exit(3)` ended with 0.
@pytest.mark.parametrize(("ending", "code"), [("SystemExit", 3), ("builtin-exit", 3),
                                              ("in-function", 4), ("message", 1)])
@pytest.mark.parametrize("how", ["sleep", "spin"])
def test_every_way_to_exit_keeps_its_status(script: Path, how: str, ending: str,
                                            code: int) -> None:
    result = run(script, how, ending)
    assert_no_crash(result)
    assert result.returncode == code, result.stderr
    assert "sys.exit untouched: True" in result.stdout
    if ending == "message":
        assert result.stderr.count("goodbye from the script") == 1, result.stderr


def test_keyboard_interrupt_with_a_stuck_worker_ends_by_sigint(script: Path) -> None:
    result = run(script, "sleep", "KeyboardInterrupt")
    assert_no_crash(result)
    assert result.returncode == -signal.SIGINT, result.stderr
    assert "KeyboardInterrupt" in result.stderr


@pytest.mark.parametrize("how", ["sleep", "spin"])
def test_uncaught_exception_with_a_stuck_worker_exits_with_1(script: Path, how: str) -> None:
    result = run(script, how, "raise")
    assert_no_crash(result)
    assert result.returncode == 1, result.stderr
    assert "RuntimeError: uncaught at top level" in result.stderr


def test_exit_with_an_idle_open_pool_is_quiet(tmp_path: Path) -> None:
    path = tmp_path / "idle_at_exit.py"
    path.write_text(textwrap.dedent(f'''
        import sys
        sys.path.insert(0, {str(FIXTURES)!r})
        from interp_rpc import InterpreterPool

        if __name__ == "__main__":
            pool = InterpreterPool(workers=2, init="import pooltasks")
            print(pool.call("pooltasks.add", 40, 2))
            sys.exit(0)
    '''))
    result = run(path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "42"
    assert result.stderr == ""


ENDS_DURING_EXIT = """
import sys
import time

sys.path.insert(0, {fixtures!r})

from interp_rpc import InterpreterPool


class SlowToFinalize:
    # Any program whose own teardown takes a moment (flushing, joining, closing).
    def __del__(self):
        time.sleep(2)


if __name__ == "__main__":
    pool = InterpreterPool(workers=2, init="import pooltasks")
    # Stuck for longer than the pool's exit timeout (1 s), but it does end,
    # while the interpreter is still finalizing.
    pool.submit("time.sleep", 1.5)
    while not any(w.state == "busy" for w in pool.status()):
        time.sleep(0.01)
    print("stuck worker running", flush=True)
    keeper = SlowToFinalize()
    sys.exit(3)
"""


def test_a_stuck_call_ending_during_interpreter_exit_does_not_crash(tmp_path: Path) -> None:
    path = tmp_path / "ends_during_exit.py"
    path.write_text(ENDS_DURING_EXIT.format(fixtures=str(FIXTURES)))
    result = run(path)
    assert_no_crash(result)
    assert result.returncode == 3, result.stderr


GARBAGE_COLLECTED = """
import gc
import sys

sys.path.insert(0, {fixtures!r})

from interp_rpc import CallTimeoutError, InterpreterPool


def leave_a_call_running():
    pool = InterpreterPool(workers=1, init="import pooltasks")
    try:
        pool.call("time.sleep", 2.5, timeout=0.2)
    except CallTimeoutError:
        print("call still running", flush=True)
    # The pool is never closed: it is collected when this returns.


if __name__ == "__main__":
    leave_a_call_running()
    gc.collect()
    sys.exit(5)
"""


def test_a_collected_pool_with_a_running_call_is_stopped_safely_at_exit(tmp_path: Path) -> None:
    # Regression: a collected pool detached its threads and was forgotten, so
    # CPython's finalization destroyed the interpreter under the running call.
    path = tmp_path / "collected.py"
    path.write_text(GARBAGE_COLLECTED.format(fixtures=str(FIXTURES)))
    result = subprocess.run([sys.executable, str(path)], capture_output=True, text=True,
                            timeout=30, cwd=tmp_path)
    for sign in CRASH_SIGNS:
        assert sign not in result.stderr, result.stderr
    assert "call still running" in result.stdout, result.stderr
    assert "remaining subinterpreters" not in result.stderr
    assert result.returncode == 5, result.stderr


INIT_TIMED_OUT = """
import sys

from interp_rpc import InterpreterPool, PoolInitError

if __name__ == "__main__":
    try:
        InterpreterPool(workers=2, init="import time; time.sleep(2.5)", init_timeout=0.2)
    except PoolInitError as exc:
        print("init timed out", flush=True)
    sys.exit(6)
"""


def test_a_pool_whose_init_timed_out_is_stopped_safely_at_exit(tmp_path: Path) -> None:
    # Regression: a pool whose init failed was never registered for the exit
    # routine; its workers were still in init when CPython finalized.
    path = tmp_path / "init_timed_out.py"
    path.write_text(INIT_TIMED_OUT)
    result = subprocess.run([sys.executable, str(path)], capture_output=True, text=True,
                            timeout=30, cwd=tmp_path)
    for sign in CRASH_SIGNS:
        assert sign not in result.stderr, result.stderr
    assert "init timed out" in result.stdout, result.stderr
    assert "remaining subinterpreters" not in result.stderr
    assert result.returncode == 6, result.stderr


def test_a_short_call_left_running_at_exit_finishes(tmp_path: Path) -> None:
    # Work submitted and never waited for still runs at exit, queued work
    # too, as with the stdlib executors (CPython's test_interpreter_shutdown,
    # whose call takes 1 s: ours get EXIT_TIMEOUT, 1 s, in all, so these are
    # shorter). Regression: queued calls were cancelled at once.
    path = tmp_path / "left_running.py"
    path.write_text(textwrap.dedent(f'''
        import sys
        sys.path.insert(0, {str(FIXTURES)!r})
        from interp_rpc import InterpreterPool

        if __name__ == "__main__":
            pool = InterpreterPool(workers=1, init="import pooltasks")
            pool.submit("pooltasks.sleep_then", 0.2)
            pool.submit(print, "apple", flush=True)  # queued behind it
    '''))
    result = run(path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "apple"
    assert result.stderr == ""


def test_submit_after_interpreter_exit_raises_runtime_error(tmp_path: Path) -> None:
    # CPython's test_submit_after_interpreter_shutdown, for InterpreterPool:
    # an atexit function registered before interp_rpc was imported runs after
    # interp-rpc closed every pool.
    path = tmp_path / "submit_at_exit.py"
    path.write_text(textwrap.dedent(f'''
        import atexit
        import sys
        sys.path.insert(0, {str(FIXTURES)!r})

        @atexit.register
        def run_last():
            try:
                pool.submit("pooltasks.add", 1, 2)
            except RuntimeError as exc:
                print(type(exc).__name__, "|", exc, flush=True)

        from interp_rpc import InterpreterPool

        if __name__ == "__main__":
            pool = InterpreterPool(workers=2, init="import pooltasks")
            assert pool.submit("pooltasks.add", 40, 2).result() == 42
    '''))
    result = run(path)
    assert result.returncode == 0, result.stderr
    name, _, message = result.stdout.strip().partition(" | ")
    assert name == "PoolClosedError"
    assert "closed" in message and "pooltasks.add" in message
    assert result.stderr == ""
