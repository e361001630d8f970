"""The %parallel magics on a dask cluster (%parallel_pool --dask), as a user
types them in an IPython shell of this process. tests/notebooks runs them
through both kernels."""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("distributed")

from dask_support import CLUSTER_LIMIT, INIT, closed_port, run_blocked_map
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell
from shell_support import (
    Run,
    Shown,
    cell_runner,
    check_errors_collect,
    notebook_frontend,
    shell_with_extension,
    updates_of,
)
from support import wait_until

from interp_rpc import InterpreterPool, RemoteError
from interp_rpc.dask import ClusterPool, ClusterWorker
from interp_rpc.dask._chunking import IN_FLIGHT_PER_SLOT
from interp_rpc.display.errors import worker_ranges
from interp_rpc.notebook import ParallelCellError, current_pool, live
from interp_rpc.notebook.polled_view import WATCH_REFRESH_SECONDS

pytestmark = pytest.mark.timeout(300)

@pytest.fixture(scope="module")
def shell() -> Iterator[InteractiveShell]:
    yield from shell_with_extension(f"--dask local:2 --init {INIT!r}")


@pytest.fixture
def run(shell: InteractiveShell, capsys: pytest.CaptureFixture[str]) -> Run:
    return cell_runner(shell, capsys)


@pytest.fixture
def cluster_pool(shell: InteractiveShell) -> ClusterPool:
    """The notebook's pool, on a LocalCluster of 2 processes again if a test
    switched it."""
    pool = current_pool()
    if not isinstance(pool, ClusterPool) or len(pool.processes()) != 2:
        shell.run_line_magic("parallel_pool", f"--dask local:2 --init {INIT!r}")
        pool = current_pool()
    assert isinstance(pool, ClusterPool)
    return pool


def pids(pool: ClusterPool) -> set[int]:
    return {pid for _, _, pid, _ in pool.processes()}


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


# ------------------------------------------------------------------ running

def test_map_and_parallel_run_in_every_process(cluster_pool: ClusterPool, run: Run) -> None:
    ran = run("%%parallel\nimport os\ndef where(x):\n    return (os.getpid(), x * 2)\n")
    assert ran.error is None, ran.shown
    ran = run("found = %parallel_map --chunksize 1 where range(40)")
    assert ran.error is None, ran.shown
    found = InteractiveShell.instance().user_ns["found"]
    assert [doubled for _, doubled in found] == [i * 2 for i in range(40)]
    assert {pid for pid, _ in found} == pids(cluster_pool)
    ran = run("%parallel print(os.getpid() > 0)")
    assert ran.out == "[workers 0-1]\nTrue\n"


def test_a_function_of_the_notebook_runs_on_the_cluster(cluster_pool: ClusterPool,
                                                        run: Run) -> None:
    ran = run("def triple(x):\n    return 3 * x\ntripled = %parallel_map triple range(10)")
    assert ran.error is None, ran.shown
    assert InteractiveShell.instance().user_ns["tripled"] == [3 * i for i in range(10)]


def test_targets_picks_subinterpreters_by_their_cluster_index(cluster_pool: ClusterPool,
                                                              run: Run) -> None:
    last = max(int(w) for w in cluster_pool.subinterpreters())
    ran = run(f"%parallel --targets {last} print('only me')")
    assert ran.out == f"[worker {last}]\nonly me\n"
    ran = run(f"%parallel --targets {last + 1} print('nobody')")
    assert isinstance(ran.error, UsageError)
    assert f"--targets names worker {last + 1}" in str(ran.error)


def test_a_cell_error_names_each_process_once(cluster_pool: ClusterPool, run: Run) -> None:
    ran = run("%%parallel\nprint('before')\nraise ValueError('on the cluster')\n")
    assert isinstance(ran.error, ParallelCellError)
    assert "[workers 0-1]\nbefore\n" in ran.out
    assert set(ran.error.errors) == {0, 1}
    for index, error in ran.error.errors.items():
        assert isinstance(error, RemoteError)
        assert error.remote_message == "on the cluster"
        assert error.worker == index
    assert ran.shown.count("ValueError: on the cluster") == 1, ran.shown
    assert "RemoteError in workers 0-1 · %%parallel" in ran.shown


