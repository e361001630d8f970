"""ClusterPool when processes come and go: init everywhere, workers that
join later, a dask worker process killed mid-map, a lost scheduler, exit."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("distributed")

from dask_support import CLUSTER_LIMIT, INIT, local_cluster, run_blocked_map
from support import wait_until

from interp_rpc import PoolBrokenError, PoolInitError, WorkerDiedError
from interp_rpc.dask import ClusterPool

pytestmark = pytest.mark.timeout(300)

#: What %%parallel runs in every subinterpreter (defined by the worker script).
RUN_CELL = "_interp_rpc_worker.run_cell"


def marks(directory: Path) -> set[int]:
    """The pids of the processes whose subinterpreters ran the marking init."""
    return {int(p.name.split("-")[0]) for p in directory.iterdir()}


def test_init_runs_in_every_process_and_in_one_that_joins_later(tmp_path: Path) -> None:
    init = f"{INIT}; clustertasks.mark_process({str(tmp_path)!r})"
    with local_cluster(2) as (cluster, client), ClusterPool(client, init=init) as pool:
        pids = set(client.run(os.getpid).values())
        assert marks(tmp_path) == pids
        assert len(list(tmp_path.iterdir())) == 2  # one subinterpreter per 1-thread process
        cluster.scale(3)
        wait_until(lambda: len(pool.processes()) == 3, CLUSTER_LIMIT, "the third process")
        pids = set(client.run(os.getpid).values())
        assert len(pids) == 3 and marks(tmp_path) == pids
        assert pool.workers == 3
        # The newcomer takes calls: a map spread over every process reaches it.
        ran = {pid for pid, _ in pool.map("clustertasks.where", range(300), chunksize=1)}
        assert ran == pids


def test_a_cell_remembered_while_a_process_joined_is_replayed_there_once(
        tmp_path: Path) -> None:
    """The process joins while the cell runs: the cell does not run there
    (it was not in the cluster yet) and is remembered only once it has
    finished, after the process started taking calls. Its first call
    replays it; the process that ran it directly does not run it again."""
    gate, runs = tmp_path / "gate", tmp_path / "runs"
    runs.mkdir()
    cell = textwrap.dedent(f"""\
        import os, clustertasks
        with open(os.path.join({str(runs)!r}, str(os.getpid())), "a") as runs_file:
            runs_file.write("ran ")
        clustertasks.wait_if_gated({str(gate)!r}, None)
        def tag(x):
            return os.getpid(), "defined", x
        """)
    with local_cluster(1) as (cluster, client), ClusterPool(client, init=INIT) as pool:
        (first,) = set(client.run(os.getpid).values())
        run = pool.run_everywhere(RUN_CELL, (cell, "<the cell>"))
        cluster.scale(2)
        wait_until(lambda: len(pool.processes()) == 2, CLUSTER_LIMIT, "the second process")
        gate.touch()
        outcomes = run.wait()
        assert [o["error"] for o in outcomes.values()] == [None]  # one process ran it
        run.remember("the test cell")
        tagged = list(pool.map("tag", range(40), chunksize=1, timeout=CLUSTER_LIMIT))
        assert [(word, x) for _, word, x in tagged] == [("defined", x) for x in range(40)]
        pids = {pid for pid, _, _ in tagged}
        assert first in pids and len(pids) == 2
        assert {p.name: p.read_text() for p in runs.iterdir()} == {
            str(pid): "ran " for pid in pids}


def test_a_cell_whose_output_was_relayed_replays_quietly_where_a_process_joins() -> None:
    """A %%parallel cell streams what it prints to the caller's queue; the
    process that joins later replays it, where nobody shows its output:
    it neither fails nor prints into that queue again."""
    from concurrent import interpreters

    printed = interpreters.create_queue()
    cell = "import os\nprint('defined')\ndef tag(x):\n    return os.getpid(), x\n"
    with local_cluster(1) as (cluster, client), ClusterPool(client, init=INIT) as pool:
        run = pool.run_everywhere(RUN_CELL, (cell, "<the cell>",
                                             pool.output_destination(printed.id)))
        assert [o["error"] for o in run.wait().values()] == [None]
        assert printed.get_nowait() == (0, None, "stdout", "defined\n")
        run.remember("the test cell")
        cluster.scale(2)
        wait_until(lambda: len(pool.processes()) == 2, CLUSTER_LIMIT, "the second process")
        tagged = list(pool.map("tag", range(40), chunksize=1, timeout=CLUSTER_LIMIT))
        assert [x for _, x in tagged] == list(range(40))
        assert len({pid for pid, _ in tagged}) == 2  # the newcomer replayed the cell
        with pytest.raises(interpreters.QueueEmpty):
            printed.get_nowait()


def test_a_failing_replay_before_a_call_fails_it_and_keeps_the_process_out(
        tmp_path: Path) -> None:
    """As above, but the replay fails in the process that joined: its call
    fails with PoolInitError naming the cell, and no call goes there again."""
    gate = tmp_path / "gate"
    with local_cluster(1) as (cluster, client), ClusterPool(client, init=INIT) as pool:
        (first,) = set(client.run(os.getpid).values())
        cell = textwrap.dedent(f"""\
            import os, clustertasks
            clustertasks.wait_if_gated({str(gate)!r}, None)
            if os.getpid() != {first}:
                raise ImportError("no such module on this host")
            """)
        run = pool.run_everywhere(RUN_CELL, (cell, "<the cell>"))
        cluster.scale(2)
        wait_until(lambda: len(pool.processes()) == 2, CLUSTER_LIMIT, "the second process")
        gate.touch()
        assert [o["error"] for o in run.wait().values()] == [None]
        run.remember("the test cell")
        with pytest.raises(PoolInitError) as caught:
            list(pool.map("clustertasks.where", range(40), chunksize=1, timeout=CLUSTER_LIMIT))
        assert "replaying the test cell raised ImportError: no such module on this host" \
            in str(caught.value)
        assert [pid for _, _, pid, _ in pool.processes()] == [first]
        ran = pool.map("clustertasks.where", range(20), chunksize=1, timeout=CLUSTER_LIMIT)
        assert {pid for pid, _ in ran} == {first}


@pytest.mark.parametrize("retries", [0, 1])
def test_killing_a_process_mid_map(tmp_path: Path, retries: int) -> None:
    started, gate = tmp_path / "started", tmp_path / "gate"
    started.mkdir()
    outcome: dict[str, Any] = {}
    with local_cluster(2) as (_, client), ClusterPool(client, init=INIT,
                                                      retries=retries) as pool:
        thread = run_blocked_map(pool, started, gate, outcome)
        try:
            running = wait_until(lambda: len(marks(started)) == 2 and marks(started),
                                 CLUSTER_LIMIT, "items running in both processes")
            victim = min(running)
            os.kill(victim, signal.SIGKILL)
            if retries:
                # Its items run again in the other process; let them all finish.
                wait_until(lambda: any(p.name.startswith(f"{pid}-") for p in started.iterdir()
                                       for pid in running - {victim}), CLUSTER_LIMIT)
            else:
                # map() yields in order: an item before the dead ones, still
                # running in the live process, must finish before the map
                # reaches the first lost item and raises.
                gate.touch()
                thread.join(CLUSTER_LIMIT)
                assert not thread.is_alive(), "the map hung after its worker died"
        finally:
            gate.touch()
            thread.join(CLUSTER_LIMIT)
        assert not thread.is_alive()
        if retries:
            assert outcome.get("result") == [0, 1, 2, 3], outcome
        else:
            error = outcome.get("error")
            assert isinstance(error, WorkerDiedError), outcome
            assert f"process {victim}" in str(error)
        # The pool goes on serving with the process that is left (and the
        # nanny's replacement, once it joins).
        assert pool.call("math.sqrt", 4.0, timeout=CLUSTER_LIMIT) == 2.0


def test_a_lost_scheduler_fails_calls_instead_of_hanging(tmp_path: Path) -> None:
    scheduler_file = tmp_path / "scheduler.json"
    gate = tmp_path / "gate"
    env = {**os.environ, "DASK_DISTRIBUTED__WORKER__DAEMON": "False"}
    # What users type on their hosts: `dask scheduler` and `dask worker`.
    dask = shutil.which("dask")
    assert dask is not None, "the dask command is missing"
    scheduler = subprocess.Popen(
        [sys.executable, dask, "scheduler", "--no-dashboard",
         "--host", "127.0.0.1", "--port", "0", "--scheduler-file", str(scheduler_file)],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    worker = None
    try:
        wait_until(scheduler_file.exists, CLUSTER_LIMIT, "the scheduler file")
        worker = subprocess.Popen(
            [sys.executable, dask, "worker", "--scheduler-file",
             str(scheduler_file), "--nthreads", "1", "--no-dashboard"],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        import distributed

        client = distributed.Client(scheduler_file=str(scheduler_file), timeout=CLUSTER_LIMIT)
        try:
            client.wait_for_workers(1, timeout=CLUSTER_LIMIT)
            # By address, as a user points the pool at a scheduler on another host.
            pool = ClusterPool(client.scheduler.address, init=INIT)
            try:
                assert pool.call("math.sqrt", 9.0) == 3.0
                pending = pool.submit("clustertasks.block_in", str(tmp_path), str(gate), 1)
                wait_until(lambda: any(p.name.endswith("-1") for p in tmp_path.iterdir()),
                           CLUSTER_LIMIT, "the call to start")
                scheduler.kill()
                began = time.monotonic()
                with pytest.raises(PoolBrokenError, match="lost the connection"):
                    pending.result(timeout=CLUSTER_LIMIT)
                with pytest.raises(PoolBrokenError):
                    pool.call("math.sqrt", 1.0, timeout=CLUSTER_LIMIT)
                assert time.monotonic() - began < CLUSTER_LIMIT
            finally:
                gate.touch()
                pool.close(wait=False, timeout=5)
        finally:
            client.close(timeout=5)
    finally:
        for process in (worker, scheduler):
            if process is not None:
                process.kill()
                process.wait(CLUSTER_LIMIT)


def in_threads(*works: Callable[[], Any]) -> list[dict[str, Any]]:
    """Each work's result or error, all run at once, or "hung" for those
    that have neither after CLUSTER_LIMIT."""
    outcomes: list[dict[str, Any]] = [{} for _ in works]

    def run(work: Callable[[], Any], outcome: dict[str, Any]) -> None:
        try:
            outcome["result"] = work()
        except BaseException as exc:
            outcome["error"] = exc

    threads = [threading.Thread(target=run, args=pair, daemon=True)
               for pair in zip(works, outcomes, strict=True)]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + CLUSTER_LIMIT
    for thread in threads:
        thread.join(max(0.0, deadline - time.monotonic()))
    return [{"hung": True} if thread.is_alive() else outcome
            for thread, outcome in zip(threads, outcomes, strict=True)]


def test_a_process_that_stops_answering_hangs_nothing() -> None:
    # A stopped process keeps its connections open and answers nothing: to
    # the caller it is a host that vanished without closing them, which the
    # scheduler removes only after its worker-ttl (minutes). dask's client.run
    # waits for every worker: status(), stats(), call_records(), a profile's
    # end and close() hung for as long.
    with local_cluster(2) as (_, client):
        pool = ClusterPool(client, init=INIT)
        pids = sorted({w.pid for w in pool.subinterpreters()})
        silent, alive = pids
        os.kill(silent, signal.SIGSTOP)
        try:
            def profiled() -> Any:
                with pool.profile() as prof:
                    pass
                return prof

            status, stats, records, profile = in_threads(
                pool.status, pool.stats, pool.call_records, profiled)
            assert all("result" in outcome for outcome in (stats, records, profile)), \
                (stats, records, profile)
            assert "result" in status, status
            by_pid = {w.index.pid: w for w in status["result"]}
            assert by_pid[silent].state == "dead"
            assert "did not answer within" in (by_pid[silent].detail or "")
            assert by_pid[alive].state == "idle"
            assert any(f"process {silent} on" in note for note in profile["result"].notes)
            with pytest.warns(RuntimeWarning, match="did not answer within"):
                [closed] = in_threads(lambda: pool.close(timeout=1))
            assert closed == {"result": None}
        finally:
            os.kill(silent, signal.SIGCONT)


def run_script(tmp_path: Path, body: str) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "script.py"
    script.write_text(textwrap.dedent(body))
    return subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=CLUSTER_LIMIT * 3, cwd=tmp_path)


def test_a_script_that_never_closes_its_pool_exits(tmp_path: Path) -> None:
    done = run_script(tmp_path, f"""
        from interp_rpc.dask import ClusterPool

        if __name__ == "__main__":
            pool = ClusterPool(processes=2, init={INIT!r})
            print(list(pool.map("math.sqrt", [1.0, 4.0, 9.0])))
    """)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[1.0, 2.0, 3.0]"


def test_a_script_importing_psutil_can_use_a_cluster_pool(tmp_path: Path) -> None:
    done = run_script(tmp_path, f"""
        import psutil
        from interp_rpc.dask import ClusterPool

        if __name__ == "__main__":
            with ClusterPool(processes=2, init={INIT!r}) as pool:
                print(pool.call("math.sqrt", 16.0), psutil.cpu_count() > 0)
    """)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "4.0 True"
