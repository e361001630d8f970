"""ClusterPool.map is lazy, as InterpreterPool.map and Executor.map: an
iterator over results in order, that streams, raises at the failing item's
place, and cancels what has not started when closed."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("distributed")

from dask_support import CLUSTER_LIMIT, INIT
from support import wait_until

from interp_rpc import CallTimeoutError, RemoteError, ShareabilityError
from interp_rpc.dask import ClusterPool
from interp_rpc.dask._chunking import IN_FLIGHT_PER_SLOT

pytestmark = pytest.mark.timeout(240)


@pytest.fixture(scope="module")
def pool() -> Iterator[ClusterPool]:
    with ClusterPool(processes=2, init=INIT) as pool:
        yield pool


def items_in(directory: Path) -> int:
    return len(list(directory.iterdir()))


def test_results_stream_before_the_last_one_is_done(pool: ClusterPool, tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    gates = ["", "", "", "", str(gate)]
    results = pool.map("clustertasks.wait_if_gated", gates, range(5), chunksize=1,
                       timeout=CLUSTER_LIMIT)
    try:
        # The last item cannot finish until the gate opens: the first four
        # arrive anyway, in order.
        assert [next(results) for _ in range(4)] == [0, 1, 2, 3]
        assert not gate.exists()
        gate.touch()
        assert list(results) == [4]
    finally:
        gate.touch()


def test_an_error_surfaces_at_its_position(pool: ClusterPool) -> None:
    results = pool.map("math.sqrt", [1.0, 4.0, -1.0, 9.0], chunksize=1)
    assert next(results) == 1.0
    assert next(results) == 2.0
    with pytest.raises(RemoteError) as caught:
        next(results)
    assert caught.value.item_index == 2
    assert list(results) == []  # the iterator is finished after the error


def test_results_of_a_chunk_before_its_failing_item_are_yielded(pool: ClusterPool) -> None:
    results = pool.map("math.sqrt", [1.0, 4.0, -1.0, 9.0], chunksize=4)
    assert [next(results), next(results)] == [1.0, 2.0]
    with pytest.raises(RemoteError) as caught:
        next(results)
    assert caught.value.item_index == 2


def test_the_call_submits_and_next_raises_the_timeout(pool: ClusterPool,
                                                      tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    try:
        results = pool.map("clustertasks.wait_if_gated", [str(gate)] * 2, range(2),
                           chunksize=1, timeout=0.2)  # returns: nothing waits yet
        with pytest.raises(CallTimeoutError) as caught:
            next(results)
        assert (caught.value.completed, caught.value.total) == (0, 2)
    finally:
        gate.touch()


def test_unconsumed_maps_still_run_every_chunk(pool: ClusterPool, tmp_path: Path) -> None:
    # More chunks than the window of chunks in flight: finished chunks send
    # the next ones, whether or not anyone reads the results.
    total = 40
    results = pool.map("clustertasks.mark_item", [str(tmp_path)] * total, range(total),
                       chunksize=1)
    wait_until(lambda: items_in(tmp_path) == total, CLUSTER_LIMIT, "every item to run")
    assert list(results) == list(range(total))


def test_closing_the_iterator_cancels_chunks_not_started(pool: ClusterPool,
                                                         tmp_path: Path) -> None:
    gate, marks = tmp_path / "gate", tmp_path / "marks"
    marks.mkdir()
    total = 40
    results = pool.map("clustertasks.block_in", [str(marks)] * total, [str(gate)] * total,
                       range(total), chunksize=1)
    try:
        wait_until(lambda: items_in(marks) == 2, CLUSTER_LIMIT, "one item running per process")
        results.close()  # before any result was read
    finally:
        gate.touch()
    wait_until(lambda: all(w.state == "idle" for w in pool.status()), CLUSTER_LIMIT,
               "the running items to finish")
    # The running items finish; the window's queued ones and those never
    # sent do not run, then or later.
    window = IN_FLIGHT_PER_SLOT * pool.workers
    assert items_in(marks) <= window
    assert list(pool.map("math.sqrt", [4.0])) == [2.0]  # the pool serves the next map
    assert items_in(marks) <= window
    assert list(results) == []


def test_ctrl_c_while_the_chunks_are_sent_stops_the_map(pool: ClusterPool, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    # Ctrl-C lands wherever the caller's thread is. A SIGINT cannot be timed
    # to land inside dask's submit of the third chunk; this is what its
    # handler raises there. It was once taken for dask refusing that chunk,
    # an error shown only in its turn: the map went on, blocked on the first.
    gate, marks = tmp_path / "gate", tmp_path / "marks"
    marks.mkdir()
    submit = pool._client.submit
    submits = itertools.count(1)

    def interrupted_at_the_third(*args: object, **kwargs: object) -> object:
        if next(submits) == 3:
            raise KeyboardInterrupt
        return submit(*args, **kwargs)

    monkeypatch.setattr(pool._client, "submit", interrupted_at_the_third)
    total = 40
    try:
        with pytest.raises(KeyboardInterrupt):
            pool.map("clustertasks.block_in", [str(marks)] * total, [str(gate)] * total,
                     range(total), chunksize=1)
    finally:
        monkeypatch.undo()
        gate.touch()
    wait_until(lambda: all(w.state == "idle" for w in pool.status()), CLUSTER_LIMIT,
               "the items already sent to finish")
    # The two chunks sent before the interrupt may have run; nothing after.
    assert items_in(marks) <= 2
    assert list(pool.map("math.sqrt", [4.0, 9.0, 16.0], chunksize=1)) == [2.0, 3.0, 4.0]
    assert all(p.in_flight == 0 for p in pool._placement.every())


def test_buffersize_reads_an_infinite_input_lazily(pool: ClusterPool) -> None:
    results = pool.map("operator.neg", itertools.count(), buffersize=4)
    assert list(itertools.islice(results, 10)) == [-i for i in range(10)]
    results.close()


def test_an_item_that_cannot_cross_fails_the_call(pool: ClusterPool) -> None:
    import threading

    with pytest.raises(ShareabilityError):
        pool.map("clustertasks.where", [1, threading.Lock()])


def test_once_chunks_are_long_each_goes_to_a_free_subinterpreter(
        pool: ClusterPool, monkeypatch: pytest.MonkeyPatch) -> None:
    # A chunk queued behind a long one is pinned to its process: at the end
    # of a map it waits there while another process idles. So after the
    # first window (IN_FLIGHT_PER_SLOT per subinterpreter, sent before any
    # chunk's length is known), no chunk is sent to a busy process.
    placement = pool._placement
    acquire = placement.acquire
    sent_to_a_busy_process: list[bool] = []

    def recorded(exclude: frozenset[str] = frozenset()) -> Any:
        busy = all(p.in_flight >= p.slots for p in placement.live())
        sent_to_a_busy_process.append(busy)
        return acquire(exclude)

    monkeypatch.setattr(placement, "acquire", recorded)
    items = 12
    assert list(pool.map("pooltasks.sleep_then", [0.2] * items, range(items), chunksize=1,
                         timeout=CLUSTER_LIMIT)) == list(range(items))
    first_window = IN_FLIGHT_PER_SLOT * pool.workers
    assert len(sent_to_a_busy_process) == items
    assert not any(sent_to_a_busy_process[first_window:]), sent_to_a_busy_process