def test_a_failed_map_keeps_the_results_before_the_failed_item(cluster_pool: ClusterPool,
                                                               run: Run) -> None:
    from interp_rpc import MISSING

    ran = run("%parallel_map -o roots --chunksize 3 math.sqrt [1.0, 4.0, 9.0, 16.0, -1.0, 25.0]")
    assert isinstance(ran.error, RemoteError)
    assert ran.error.item_index == 4
    assert InteractiveShell.instance().user_ns["roots"] == [1.0, 2.0, 3.0, 4.0, MISSING, MISSING]
    assert "roots: the 4 results before the failed item are stored" in ran.err


def test_status_groups_subinterpreters_by_process(cluster_pool: ClusterPool, run: Run) -> None:
    ran = run("%parallel_status --watch 0")
    assert ran.error is None, ran.shown
    # Without a frontend, IPython prints the text/plain of the table.
    for _, host, pid, _ in cluster_pool.processes():
        assert f"{host} · process {pid}" in ran.out, ran.out
    assert ran.out.count("idle") == 2, ran.out


# ----------------------------------------------------- %parallel_status --watch

@pytest.fixture
def frontend(shell: InteractiveShell, monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Shown]]:
    yield from notebook_frontend(shell, monkeypatch)


def watched(shown: list[Shown]) -> tuple[str, list[str]]:
    """(display id of the watch's table, the text of each of its updates)."""
    (first,) = [s for s in shown if not s.update and s.display_id]
    assert first.display_id is not None
    return first.display_id, [s.data["text/plain"] for s in shown
                              if s.update and s.display_id == first.display_id]



def test_a_watch_updates_the_table_in_the_background_until_stopped(
        cluster_pool: ClusterPool, run: Run, frontend: list[Shown], tmp_path: Path) -> None:
    marks, gate = tmp_path / "marks", tmp_path / "gate"
    marks.mkdir()
    # Stuck only after a few refreshes, so that busy frames come first.
    assert run(f"%parallel_pool --stuck-after {4 * WATCH_REFRESH_SECONDS:g}").error is None
    try:
        ran = run("%parallel_status --watch 120")
        assert ran.error is None, ran.shown
        # The cell returned with the table shown; its thread updates it.
        display_id, _ = watched(frontend)
        assert "idle" in frontend[-1].data["text/plain"] and not updates_of(frontend,
                                                                             display_id)
        outcome: dict[str, Any] = {}
        mapper = run_blocked_map(cluster_pool, marks, gate, outcome)
        try:
            wait_until(lambda: any(t.count("stuck") == 2 for t in updates_of(frontend,
                                                                              display_id)),
                       CLUSTER_LIMIT, "both processes' subinterpreters shown stuck")
        finally:
            gate.touch()
            mapper.join()
        assert outcome["result"] == [0, 1, 2, 3]
        texts = updates_of(frontend, display_id)
        # Busy before stuck, each updated in place as it runs ("running for").
        assert any(t.count("busy") == 2 for t in texts), texts
        assert len(set(texts)) == len(texts) > 2, texts
        wait_until(lambda: updates_of(frontend, display_id)[-1].count("idle") == 2,
                   CLUSTER_LIMIT, "the table to show both idle again")
    finally:
        run("%parallel_pool --stuck-after 10")
    assert run("%parallel_status --stop").error is None
    final = updates_of(frontend, display_id)
    assert "Not updated any more (stopped)" in final[-1], final[-1]
    assert final[-1].count("idle") == 2
    assert not live.stop_watch()


