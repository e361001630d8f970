"""ClusterPool against a LocalCluster of 2 processes: calls, maps, errors."""

from __future__ import annotations

import array
import concurrent.futures
import gc
import os
import threading
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("distributed")

from dask_support import CLUSTER_LIMIT, INIT, closed_port, local_cluster

from interp_rpc import (
    CallTimeoutError,
    InterpreterPool,
    PoolClosedError,
    PoolInitError,
    RemoteError,
    ShareabilityError,
    TargetResolutionError,
)
from interp_rpc.dask import ClusterPool, ClusterWorker

pytestmark = pytest.mark.timeout(240)


@pytest.fixture(scope="module")
def cluster() -> Iterator[tuple[Any, Any]]:
    with local_cluster(2) as pair:
        yield pair


@pytest.fixture(scope="module")
def pool(cluster: tuple[Any, Any]) -> Iterator[ClusterPool]:
    pool = ClusterPool(cluster[1], init=INIT)
    try:
        yield pool
    finally:
        pool.close(timeout=CLUSTER_LIMIT)


def worker_pids(client: Any) -> set[int]:
    return set(client.run(os.getpid).values())


def test_call_runs_in_a_dask_worker_process(pool: ClusterPool, cluster: Any) -> None:
    pid, value = pool.call("clustertasks.where", {"n": 7}, timeout=CLUSTER_LIMIT)
    assert value == {"n": 7}
    assert pid in worker_pids(cluster[1]) and pid != os.getpid()
    assert pool.call("math.sqrt", 16.0) == 4.0


def test_one_subinterpreter_per_dask_thread(pool: ClusterPool) -> None:
    assert pool.workers == 2
    assert len(pool.processes()) == 2
    assert sorted(int(w.index) for w in pool.status()) == [0, 1]


def test_map_of_1000_items_is_in_order_and_uses_both_processes(pool: ClusterPool,
                                                              cluster: Any) -> None:
    results = list(pool.map("clustertasks.where", range(1000), timeout=CLUSTER_LIMIT))
    assert [value for _, value in results] == list(range(1000))
    assert {pid for pid, _ in results} == worker_pids(cluster[1])


def test_map_with_several_iterables_and_a_chunksize(pool: ClusterPool) -> None:
    assert list(pool.map("operator.add", range(10), range(100, 110), chunksize=3)) == [
        a + b for a, b in zip(range(10), range(100, 110), strict=True)]
    assert list(pool.map("math.sqrt", [])) == []


def test_submit_returns_a_concurrent_future(pool: ClusterPool) -> None:
    futures = [pool.submit("operator.mul", i, 3) for i in range(20)]
    assert [f.result(timeout=CLUSTER_LIMIT) for f in futures] == [i * 3 for i in range(20)]
    done = threading.Event()
    future = pool.submit("math.sqrt", 9.0)
    future.add_done_callback(lambda _: done.set())
    assert done.wait(CLUSTER_LIMIT) and future.result() == 3.0


def test_remote_error_says_type_message_traceback_and_where(pool: ClusterPool,
                                                            cluster: Any) -> None:
    with pytest.raises(RemoteError) as caught:
        pool.call("clustertasks.fail", "no good")
    err = caught.value
    assert (err.remote_type_name, err.remote_module, err.remote_message) == (
        "ValueError", "builtins", "no good")
    assert "clustertasks.py" in err.remote_traceback and "raise ValueError" in err.remote_traceback
    worker = err.worker
    assert isinstance(worker, ClusterWorker)
    assert worker.pid in worker_pids(cluster[1])
    assert worker.address in cluster[1].scheduler_info()["workers"]
    assert worker.subinterpreter == 0 and worker.host
    assert f"process {worker.pid}" in str(err) and worker.address in str(err)


def test_a_failing_map_item_is_named_by_its_index(pool: ClusterPool) -> None:
    with pytest.raises(RemoteError) as caught:
        list(pool.map("math.sqrt", [4.0] * 37 + [-1.0] + [9.0] * 10, chunksize=5))
    assert caught.value.item_index == 37
    assert caught.value.remote_type_name == "ValueError"


def test_unshareable_argument_fails_locally_with_the_local_pools_path(
        pool: ClusterPool, monkeypatch: pytest.MonkeyPatch) -> None:
    bad = {"rows": [1, 2, threading.Lock()]}
    # Nothing is sent: no dask task. (Not the processes' call count: the
    # chunks of an earlier test's map may still be finishing.)
    sent: list[object] = []
    submit = pool.client.submit
    monkeypatch.setattr(pool.client, "submit",
                        lambda *args, **kwargs: sent.append(args) or submit(*args, **kwargs))
    with pytest.raises(ShareabilityError) as remote:
        pool.call("clustertasks.where", bad)
    assert sent == []
    with InterpreterPool(workers=1) as local, pytest.raises(ShareabilityError) as here:
        local.call("clustertasks.where", bad)
    assert remote.value.argument_path == here.value.argument_path
    assert remote.value.argument_path.endswith("['rows'][2]")
    assert str(remote.value) == str(here.value)
    with pytest.raises(ShareabilityError) as item:
        pool.map("clustertasks.where", [1, 2, threading.Lock()], chunksize=1)
    assert item.value.item_index == 2


