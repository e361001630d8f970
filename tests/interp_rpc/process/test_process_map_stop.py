"""A ProcessPool's map stops its running chunks before their next item, as
an InterpreterPool's does: after a failing item, close() of the results,
Ctrl-C (or a stop from another thread). Each map's flag is a byte of the
pool's stop board, a page of shared memory every worker process maps."""

from __future__ import annotations

import gc
import os
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from support import Gates, wait_until

from interp_rpc import ProcessPool, RemoteError
from interp_rpc._pool.map import MapRun
from interp_rpc.process.stop_board import BOARD_BYTES, BOARD_NAME

MakeProcessPool = Callable[..., ProcessPool]


def touch_items(tmp_path: Path, count: int) -> tuple[list[Path], list[tuple[str, str]]]:
    """Files that the items after a stop would create, and those items."""
    paths = [tmp_path / f"touched-{i}" for i in range(count)]
    return paths, [("touch", str(path)) for path in paths]


def idle(pool: ProcessPool) -> bool:
    return all(w.state == "idle" for w in pool.status())


def close_a_map_in_its_first_item(pool: ProcessPool, gates: Gates, tmp_path: Path) -> list[Path]:
    """Start a map of one chunk, close its results while the chunk runs its
    first item, then let that item end. Returns the files its next items
    would create, once the worker is idle."""
    held = gates.new()
    touched, touching = touch_items(tmp_path, 2)
    results = pool.map("pooltasks.map_item", [held.map_item(0), *touching], chunksize=3)
    held.wait_started()
    results.close()
    held.release()
    wait_until(lambda: idle(pool), what="the worker idle")
    return touched


def test_closing_the_results_stops_a_running_chunk_before_its_next_item(
        make_process_pool: MakeProcessPool, gates: Gates, tmp_path: Path) -> None:
    pool = make_process_pool(workers=1)
    held = gates.new()
    touched, touching = touch_items(tmp_path, 5)
    # Chunks of 3: [0, 1, 2], [held, touch 0, touch 1], [touch 2-4].
    items = [("ok", 0), ("ok", 1), ("ok", 2), held.map_item(3), *touching]
    results = pool.map("pooltasks.map_item", items, chunksize=3)
    assert next(results) == 0
    held.wait_started()  # the second chunk runs, inside its first item
    results.close()
    held.release()
    wait_until(lambda: idle(pool), what="the worker idle")
    assert not any(path.exists() for path in touched)
    assert list(pool.map("pooltasks.square", range(4))) == [0, 1, 4, 9]


def test_a_profiled_map_stops_its_running_chunk_too(
        make_process_pool: MakeProcessPool, gates: Gates, tmp_path: Path) -> None:
    # A profiled chunk times its items in a loop of its own.
    pool = make_process_pool(workers=1)
    with pool.profile():
        touched = close_a_map_in_its_first_item(pool, gates, tmp_path)
    assert not any(path.exists() for path in touched)


def test_a_failing_item_stops_the_chunk_running_beside_it(
        make_process_pool: MakeProcessPool, gates: Gates, tmp_path: Path) -> None:
    pool = make_process_pool(workers=2)
    held = gates.new()
    failing = tmp_path / "fail now"
    touched, touching = touch_items(tmp_path, 2)
    # Chunks of 3, one per worker: [0, 1, fails], [held, touch 0, touch 1].
    items = [("ok", 0), ("ok", 1), ("fail_after", str(failing), "boom"),
             held.map_item(3), *touching]
    results = pool.map("pooltasks.map_item", items, chunksize=3)
    held.wait_started()
    failing.touch()
    with pytest.raises(RemoteError, match="boom"):
        list(results)
    held.release()
    wait_until(lambda: idle(pool), what="the workers idle")
    assert not any(path.exists() for path in touched)