def test_a_watch_ends_after_its_seconds_with_its_last_table(
        cluster_pool: ClusterPool, run: Run, frontend: list[Shown]) -> None:
    assert run("%parallel_status --watch 1").error is None
    display_id, _ = watched(frontend)
    wait_until(lambda: any("Not updated any more (watched for 1 s)" in t
                           for t in updates_of(frontend, display_id)),
               CLUSTER_LIMIT, "the watch to end")
    final = updates_of(frontend, display_id)[-1]
    assert final.count("idle") == 2 and "The table is from" in final, final
    # Stopping it afterwards changes nothing.
    run("%parallel_status --stop")
    assert updates_of(frontend, display_id)[-1] == final


def test_a_failed_or_late_status_answer_keeps_the_view(
        cluster_pool: ClusterPool, run: Run, frontend: list[Shown],
        monkeypatch: pytest.MonkeyPatch) -> None:
    real_status = cluster_pool.status
    answers = {"count": 0, "in_flight": 0, "most_in_flight": 0}
    mode = {"now": "answer"}
    release = threading.Event()
    lock = threading.Lock()

    def status() -> list[Any]:
        with lock:
            answers["count"] += 1
            answers["in_flight"] += 1
            answers["most_in_flight"] = max(answers["most_in_flight"], answers["in_flight"])
        try:
            if mode["now"] == "fail":
                raise RuntimeError("the scheduler hiccuped")
            if mode["now"] == "hang":
                release.wait(CLUSTER_LIMIT)
            return real_status()
        finally:
            with lock:
                answers["in_flight"] -= 1

    monkeypatch.setattr(cluster_pool, "status", status)
    assert run("%parallel_status --watch 120").error is None
    display_id, _ = watched(frontend)
    mode["now"] = "fail"
    failed = wait_until(lambda: [t for t in updates_of(frontend, display_id)
                                 if "The pool's status failed: RuntimeError: the "
                                    "scheduler hiccuped." in t],
                        CLUSTER_LIMIT, "the failure shown")
    assert failed[0].count("idle") == 2, failed[0]  # under the last good table
    mode["now"] = "hang"
    late = wait_until(lambda: [t for t in updates_of(frontend, display_id)
                               if "s for the pool's status." in t],
                      CLUSTER_LIMIT, "the late answer shown")
    assert "Waiting" in late[0] and "The table is from" in late[0], late[0]
    asked = answers["count"]
    wait_until(lambda: len([t for t in updates_of(frontend, display_id)
                            if "s for the pool's status." in t]) >= 3,
               CLUSTER_LIMIT, "the view to go on while the answer is late")
    assert answers["count"] == asked  # nothing more asked while one is awaited
    mode["now"] = "answer"
    release.set()
    wait_until(lambda: "pool's status" not in updates_of(frontend, display_id)[-1],
               CLUSTER_LIMIT, "a good answer shown again")
    assert answers["most_in_flight"] == 1


def test_profile_shows_a_lane_per_subinterpreter_of_each_process(cluster_pool: ClusterPool,
                                                                  run: Run) -> None:
    ran = run("%parallel_map --chunksize 1 clustertasks.where range(12)")
    assert ran.error is None, ran.shown
    ran = run("%parallel_profile -o cluster_profile")
    assert ran.error is None, ran.shown
    prof = InteractiveShell.instance().user_ns["cluster_profile"]
    assert sorted(r.item for r in prof.records) == list(range(12))
    page = prof._repr_html_()
    for pid in pids(cluster_pool):
        assert f"process {pid} on" in page
    ran = run("%parallel_profile")
    assert ran.error is None, ran.shown
    assert "12 / " in ran.out and "utilization" in ran.out, ran.out
    # %%parallel: one bar in each subinterpreter of each process.
    ran = run("%parallel x = 1")
    assert ran.error is None, ran.shown
    run("%parallel_profile -o cluster_profile")
    prof = InteractiveShell.instance().user_ns["cluster_profile"]
    assert sorted(r.worker for r in prof.records) == sorted(
        int(w) for w in cluster_pool.subinterpreters())


