"""The Workers panel's status message (workers_status.py): one shape for
every pool, with a group per dask process for a cluster's workers."""

from __future__ import annotations

from typing import Any

from interp_rpc.dask._placement import ClusterWorker
from interp_rpc.notebook import running_maps, workers_status
from interp_rpc.records import WorkerStatus

POOL = workers_status.pool_info("ClusterPool", 3, 10.0, False)


def status(index: int, state: str, seconds: float = 0.0, target: str | None = None,
           item: int | None = None, detail: str | None = None) -> WorkerStatus:
    return WorkerStatus(index=index, state=state, target=target, item_index=item,
                        busy_seconds=seconds, calls_done=2, busy_seconds_total=1.0,
                        detail=detail)


def on(process: int, index: int) -> ClusterWorker:
    return ClusterWorker(index, address=f"tcp://10.0.0.{process}:4000", host=f"h{process}",
                         pid=100 + process, subinterpreter=index)


def test_a_clusters_workers_come_in_one_group_per_process() -> None:
    statuses = [
        status(on(2, 2), "busy", 12.0, "f", 7),  # busy longer than stuck_after: stuck
        status(on(1, 1), "dead", detail="killed"),
        status(on(1, 0), "busy", 0.5, "f", 3),
    ]
    message = workers_status.status_message(POOL, statuses, 10.0, None)
    assert [g["process"] for g in message["groups"]] == [
        {"host": "h1", "pid": 101, "address": "tcp://10.0.0.1:4000"},
        {"host": "h2", "pid": 102, "address": "tcp://10.0.0.2:4000"},
    ]
    first, second = message["groups"]
    assert [(w["index"], w["state"]) for w in first["workers"]] == [(0, "busy"), (1, "dead")]
    assert first["workers"][1]["detail"] == "killed"
    assert second["workers"] == [{"index": 2, "state": "stuck", "target": "f", "item": 7,
                                  "seconds": 12.0, "calls_done": 2, "detail": None}]
    assert message["totals"] == {"idle": 0, "busy": 1, "stuck": 1, "dead": 1, "debugging": 0}
    assert message["map"] is None


def test_a_local_pool_is_one_group_and_other_states_are_counted_too() -> None:
    message = workers_status.status_message(
        POOL, [status(1, "starting"), status(0, "idle")], 10.0, None)
    assert [g["process"] for g in message["groups"]] == [None]
    assert [w["index"] for w in message["groups"][0]["workers"]] == [0, 1]
    assert message["totals"]["starting"] == 1 and message["totals"]["idle"] == 1


def test_the_running_map_is_its_progress() -> None:
    with running_maps.running("f", 10, lambda: 4, lambda: None) as running:
        assert running_maps.current() is running
        progress = workers_status.map_progress(running_maps.current())
    assert running_maps.current() is None
    assert progress is not None
    assert (progress["target"], progress["done"], progress["total"]) == ("f", 4, 10)
    assert progress["seconds"] >= 0


def test_listeners_hear_a_map_start_and_end() -> None:
    heard: list[str | None] = []

    def listener(running: running_maps.RunningMap | None) -> None:
        heard.append(None if running is None else running.target)

    running_maps.subscribe(listener)
    try:
        with running_maps.running("g", 1, lambda: 0, lambda: None):
            pass
    finally:
        running_maps.unsubscribe(listener)
    with running_maps.running("h", 1, lambda: 0, lambda: None):
        pass
    assert heard == ["g", None]


def test_a_worker_in_a_post_mortem_session_shows_as_debugging() -> None:
    from interp_rpc._pool.engine import _core

    target = f"{_core.DEBUG_SESSION_PREFIX}f"
    message = workers_status.status_message(POOL, [status(0, "busy", 30.0, target)], 10.0, None)
    assert message["groups"][0]["workers"][0]["state"] == "debugging"
    assert message["totals"]["debugging"] == 1 and message["totals"]["stuck"] == 0


class _Run:
    """What a map run gives StopOnceStarted: request_stop() and results()."""

    def __init__(self, name: str, happened: list[str]) -> None:
        self.name, self.happened = name, happened

    def request_stop(self) -> None:
        self.happened.append(f"{self.name} stopped")

    def results(self) -> _Run:
        return self

    def close(self) -> None:
        self.happened.append(f"{self.name} closed")

    @property
    def stops_running_chunks(self) -> bool:
        return True


def test_a_stop_asked_before_the_map_started_is_given_to_it_as_it_starts() -> None:
    happened: list[str] = []
    early: running_maps.StopOnceStarted[Any] = running_maps.StopOnceStarted()
    early()
    early.close_started()  # nothing started: nothing to close
    assert (happened, early.run) == ([], None)
    early.started(_Run("early", happened))
    assert happened == ["early stopped"]

    late: running_maps.StopOnceStarted[Any] = running_maps.StopOnceStarted()
    late.started(_Run("late", happened))
    assert happened == ["early stopped"]
    late()
    late.close_started()
    assert happened == ["early stopped", "late stopped", "late closed"]