def test_a_stop_from_another_thread_stops_the_running_chunks(
        make_process_pool: MakeProcessPool, gates: Gates, tmp_path: Path) -> None:
    # What %parallel_stop does from a subshell, and Ctrl-C in the caller.
    pool = make_process_pool(workers=2)
    blockers = [gates.new() for _ in range(2)]
    touched, touching = touch_items(tmp_path, 4)
    items = [blockers[0].map_item(0), *touching[:2], blockers[1].map_item(3), *touching[2:]]
    run = MapRun(pool, "pooltasks.map_item", (items,), timeout=None, chunksize=3,
                 buffersize=None)
    outcome: list[object] = []
    collector = threading.Thread(target=lambda: outcome.append(_collect(run)), daemon=True)
    collector.start()
    for blocker in blockers:
        blocker.wait_started()
    run.request_stop()
    collector.join(30)
    assert not collector.is_alive(), "the stop did not end the wait"
    assert len(outcome) == 1 and isinstance(outcome[0], KeyboardInterrupt), outcome
    gates.release_all()
    wait_until(lambda: idle(pool), what="the workers idle")
    assert not any(path.exists() for path in touched)


def _collect(run: MapRun) -> object:
    try:
        return run.collect()
    except BaseException as exc:  # what the collecting thread saw
        return exc


def test_a_map_takes_a_byte_of_the_board_and_gives_it_back_when_it_goes(
        process_pool: ProcessPool) -> None:
    board = process_pool._engine.stop_board
    free = board.free_bytes()
    results = process_pool.map(abs, range(-100, 100), chunksize=10)
    assert board.free_bytes() == free - 1
    assert list(results) == [abs(x) for x in range(-100, 100)]
    del results
    gc.collect()
    assert board.free_bytes() == free


def test_a_byte_given_back_is_taken_again_last(process_pool: ProcessPool) -> None:
    # A chunk still finishing for a map that is over reads its own byte for
    # as long as can be.
    board = process_pool._engine.stop_board
    taken = board.take()
    assert taken is not None
    board.give_back(taken[0])
    others = [board.take() for _ in range(board.free_bytes() - 1)]
    last = board.take()
    assert last is not None and last[0] == taken[0]
    assert board.take() is None
    for other in others:
        assert other is not None
        board.give_back(other[0])
    board.give_back(last[0])
    assert board.free_bytes() == BOARD_BYTES


def test_with_every_byte_taken_a_map_still_runs_unstoppable(
        make_process_pool: MakeProcessPool, gates: Gates, tmp_path: Path) -> None:
    pool = make_process_pool(workers=1)
    board = pool._engine.stop_board
    every = [board.take() for _ in range(BOARD_BYTES)]
    try:
        assert board.take() is None
        assert list(pool.map(abs, range(-100, 100), chunksize=10)) == \
            [abs(x) for x in range(-100, 100)]
        # Its running chunks finish rather than stop.
        touched = close_a_map_in_its_first_item(pool, gates, tmp_path)
        assert all(path.exists() for path in touched)
    finally:
        for byte in every:
            assert byte is not None
            board.give_back(byte[0])


def test_a_replacement_worker_reads_the_board_too(
        make_process_pool: MakeProcessPool, gates: Gates, tmp_path: Path) -> None:
    pool = make_process_pool(workers=1)
    [first] = pool.worker_pids()
    os.kill(first, 9)
    wait_until(lambda: pool.worker_pids() not in ([], [first]), what="a replacement")
    wait_until(lambda: idle(pool), what="the replacement ready")
    touched = close_a_map_in_its_first_item(pool, gates, tmp_path)
    assert not any(path.exists() for path in touched)


def board_descriptors() -> list[str]:
    found = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if BOARD_NAME in target:
            found.append(target)
    return found


def test_close_lets_go_of_the_board(make_process_pool: MakeProcessPool) -> None:
    before = len(board_descriptors())
    pool = make_process_pool(workers=1)
    assert len(board_descriptors()) == before + 1
    pool.close()
    assert len(board_descriptors()) == before
