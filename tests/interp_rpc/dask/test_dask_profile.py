"""ClusterPool.profile() against a LocalCluster of 2 processes: each process
times its own subinterpreters' work, and the caller merges their records into
one Profile with a lane per subinterpreter of the cluster."""

from __future__ import annotations

import base64
import itertools
import json
import os
import pickle
import re
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("distributed")

from dask_support import CLUSTER_LIMIT, INIT, local_cluster, run_blocked_map
from support import wait_until

from interp_rpc import RemoteError, WorkerDiedError
from interp_rpc.dask import ClusterPool
from interp_rpc.profiling import model

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def pool() -> Iterator[ClusterPool]:
    with local_cluster(2) as (_, client):
        pool = ClusterPool(client, init=INIT)
        try:
            yield pool
        finally:
            pool.close(timeout=CLUSTER_LIMIT)


def lane_pids(pool: ClusterPool) -> dict[int, int]:
    """Each subinterpreter's cluster index -> the pid of its process."""
    return {int(w): w.pid for w in pool.subinterpreters()}


def test_a_map_on_both_processes_is_all_there_in_lanes_by_process(pool: ClusterPool) -> None:
    with pool.profile() as prof:
        found = list(pool.map("clustertasks.where", range(40), chunksize=2,
                              timeout=CLUSTER_LIMIT))
    pids = lane_pids(pool)
    assert {pid for pid, _ in found} == set(pids.values())
    records = prof.records
    assert sorted(r.item for r in records if r.item is not None) == list(range(40))
    assert all(r.outcome == model.OK and r.count == 1 for r in records), records
    # Each item sits in a lane of the process that ran it.
    for r in records:
        assert r.item is not None
        assert pids[r.worker] == found[r.item][0], (r, found[r.item])
    assert {r.worker for r in records} == set(pids)
    assert prof.workers == len(pids)
    assert sorted((first, lanes) for _, first, lanes in prof.lane_groups) == \
        [(index, 1) for index in sorted(pids)]
    assert {int(re.findall(r"process (\d+)", label)[0]) for label, _, _ in prof.lane_groups} \
        == set(pids.values())
    # In order: a chunk's items one after the other, and the whole in start order.
    by_request: dict[int, list[model.ItemRecord]] = {}
    for r in records:
        by_request.setdefault(r.call_id, []).append(r)
    for chunk in by_request.values():
        assert [r.item for r in chunk] == list(range(chunk[0].item or 0,
                                                     (chunk[0].item or 0) + len(chunk)))
        assert all(a.finished_ns <= b.started_ns or a.group > 1
                   for a, b in itertools.pairwise(chunk))
        assert len({r.worker for r in chunk}) == 1
    starts = [r.started_ns for r in records]
    assert starts == sorted(starts)
    # Times on the caller's clock, within the profile's span.
    for r in records:
        assert prof.start_ns <= r.started_ns <= r.finished_ns <= prof.end_ns, r
        assert r.started_ns - prof.start_ns >= 0
    assert prof.warnings() == []


def test_another_hosts_times_are_moved_through_the_wall_clocks(
        pool: ClusterPool, monkeypatch: pytest.MonkeyPatch) -> None:
    from interp_rpc.dask import _profiling

    # Seen from a caller on another host, the processes' monotonic times go
    # through both hosts' wall clocks (here the same ones): still in order,
    # within the span.
    monkeypatch.setattr(_profiling.socket, "gethostname", lambda: "another-host")
    with pool.profile() as prof:
        list(pool.map("clustertasks.where", range(20), chunksize=2, timeout=CLUSTER_LIMIT))
    records = prof.records
    assert sorted(r.item for r in records) == list(range(20))
    for r in records:
        assert prof.start_ns <= r.started_ns <= r.finished_ns <= prof.end_ns, r


#: A clock offset far larger than any gap between this test's times.
SHIFT_NS = 10**12


def test_another_hosts_offset_moves_every_time_of_every_record(
        pool: ClusterPool, monkeypatch: pytest.MonkeyPatch) -> None:
    from interp_rpc import CallTimeoutError
    from interp_rpc.dask import _profiling

    # A caller on another host whose clock is SHIFT_NS ahead: the items' and
    # the running call's times all move by it, so all sit inside the span.
    monkeypatch.setattr(_profiling.socket, "gethostname", lambda: "another-host")
    monkeypatch.setattr(_profiling, "_clock_offset", lambda clock: SHIFT_NS)
    before = time.monotonic_ns()
    with pool.profile() as prof:
        list(pool.map("clustertasks.where", range(20), chunksize=5, timeout=CLUSTER_LIMIT))
        with pytest.raises(CallTimeoutError):
            pool.call("pooltasks.sleep_then", 2.0, timeout=0.5)
    after = time.monotonic_ns()
    records = prof.records
    assert sorted(r.item for r in records if r.item is not None) == list(range(20))
    # Its process does not know that the caller stopped waiting: it shows
    # the call as still running when the profile ended.
    [late] = [r for r in records if r.item is None]
    assert late.outcome == model.RUNNING and late.target == "pooltasks.sleep_then"
    assert late.worker in lane_pids(pool)
    assert before + SHIFT_NS <= prof.start_ns <= prof.end_ns <= after + SHIFT_NS
    for r in records:
        times = [r.started_ns, r.finished_ns, r.request_started_ns] + \
            ([r.enqueued_ns] if r.enqueued_ns else [])
        assert all(prof.start_ns <= t <= prof.end_ns for t in times), r


