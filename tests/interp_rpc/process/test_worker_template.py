"""The worker template (process/template.py, process/spawn.py): workers are
forked from it, yet each sees what a process its caller started at that
moment would see; it reports how each worker ended, is replaced when it
dies or what it started from changes, and never outlives its caller."""

from __future__ import annotations

import os
import signal
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from process_support import alive, dedent, run_python, wait_ended, worker_processes
from support import wait_until

from interp_rpc import ProcessPool, WorkerDiedError
from interp_rpc.process import spawn

Make = Callable[..., ProcessPool]


def _template_of(pool: ProcessPool) -> int:
    parent = pool.call("os.getppid")
    assert isinstance(parent, int)
    return parent


def _force_new_template(monkeypatch: pytest.MonkeyPatch, mark: str) -> None:
    """A changed environment: the next worker comes from a new template."""
    monkeypatch.setenv("INTERP_RPC_TEST_TEMPLATE_MARK", mark)


def test_pools_share_one_template_while_nothing_changes(make_process_pool: Make) -> None:
    first = make_process_pool(workers=2)
    second = make_process_pool(workers=1)
    template = spawn.template_pid()
    assert template is not None and template != os.getpid()
    assert {_template_of(first), _template_of(second)} == {template}
    assert set(first.worker_pids()).isdisjoint(second.worker_pids())


def test_a_changed_environment_reaches_new_workers_through_a_new_template(
        make_process_pool: Make, monkeypatch: pytest.MonkeyPatch) -> None:
    _force_new_template(monkeypatch, "one")
    first = make_process_pool(workers=1)
    assert first.call("os.environ.get", "INTERP_RPC_TEST_TEMPLATE_MARK") == "one"
    old_template = _template_of(first)
    _force_new_template(monkeypatch, "two")
    second = make_process_pool(workers=1)
    assert second.call("os.environ.get", "INTERP_RPC_TEST_TEMPLATE_MARK") == "two"
    assert _template_of(second) != old_template
    # The first pool's worker is unchanged; the retired template exits
    # once that worker, its last, has ended.
    assert first.call("os.environ.get", "INTERP_RPC_TEST_TEMPLATE_MARK") == "one"
    assert alive(old_template)
    first.close()
    wait_ended([old_template], what="the retired template exiting after its last worker")


def test_a_worker_starts_in_the_callers_directory_and_umask_of_that_moment(
        make_process_pool: Make, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    pool = make_process_pool(workers=1)
    template = _template_of(pool)
    monkeypatch.chdir(tmp_path)
    old_umask = os.umask(0o027)
    try:
        later = make_process_pool(workers=1)
    finally:
        os.umask(old_umask)
    assert _template_of(later) == template  # the same template: applied per worker
    assert later.call("os.getcwd") == str(tmp_path)
    assert later.call("processtasks.umask") == 0o027
    assert pool.call("os.getcwd") != str(tmp_path)
    assert pool.call("processtasks.umask") == old_umask


def test_a_worker_writes_to_the_callers_stdout_as_it_was_when_the_worker_started(
        tmp_path: Path) -> None:
    script = tmp_path / "redirected.py"
    script.write_text(dedent("""
        import os
        from interp_rpc import ProcessPool

        with ProcessPool(workers=1) as pool:
            pool.call("os.getpid")  # the template runs before the redirection
        saved = os.dup(1)
        with open("captured.txt", "wb") as captured:
            os.dup2(captured.fileno(), 1)
        with ProcessPool(workers=1) as pool:
            pool.call("os.write", 1, b"written by the worker\\n")
        os.dup2(saved, 1)
        print("the caller's stdout again")
    """))
    done = run_python([str(script)], tmp_path)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "captured.txt").read_bytes() == b"written by the worker\n"
    assert done.stdout == "the caller's stdout again\n"


def test_the_template_and_its_workers_end_with_a_killed_caller(tmp_path: Path) -> None:
    script = tmp_path / "killed.py"
    script.write_text(dedent("""
        import os, signal
        from interp_rpc import ProcessPool
        from interp_rpc.process import spawn

        pool = ProcessPool(workers=2)
        print(spawn.template_pid(), *pool.worker_pids(), flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
    """))
    done = run_python([str(script)], tmp_path)
    assert done.returncode == -signal.SIGKILL, done.stderr
    pids = [int(p) for p in done.stdout.split()]
    assert len(pids) == 3
    wait_ended(pids, what="the template and the workers ending with their caller")


