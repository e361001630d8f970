"""A worker process that dies fails only the calls it held, and is replaced."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable

import pytest
from process_support import shared_memory_names, wait_ended, worker_processes
from support import wait_until

from interp_rpc import PoolInitError, ProcessPool, WorkerDiedError


@pytest.mark.parametrize(("target", "args", "named"), [
    ("processtasks.exit_with", (3,), "exited with code 3"),
    ("processtasks.segfault", (), "SIGSEGV"),
])
def test_a_dying_call_fails_alone_and_the_pool_serves_on(
        process_pool: ProcessPool, target: str, args: tuple[int, ...], named: str) -> None:
    slow = process_pool.submit("processtasks.sleep_then", 0.5, "survived")
    with pytest.raises(WorkerDiedError, match=named) as caught:
        process_pool.call(target, *args)
    assert caught.value.target == target
    assert slow.result() == "survived"
    assert process_pool.call("processtasks.sleep_then", 0, 7) == 7
    assert not process_pool.broken
    # The replacement starts a Python: under load the call above may have
    # run on the other worker before it was up, so wait for it, not assume.
    wait_until(lambda: [w.state for w in process_pool.status()] == ["idle", "idle"],
               what="the replacement worker to be ready")


def test_sigkill_from_outside_names_the_signal(process_pool: ProcessPool) -> None:
    future = process_pool.submit("processtasks.sleep_then", 60)
    wait_until(lambda: any(w.state == "busy" for w in process_pool.status()))
    busy = next(w.index for w in process_pool.status() if w.state == "busy")
    victim = process_pool.worker_pids()[busy]
    os.kill(victim, signal.SIGKILL)
    with pytest.raises(WorkerDiedError, match="SIGKILL"):
        future.result(timeout=30)
    wait_ended([victim])
    assert process_pool.call("processtasks.pid") != victim


def test_a_hundred_crashes_in_a_row_each_fail_one_call_and_leave_nothing(
        make_process_pool: Callable[..., ProcessPool]) -> None:
    before_workers = worker_processes()
    before_shm = shared_memory_names()
    pool = make_process_pool(workers=2)
    targets = ["processtasks.exit_with", "processtasks.segfault"] * 50
    futures = [pool.submit(t, 1) if t.endswith("exit_with") else pool.submit(t)
               for t in targets]
    died = 0
    for future in futures:
        with pytest.raises(WorkerDiedError, match=r"exited with code 1|SIGSEGV"):
            future.result(timeout=120)
        died += 1
    assert died == 100
    assert list(pool.map("processtasks.sleep_then", [0] * 4, [1, 2, 3, 4])) == [1, 2, 3, 4]
    pids = pool.worker_pids()
    pool.close()
    wait_ended(pids)
    wait_until(lambda: worker_processes() <= before_workers, what="every replaced worker reaped")
    assert shared_memory_names() <= before_shm


def test_a_worker_that_dies_in_init_fails_the_pool() -> None:
    with pytest.raises(PoolInitError, match="exited with code 5"):
        ProcessPool(workers=2, init="import os; os._exit(5)")


def test_a_replacement_runs_init_and_its_pid_replaces_the_dead_one(
        make_process_pool: Callable[..., ProcessPool]) -> None:
    pool = make_process_pool(workers=1, init="READY = 'set by init'")
    dead = pool.worker_pids()
    with pytest.raises(WorkerDiedError):
        pool.call("processtasks.exit_with", 4)
    assert dead[0] not in pool.worker_pids()
    assert pool.call("pooltasks.main_attr", "READY") == "set by init"
    assert pool.worker_pids() not in ([], dead)


def test_close_while_a_replacement_is_starting(
        make_process_pool: Callable[..., ProcessPool], monkeypatch: pytest.MonkeyPatch) -> None:
    """close() comes while the reader of a dead worker's replacement is
    being started: it waits for that reader rather than failing to join it."""
    pool = make_process_pool(workers=1)
    start = threading.Thread.start
    starting = threading.Event()

    def slow_start(thread: threading.Thread) -> None:
        if thread.name.startswith("interp-rpc process worker"):
            starting.set()
            time.sleep(0.5)  # the scheduler is slow to get to it
        start(thread)

    monkeypatch.setattr(threading.Thread, "start", slow_start)
    with pytest.raises(WorkerDiedError):
        pool.call("processtasks.exit_with", 3)
    assert starting.wait(30)
    pool.close(timeout=30)