def test_map_profile_shows_functions_of_every_process(cluster_pool: ClusterPool,
                                                      run: Run) -> None:
    ran = run("%parallel_map --profile --chunksize 2 clustertasks.where range(20)")
    assert ran.error is None, ran.shown
    assert "where" in ran.out, ran.out
    ran = run("%parallel_profile --functions -o cluster_profile")
    prof = InteractiveShell.instance().user_ns["cluster_profile"]
    assert len(prof.worker_stats) == 2


# ------------------------------------------------------------------- Ctrl-C

def interrupt_when(ready: Callable[[], object], what: str) -> threading.Thread:
    """A thread that presses Ctrl-C once ``ready()`` is true: a real SIGINT
    to the main thread, which (unlike _thread.interrupt_main) also wakes a
    wait on a lock, as a user's Ctrl-C does."""
    def interrupt() -> None:
        wait_until(ready, CLUSTER_LIMIT, what)
        signal.pthread_kill(threading.main_thread().ident or 0, signal.SIGINT)

    thread = threading.Thread(target=interrupt)
    thread.start()
    return thread


def test_ctrl_c_in_a_map_cancels_the_chunks_not_started(cluster_pool: ClusterPool, run: Run,
                                                        tmp_path: Path) -> None:
    marks, gate = tmp_path / "marks", tmp_path / "gate"
    marks.mkdir()
    total = 30
    interrupter = interrupt_when(lambda: len(list(marks.iterdir())) == 2,
                                 "an item running in each process")
    try:
        ran = run(f"%parallel_map --chunksize 1 clustertasks.block_in_item "
                  f"[({str(marks)!r}, {str(gate)!r}, i) for i in range({total})]")
    finally:
        interrupter.join()
        gate.touch()
    assert isinstance(ran.error, KeyboardInterrupt), ran.shown
    assert f"Interrupted: 0 of {total} items had completed" in ran.err
    wait_until(lambda: all(w.state == "idle" for w in cluster_pool.status()), CLUSTER_LIMIT,
               "the running items to finish")
    assert run("%parallel_map math.sqrt [4.0]").result.result == [2.0]
    assert len(list(marks.iterdir())) <= IN_FLIGHT_PER_SLOT * cluster_pool.workers


def test_ctrl_c_in_a_parallel_cell_names_the_subinterpreters_still_running_it(
        cluster_pool: ClusterPool, run: Run, tmp_path: Path) -> None:
    """As on the local pool: Ctrl-C while the cell holds every subinterpreter
    says which ones still run it, and the pool serves afterwards."""
    marks, gate = tmp_path / "marks", tmp_path / "gate"
    marks.mkdir()
    interrupter = interrupt_when(lambda: len(list(marks.iterdir())) == cluster_pool.workers,
                                 "the cell running in every subinterpreter")
    try:
        ran = run(f"%%parallel\nimport os, time, uuid\n"
                  f"open(os.path.join({str(marks)!r}, uuid.uuid4().hex), 'w').close()\n"
                  f"while not os.path.exists({str(gate)!r}):\n    time.sleep(0.01)\n")
    finally:
        interrupter.join()
        gate.touch()
    assert isinstance(ran.error, KeyboardInterrupt), ran.shown
    every = worker_ranges(cluster_pool.subinterpreters())
    assert f"Interrupted: {every} still running the cell (it cannot be stopped" in ran.err, \
        ran.err
    wait_until(lambda: all(w.state == "idle" for w in cluster_pool.status()), CLUSTER_LIMIT,
               "the cell to finish everywhere")
    assert run("%parallel_map math.sqrt [4.0]").result.result == [2.0]


# ---------------------------------------------------------- bad --dask values