def test_a_killed_template_is_replaced_and_its_workers_go_on(make_process_pool: Make) -> None:
    pool = make_process_pool(workers=1)
    template = _template_of(pool)
    worker = pool.worker_pids()[0]
    os.kill(template, signal.SIGKILL)
    wait_ended([template])
    assert pool.call("processtasks.pid") == worker  # its worker goes on serving
    # Nobody is left to report how that worker ends: the error says so.
    with pytest.raises(WorkerDiedError, match="its exit status is unknown: the worker "
                                              "template that started it ended first"):
        pool.call("processtasks.exit_with", 3)
    assert pool.call("processtasks.pid") != worker
    assert _template_of(pool) not in (template, 1)
    # And the new template reports exit statuses again.
    with pytest.raises(WorkerDiedError, match="exited with code 3"):
        pool.call("processtasks.exit_with", 3)


def test_a_template_changed_on_disk_or_a_new_site_file_makes_a_new_template(
        make_process_pool: Make, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    site_directory = tmp_path / "site-packages"
    site_directory.mkdir()
    source = tmp_path / "main.py"
    source.write_text("")
    monkeypatch.setattr(spawn, "_site_directories", lambda: [str(site_directory)])
    monkeypatch.setattr(spawn, "TEMPLATE_SOURCES", (source,))
    _force_new_template(monkeypatch, "site")
    first = _template_of(make_process_pool(workers=1))
    assert _template_of(make_process_pool(workers=1)) == first
    (site_directory / "editable.pth").write_text(str(tmp_path))  # as pip install -e does
    second = _template_of(make_process_pool(workers=1))
    assert second != first
    stat = source.stat()
    os.utime(source, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    assert _template_of(make_process_pool(workers=1)) not in (first, second)


def test_ctrl_c_while_a_worker_starts_leaves_no_process(
        monkeypatch: pytest.MonkeyPatch, make_process_pool: Make) -> None:
    _force_new_template(monkeypatch, "interrupted")
    make_process_pool(workers=1)
    template = spawn.template_pid()
    before = worker_processes()
    answers = 0

    def interrupted_second(*args: Any) -> Any:
        nonlocal answers
        answers += 1
        if answers == 2:  # the first worker has started, the second is asked for
            raise KeyboardInterrupt
        return socket.recv_fds(*args)

    monkeypatch.setattr(spawn, "recv_fds", interrupted_second)
    with pytest.raises(KeyboardInterrupt):
        ProcessPool(workers=2)
    monkeypatch.setattr(spawn, "recv_fds", socket.recv_fds)
    assert answers == 2
    # The worker that had started ends with its half-made pool; the
    # exchange cut short retired that template (it serves the first pool
    # still), and the worker it forked meanwhile finds its pipes closed.
    wait_until(lambda: worker_processes() <= before,
               what="the workers of a pool whose start was interrupted ending")
    pool = make_process_pool(workers=1)
    assert pool.call("processtasks.pid") > 0
    assert spawn.template_pid() not in (template, None)


@pytest.mark.skipif(os.environ.get("INTERP_RPC_TEST_SANITIZER") == "thread",
                    reason="TSan stops a process that starts a thread after a fork of a "
                    "multi-threaded process (the pool's threads), which is this test's case")
def test_a_forked_caller_starts_its_own_template(tmp_path: Path) -> None:
    script = tmp_path / "forked.py"
    script.write_text(dedent("""
        import os
        from interp_rpc import ProcessPool
        from interp_rpc.process import spawn

        with ProcessPool(workers=1) as pool:
            parent_template = pool.call("os.getppid")
            child = os.fork()
            if child == 0:
                with ProcessPool(workers=1) as own:
                    mine = own.call("os.getppid")
                os._exit(0 if mine not in (parent_template, os.getpid()) else 1)
            _, status = os.waitpid(child, 0)
            assert pool.call("os.getppid") == parent_template
        print(os.waitstatus_to_exitcode(status))
    """))
    done = run_python(["-W", "ignore::DeprecationWarning", str(script)], tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "0\n"