def test_the_processes_send_their_requests_not_a_record_per_item(
        pool: ClusterPool, monkeypatch: pytest.MonkeyPatch) -> None:
    # What a profile's end fetches grows with the map's chunks, not with its
    # items: %parallel_map profiles every run, so that cost is every map's.
    from interp_rpc.dask import _asking

    ask_each = _asking.ask_each
    answers: list[Any] = []

    def kept(client: Any, addresses: Any, function: Any, *args: Any, **kwargs: Any) -> Any:
        found = ask_each(client, addresses, function, *args, **kwargs)
        if function.__name__ == "profile_stop":
            answers.extend(found.values())
        return found

    monkeypatch.setattr(_asking, "ask_each", kept)
    items = 20_000
    with pool.profile() as prof:
        assert list(pool.map("pooltasks.identity", range(items), chunksize=5_000,
                             timeout=CLUSTER_LIMIT)) == list(range(items))
    assert len(answers) == 2
    sent = sum(len(pickle.dumps(answer)) for answer in answers)
    assert sent < items, f"{sent} bytes for {items} items"
    # The records are all there once read.
    assert sorted(r.item for r in prof.records) == list(range(items))


def test_a_failed_item_is_marked(pool: ClusterPool) -> None:
    with pool.profile() as prof, pytest.raises(RemoteError):
        list(pool.map("math.sqrt", [1.0, 4.0, 9.0, 16.0, -1.0, 25.0], chunksize=3,
                      timeout=CLUSTER_LIMIT))
    outcomes = {r.item: r.outcome for r in prof.records}
    assert outcomes[4] == model.FAILED
    assert outcomes[5] == model.NOT_RUN
    assert outcomes[3] == model.OK
    assert prof.outcomes()[model.FAILED] == 1


def test_the_function_profile_merges_every_process(pool: ClusterPool) -> None:
    with pool.profile(functions=True) as prof:
        list(pool.map("clustertasks.where", range(20), chunksize=2, timeout=CLUSTER_LIMIT))
    assert set(prof.worker_stats) == set(lane_pids(pool))
    assert prof.stats is not None
    assert "where" in prof.stats_listing()
    called = sum(calls for (_, _, name), (calls, *_) in prof.stats.stats.items()  # type: ignore[attr-defined]
                 if name == "where")
    assert called == 20


def test_a_profile_whose_end_was_interrupted_does_not_block_the_next(
        pool: ClusterPool, monkeypatch: pytest.MonkeyPatch) -> None:
    from interp_rpc.dask import _asking

    ask_each = _asking.ask_each

    def interrupted(client: Any, addresses: Any, function: Any, *args: Any,
                    **kwargs: Any) -> Any:
        if function.__name__ == "profile_stop":
            raise KeyboardInterrupt  # Ctrl-C while the caller waits for the answers
        return ask_each(client, addresses, function, *args, **kwargs)

    monkeypatch.setattr(_asking, "ask_each", interrupted)
    with pytest.raises(KeyboardInterrupt), pool.profile(functions=True):
        list(pool.map("clustertasks.where", range(4), chunksize=1, timeout=CLUSTER_LIMIT))
    monkeypatch.setattr(_asking, "ask_each", ask_each)
    # The processes' function profilers were left on: the next profile ends them.
    with pool.profile(functions=True) as prof:
        list(pool.map("clustertasks.where", range(4), chunksize=1, timeout=CLUSTER_LIMIT))
    assert sorted(r.item for r in prof.records) == [0, 1, 2, 3]
    assert prof.stats is not None


def test_the_rendering_has_lanes_for_both_processes(pool: ClusterPool, tmp_path: Path) -> None:
    with pool.profile() as prof:
        list(pool.map("clustertasks.where", range(10), chunksize=1, timeout=CLUSTER_LIMIT))
    page = prof._repr_html_()
    picture = re.search(r'src="data:image/svg\+xml;base64,([^"]+)"', page)
    assert picture is not None
    svg = base64.b64decode(picture.group(1)).decode()
    for pid in lane_pids(pool).values():
        assert f"process {pid} on" in svg
        assert f"process {pid} on" in page  # the interactive view's lane labels
    trace = json.loads(prof.export(tmp_path / "cluster.json").read_text())
    tracks = {e["args"]["name"] for e in trace["traceEvents"] if e["name"] == "thread_name"}
    for lane, pid in lane_pids(pool).items():
        assert any(name.startswith(f"{lane}: process {pid} on") for name in tracks), tracks


def test_a_process_that_dies_during_the_profile_leaves_a_note(tmp_path: Path) -> None:
    started, gate = tmp_path / "started", tmp_path / "gate"
    started.mkdir()
    outcome: dict[str, Any] = {}
    with local_cluster(2) as (_, client), ClusterPool(client, init=INIT) as pool:
        pids = lane_pids(pool)
        with pool.profile() as prof:
            thread = run_blocked_map(pool, started, gate, outcome)
            try:
                running = wait_until(
                    lambda: {int(p.name.split("-")[0]) for p in started.iterdir()} == set(
                        pids.values()), CLUSTER_LIMIT, "items running in both processes")
                assert running
                victim = min(pids.values())
                os.kill(victim, signal.SIGKILL)
            finally:
                gate.touch()
                thread.join(CLUSTER_LIMIT)
            assert not thread.is_alive()
        assert isinstance(outcome.get("error"), WorkerDiedError), outcome
        notes = [n for n in prof.warnings() if f"process {victim} on" in n]
        assert notes and "missing" in notes[0], prof.warnings()
        survivor = {lane for lane, pid in pids.items() if pid != victim}
        assert {r.worker for r in prof.records} == survivor