@pytest.mark.parametrize(("value", "message"), [
    ("local:0", "--dask local:N needs at least 1 process, not 0"),
    ("local:abc", "--dask local:N needs a whole number of processes, not 'abc'"),
    ("local:", "--dask local:N needs a whole number of processes, not ''"),
    ("'local:-1'", "--dask local:N needs a whole number of processes, not '-1'"),
    ('""', "--dask needs a scheduler address such as tcp://host:8786"),
    ("local --local", "--local and --dask name different pools"),
    ("tcp://127.0.0.1:1 -n 0", "-n/--workers must be at least 1, not 0"),
])
def test_a_bad_dask_value_is_a_usage_error_and_the_pool_stays(
        cluster_pool: ClusterPool, run: Run, value: str, message: str) -> None:
    ran = run(f"%parallel_pool --dask {value}")
    assert isinstance(ran.error, UsageError)
    assert message in str(ran.error)
    assert current_pool() is cluster_pool and not cluster_pool.closed


def test_an_unreachable_scheduler_is_named_and_the_pool_stays(cluster_pool: ClusterPool,
                                                              run: Run) -> None:
    address = f"tcp://127.0.0.1:{closed_port()}"
    ran = run(f'%parallel_pool --dask "{address}" --connect-timeout 2')
    assert isinstance(ran.error, UsageError)
    assert f"cannot reach the dask scheduler at {address!r}" in str(ran.error)
    assert "--connect-timeout" in str(ran.error)
    assert "the current one (2 workers) is still in use" in ran.err
    assert current_pool() is cluster_pool
    assert run("%parallel_map math.sqrt [4.0]").result.result == [2.0]


def test_a_malformed_address_is_named(cluster_pool: ClusterPool, run: Run) -> None:
    ran = run("%parallel_pool --dask 'not an address at all'")
    assert isinstance(ran.error, UsageError)
    assert "'not an address at all'" in str(ran.error)
    assert current_pool() is cluster_pool


def test_help_describes_the_dask_options(run: Run) -> None:
    ran = run("%parallel_pool --help")
    assert "--dask CLUSTER" in ran.out and "local[:N]" in ran.out and "--local" in ran.out


def test_status_help_says_how_often_a_cluster_watch_asks(run: Run) -> None:
    ran = run("%parallel_status --help")
    assert (f"on a dask cluster it asks every process every {WATCH_REFRESH_SECONDS:g} s"
            in " ".join(ran.out.split()))


# ---------------------------------------------------------- switching pools

def test_a_quoted_scheduler_address_is_used_and_its_cluster_left_open(
        cluster_pool: ClusterPool, run: Run) -> None:
    import distributed

    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster:
        ran = run(f"%parallel_pool --dask '{cluster.scheduler_address}' -n 2 --init {INIT!r}")
        assert ran.error is None, ran.shown
        pool = current_pool()
        assert isinstance(pool, ClusterPool) and pool.workers == 2
        assert len(pool.processes()) == 1
        assert run("%parallel_map operator.neg range(5)").result.result == [0, -1, -2, -3, -4]
        # The first pool's LocalCluster was the pool's own: replacing it closed it.
        old = pids(cluster_pool)
        wait_until(lambda: not any(alive(p) for p in old), CLUSTER_LIMIT,
                   "the replaced LocalCluster's processes to exit")
        assert cluster_pool.closed
        ran = run("%parallel_pool --local -n 2")
        assert ran.error is None, ran.shown
        # A scheduler the user gave is theirs: it still runs its worker.
        assert cluster.scheduler_address
        assert len(cluster.scheduler_info["workers"]) == 1
        assert pool.closed


