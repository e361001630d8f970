"""close() is bounded, and no worker process outlives its pool."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from process_support import alive, dedent, run_python, wait_ended
from support import wait_until

from interp_rpc import PoolClosedError, ProcessPool, WorkerDiedError


def test_close_waits_for_queued_calls_then_every_worker_exits(
        make_process_pool: Callable[..., ProcessPool]) -> None:
    pool = make_process_pool(workers=2)
    pids = pool.worker_pids()
    futures = [pool.submit("processtasks.sleep_then", 0.05, i) for i in range(6)]
    pool.close()
    assert [f.result() for f in futures] == list(range(6))
    assert not any(alive(p) for p in pids)
    assert [w.state for w in pool.status()] == ["stopped", "stopped"]
    with pytest.raises(PoolClosedError):
        pool.call("processtasks.pid")


def test_close_with_a_timeout_terminates_running_calls(
        make_process_pool: Callable[..., ProcessPool]) -> None:
    pool = make_process_pool(workers=1)
    running = pool.submit("processtasks.sleep_then", 600)
    queued = pool.submit("processtasks.sleep_then", 0)
    pids = pool.worker_pids()
    pool.close(timeout=0.2)
    with pytest.raises(WorkerDiedError, match=r"terminated by close\(timeout=0.2\)"):
        running.result(timeout=30)
    assert queued.cancelled()
    assert not any(alive(p) for p in pids)


def test_close_without_waiting_cancels_what_is_queued(
        make_process_pool: Callable[..., ProcessPool]) -> None:
    pool = make_process_pool(workers=1)
    first = pool.submit("processtasks.sleep_then", 0.3, "ran")
    wait_until(lambda: pool.status()[0].state == "busy")
    queued = [pool.submit("processtasks.sleep_then", 0) for _ in range(3)]
    pool.close(wait=False)
    assert first.result() == "ran"
    assert all(f.cancelled() for f in queued)


def test_shutdown_without_waiting_returns_and_workers_still_exit(
        make_process_pool: Callable[..., ProcessPool]) -> None:
    pool = make_process_pool(workers=2)
    pids = pool.worker_pids()
    future = pool.submit("processtasks.sleep_then", 0.2, "done")
    pool.shutdown(wait=False)
    assert future.result(timeout=30) == "done"
    wait_ended(pids)


def test_a_pool_left_open_at_exit_ends_its_workers(tmp_path: Path) -> None:
    script = tmp_path / "left_open.py"
    script.write_text(dedent("""
        from interp_rpc import ProcessPool
        pool = ProcessPool(workers=2)
        print(*pool.worker_pids())
        pool.submit("processtasks.sleep_then", 600)
    """))
    done = run_python([str(script)], tmp_path, timeout=60)
    assert done.returncode == 0, done.stderr
    wait_ended([int(p) for p in done.stdout.split()])


def test_workers_exit_when_the_parent_is_killed(tmp_path: Path) -> None:
    script = tmp_path / "killed.py"
    script.write_text(dedent("""
        import sys, time
        from interp_rpc import ProcessPool
        if __name__ == "__main__":
            pool = ProcessPool(workers=2)
            pool.submit("processtasks.sleep_then", 600)
            print(*pool.worker_pids(), flush=True)
            time.sleep(600)
    """))
    env_path = ":".join([str(Path(__file__).parent), *[p for p in sys.path if p]])
    parent = subprocess.Popen([sys.executable, str(script)], cwd=tmp_path, text=True,
                              stdout=subprocess.PIPE, env={**os.environ, "PYTHONPATH": env_path})
    try:
        assert parent.stdout is not None
        pids = [int(p) for p in parent.stdout.readline().split()]
        assert len(pids) == 2 and all(alive(p) for p in pids)
        parent.send_signal(signal.SIGKILL)
        parent.wait()
        wait_ended(pids, "the workers of a SIGKILLed parent ending")
    finally:
        parent.kill()
        parent.wait()