def test_unshareable_result_names_the_value(pool: ClusterPool) -> None:
    with pytest.raises(ShareabilityError) as caught:
        pool.call("clustertasks.unshareable_result")
    assert "['lock']" in caught.value.argument_path


def test_target_errors(pool: ClusterPool) -> None:
    with pytest.raises(TargetResolutionError, match="lambda"):
        pool.call(lambda: 1)
    with pytest.raises(TargetResolutionError) as caught:
        pool.call("no_such_module_anywhere.f")
    assert caught.value.failed_part == "no_such_module_anywhere"


def test_timeout_stops_waiting_only(pool: ClusterPool, tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    with pytest.raises(CallTimeoutError) as caught:
        pool.call("clustertasks.block_in", str(tmp_path), str(gate), "slow", timeout=0.5)
    assert caught.value.timeout == 0.5
    # The call went on running: it finishes once the gate opens.
    gate.touch()
    later = pool.submit("clustertasks.where", "after")
    assert later.result(timeout=CLUSTER_LIMIT)[1] == "after"
    assert [p.name.split("-", 1)[1] for p in tmp_path.iterdir() if p.name != "gate"] == ["slow"]


def test_map_timeout_counts_what_finished(pool: ClusterPool, tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    items = [(str(tmp_path), str(gate), i) for i in range(4)]
    try:
        with pytest.raises(CallTimeoutError) as caught:
            list(pool.map("clustertasks.block_in", *zip(*items, strict=True), timeout=0.5,
                          chunksize=1))
        assert (caught.value.completed, caught.value.total) == (0, 4)
    finally:
        gate.touch()


def test_init_failure_names_the_dask_workers(cluster: Any) -> None:
    with pytest.raises(PoolInitError) as caught:
        ClusterPool(cluster[1], init="raise ValueError('bad init')")
    failures = caught.value.failures
    addresses = {f.worker.address for f in failures if isinstance(f.worker, ClusterWorker)}
    assert addresses == set(cluster[1].scheduler_info()["workers"])
    assert all(f.error is not None and f.error.remote_message == "bad init" for f in failures)
    assert "bad init" in str(caught.value)
    # The failed pool left nothing behind: the cluster serves a new one.
    with ClusterPool(cluster[1], init=INIT) as again:
        assert again.call("math.sqrt", 4.0) == 2.0


def test_init_failing_in_some_subinterpreters_names_each_by_its_own_index(
        cluster: Any, tmp_path: Path) -> None:
    # In each process, the subinterpreter that comes second fails.
    init = ("import os\n"
            f"marker = os.path.join({str(tmp_path)!r}, str(os.getpid()))\n"
            "os.close(os.open(marker, os.O_CREAT | os.O_EXCL))")
    with pytest.raises(PoolInitError) as caught:
        ClusterPool(cluster[1], workers_per_process=2, init=init)
    failures = caught.value.failures
    assert len(failures) == 2
    workers = [f.worker for f in failures if isinstance(f.worker, ClusterWorker)]
    assert len({w.address for w in workers}) == 2
    # Each process holds two indices, failed or not: 0-1 and 2-3. Sized by
    # its failures alone, the second process started at 1.
    assert sorted(int(w) - w.subinterpreter for w in workers) == [0, 2]
    assert all("FileExistsError" in str(f.error and f.error.remote_type) for f in failures)


def test_closed_pool_refuses_calls(cluster: Any) -> None:
    pool = ClusterPool(cluster[1], init=INIT)
    assert pool.call("math.sqrt", 1.0) == 1.0
    pool.close()
    with pytest.raises(PoolClosedError):
        pool.call("math.sqrt", 1.0)
    with pytest.raises(PoolClosedError):
        list(pool.map("math.sqrt", [1.0]))
    pool.close()  # closing twice is harmless
    assert cluster[1].status == "running"  # a client the caller gave is theirs to close


def test_status_stats_and_records_cover_every_process(pool: ClusterPool) -> None:
    pool.call("math.sqrt", 1.0)
    seen = pool.call_records()[-1].seq
    list(pool.map("math.sqrt", [float(i) for i in range(64)], chunksize=8))
    records = pool.call_records(after=seen)
    assert len(records) == 8 and sum(r.item_count for r in records) == 64
    assert {r.worker.pid for r in records if isinstance(r.worker, ClusterWorker)} == {
        pid for _, _, pid, _ in pool.processes()}
    last = records[-1].seq
    pool.call("math.sqrt", 1.0)
    newer = pool.call_records(after=last)
    assert len(newer) == 1 and newer[0].seq == last + 1
    assert pool.stats().items >= 65
    assert all(w.state in ("idle", "busy") for w in pool.status())



def test_workers_per_process_sets_the_subinterpreters_of_each_process(cluster: Any) -> None:
    with ClusterPool(cluster[1], init=INIT, workers_per_process=2) as pool:
        assert pool.workers == 4
        workers = pool.status()
        assert sorted(int(w.index) for w in workers) == [0, 1, 2, 3]
        assert {w.index.subinterpreter for w in workers if isinstance(w.index, ClusterWorker)
                } == {0, 1}
        assert list(pool.map("operator.neg", range(50))) == [-i for i in range(50)]


def test_bad_options_are_named(cluster: Any) -> None:
    with pytest.raises(TypeError, match="cluster must be"):
        ClusterPool(42)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="processes="):
        ClusterPool(cluster[1], processes=2)
    with pytest.raises(ValueError, match="workers_per_process must be at least 1"):
        ClusterPool(cluster[1], workers_per_process=0)
    with pytest.raises(ValueError, match="retries must be at least 0"):
        ClusterPool(cluster[1], retries=-1)
    with pytest.raises(ValueError, match="init is not valid Python"):
        ClusterPool(cluster[1], init="def (")


def io_loops() -> int:
    return sum(t.name == "IO loop" for t in threading.enumerate())


def test_a_scheduler_that_cannot_be_reached_leaves_no_client_behind() -> None:
    from distributed.utils import LoopRunner

    loops = io_loops()
    with pytest.raises(ConnectionError, match="cannot reach the dask scheduler"):
        ClusterPool(f"tcp://127.0.0.1:{closed_port()}", connect_timeout=2)
    # dask left the client half open, its IO loop running: closed now.
    assert io_loops() == loops
    # Else whichever thread collected it closed it there, waiting for dask's
    # lock of every loop, which a LocalCluster holds while it starts: that
    # start then failed after 10 s.
    with LoopRunner._lock:
        collector = threading.Thread(target=gc.collect)
        collector.start()
        collector.join(CLUSTER_LIMIT)
        assert not collector.is_alive(), "collecting the failed client waited for dask's lock"


def test_cancelling_a_queued_call(pool: ClusterPool, tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    try:
        # Both processes busy, so the next call waits in dask's queue.
        busy = [pool.submit("clustertasks.block_in", str(tmp_path), str(gate), i)
                for i in range(2)]
        queued = pool.submit("clustertasks.block_in", str(tmp_path), str(gate), "queued")
        assert queued.cancel()
        assert queued.cancelled()
        # What close(wait=True) and a map wait with: a cancelled call counts as done.
        done, _ = concurrent.futures.wait([queued], timeout=CLUSTER_LIMIT)
        assert queued in done
    finally:
        gate.touch()
    assert sorted(f.result(timeout=CLUSTER_LIMIT) for f in busy) == [0, 1]


def test_buffers_keep_their_format_and_content_across_the_network(pool: ClusterPool) -> None:
    doubles = memoryview(array.array("d", [1.0, 2.0, 3.5]))
    assert pool.call("buffertasks.total", doubles) == 6.5
    big = bytes(range(256)) * 1024  # large: out of band in dask's frames
    assert pool.call("zlib.crc32", big) == zlib.crc32(big)


def test_requests_are_unpickled_only_in_the_subinterpreter_that_runs_them(
        pool: ClusterPool, tmp_path: Path) -> None:
    # The dask worker process forwards the caller's bytes to its pool: its
    # main interpreter (id 0) never loads the arguments, so a value it
    # cannot load, or one that is costly to load, is loaded once, where it runs.
    from clustertasks import Unpickled

    log = tmp_path / "unpickled"
    argument = Unpickled(str(log))
    assert pool.call("clustertasks.unpickled_path", argument) == str(log)
    assert list(pool.map("clustertasks.unpickled_path", [argument] * 3)) == [str(log)] * 3
    everywhere = pool.run_everywhere("clustertasks.unpickled_path", (argument,)).wait()
    assert set(everywhere.values()) == {str(log)}
    loaded_in = [int(line) for line in log.read_text().split()]
    # One load for the call, one per map chunk (one or more), one per subinterpreter.
    assert len(loaded_in) >= 1 + 1 + pool.workers
    assert 0 not in loaded_in