def test_switching_back_to_a_local_pool_closes_the_cluster(cluster_pool: ClusterPool,
                                                           run: Run) -> None:
    old = pids(cluster_pool)
    ran = run("%parallel_pool --local -n 3")
    assert ran.error is None, ran.shown
    local = current_pool()
    assert isinstance(local, InterpreterPool) and local.workers == 3
    wait_until(lambda: not any(alive(p) for p in old), CLUSTER_LIMIT,
               "the LocalCluster's processes to exit")
    assert run("%parallel_map math.sqrt [9.0]").result.result == [3.0]
    # -n alone keeps the kind of pool: still local.
    run("%parallel_pool -n 2")
    assert isinstance(current_pool(), InterpreterPool)


def test_a_watch_replaces_the_last_and_ends_with_its_pool(
        cluster_pool: ClusterPool, run: Run, frontend: list[Shown], tmp_path: Path) -> None:
    marks, gate = tmp_path / "marks", tmp_path / "gate"
    marks.mkdir()
    assert run("%parallel_status --watch 120").error is None
    first, _ = watched(frontend)
    assert run("%parallel_status --watch 120").error is None
    (second,) = {s.display_id for s in frontend if not s.update} - {first}
    assert second is not None
    stopped = updates_of(frontend, first)
    assert "Not updated any more (stopped)" in stopped[-1], stopped
    outcome: dict[str, Any] = {}
    mapper = run_blocked_map(cluster_pool, marks, gate, outcome)
    try:
        wait_until(lambda: any(t.count("busy") == 2 for t in updates_of(frontend, second)),
                   CLUSTER_LIMIT, "the new watch to show the map")
    finally:
        gate.touch()
        mapper.join()
    assert updates_of(frontend, first) == stopped  # the replaced one is not updated
    # Closed from code, the pool ends the watch, which says why.
    cluster_pool.close()
    wait_until(lambda: "Not updated any more (the pool was closed)"
               in updates_of(frontend, second)[-1], CLUSTER_LIMIT, "the watch to end")
    ended = updates_of(frontend, second)
    live.stop_watch()  # already ended: shows nothing more
    assert updates_of(frontend, second) == ended
    # A local pool's watch is the same one watch: a new pool (here a cluster
    # again) ends it.
    assert run("%parallel_pool --local -n 1").error is None
    assert run("%parallel_status --watch 120").error is None
    assert live._watched is not None
    assert run(f"%parallel_pool --dask local:2 --init {INIT!r}").error is None
    assert live._watched is None


def test_n_with_dask_sets_subinterpreters_per_process(shell: InteractiveShell,
                                                      run: Run) -> None:
    ran = run(f"%parallel_pool --dask local:1 -n 2 --init {INIT!r}")
    assert ran.error is None, ran.shown
    pool = current_pool()
    assert isinstance(pool, ClusterPool)
    assert [slots for *_, slots in pool.processes()] == [2]
    ran = run("%parallel print('x')")
    assert ran.out == "[workers 0-1]\nx\n"


def test_unloading_the_extension_closes_the_cluster(shell: InteractiveShell,
                                                    run: Run) -> None:
    run(f"%parallel_pool --dask local:1 --init {INIT!r}")
    pool = current_pool()
    assert isinstance(pool, ClusterPool)
    old = pids(pool)
    shell.run_line_magic("unload_ext", "interp_rpc")
    try:
        assert pool.closed
        wait_until(lambda: not any(alive(p) for p in old), CLUSTER_LIMIT,
                   "the LocalCluster's processes to exit")
    finally:
        shell.run_line_magic("load_ext", "interp_rpc")


# ------------------------------------------------- processes that join later

@pytest.fixture
def one_process_cluster(shell: InteractiveShell, run: Run) -> Iterator[tuple[Any, ClusterPool]]:
    """(LocalCluster of one process, the notebook's pool on it); the notebook
    is back on a local pool afterwards (cluster_pool starts its own again)."""
    import distributed

    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster:
        try:
            ran = run(f"%parallel_pool --dask '{cluster.scheduler_address}' --init {INIT!r}")
            assert ran.error is None, ran.shown
            pool = current_pool()
            assert isinstance(pool, ClusterPool) and len(pool.processes()) == 1
            yield cluster, pool
        finally:
            run("%parallel_pool --local -n 1")


def add_process(cluster: Any, pool: ClusterPool) -> int:
    """Start a second dask worker process; its pid, once the pool uses it."""
    before = pids(pool)
    cluster.scale(2)
    wait_until(lambda: len(pool.processes()) == 2, CLUSTER_LIMIT, "the second process")
    (joined,) = pids(pool) - before
    return joined


def test_parallel_cells_reach_a_process_that_joins_later(
        one_process_cluster: tuple[Any, ClusterPool], run: Run) -> None:
    cluster, pool = one_process_cluster
    (first,) = pids(pool)
    for cell in ("%%parallel\nimport os\ndef tag(x):\n    return (os.getpid(), 'old', x)\n",
                 # Redefined: the process that joins later must get this one.
                 "%%parallel\ndef tag(x):\n    return (os.getpid(), 'new', x)\n",
                 "%%parallel\ndef has_marker(x):\n"
                 "    return (os.getpid(), 'marker' in globals())\n",
                 # Run on a subset: not replayed.
                 "%parallel --targets 0 marker = 1"):
        ran = run(cell)
        assert ran.error is None, ran.shown
    joined = add_process(cluster, pool)
    ran = run("tagged = %parallel_map --chunksize 1 tag range(40)")
    assert ran.error is None, ran.shown
    tagged = InteractiveShell.instance().user_ns["tagged"]
    assert [(version, x) for _, version, x in tagged] == [("new", x) for x in range(40)]
    assert {pid for pid, _, _ in tagged} == {first, joined}
    ran = run("markers = %parallel_map --chunksize 1 has_marker range(20)")
    assert ran.error is None, ran.shown
    assert set(InteractiveShell.instance().user_ns["markers"]) == {(first, True),
                                                                   (joined, False)}


def test_a_cell_that_fails_to_replay_keeps_the_joining_process_out(
        one_process_cluster: tuple[Any, ClusterPool], run: Run) -> None:
    cluster, pool = one_process_cluster
    (first,) = pids(pool)
    ran = run(f"%%parallel\nimport os\nif os.getpid() != {first}:\n"
              "    raise ImportError('no such module on this host')\n"
              "def where_now(x):\n    return os.getpid()\n")
    assert ran.error is None, ran.shown
    cell = ran.result.execution_count
    # The pool says so (from its watcher thread), and its status shows why.
    with pytest.warns(RuntimeWarning, match=rf"a dask worker that joined cannot serve the "
                      rf"pool: .*replaying the %%parallel cell In\[{cell}\] raised "
                      "ImportError: no such module on this host") as warned:
        cluster.scale(2)
        wait_until(lambda: any("cannot serve" in str(w.message) for w in warned),
                   CLUSTER_LIMIT, "the pool's warning about the joining process")
    failed = [w for w in pool.status() if w.state == "dead"]
    assert len(failed) == 1 and failed[0].detail == (
        f"replaying the %%parallel cell In[{cell}] raised ImportError: "
        "no such module on this host"), failed
    index = failed[0].index
    assert isinstance(index, ClusterWorker) and index.pid != first
    # It takes no calls: everything runs, right, in the first process.
    assert len(pool.processes()) == 1
    ran = run("ran_in = %parallel_map --chunksize 1 where_now range(10)")
    assert ran.error is None, ran.shown
    assert InteractiveShell.instance().user_ns["ran_in"] == [first] * 10


def test_errors_collect_returns_each_failure_in_its_place_on_a_cluster(
        cluster_pool: ClusterPool, shell: InteractiveShell, run: Run) -> None:
    """The same check as on the local pool: the option is not ignored on a
    dask pool, and each failure names the cluster's worker."""
    results = check_errors_collect(shell, run)
    assert all(isinstance(r.worker, ClusterWorker) for r in results if isinstance(r, RemoteError))
