"""The kernel's IPython history reaches its database: at once for a cell
after a quiet moment (a cell that crashes the kernel leaves its input), and
for a burst of quick cells in a few throttled writes, none lost
(interp_rpc_kernel/history.py)."""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path

from conftest import Kernel, start_kernel, stop_kernel

from interp_rpc_kernel.history import WriteThrottle

# Bounds on waits, never expectations of speed.
WAIT = 30


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_first_request_asks_at_once() -> None:
    asked = threading.Event()
    WriteThrottle(asked.set, interval=60, clock=FakeClock()).request()
    assert asked.is_set()


def test_requests_within_the_interval_share_one_later_ask() -> None:
    clock = FakeClock()
    asks: list[float] = []
    done = threading.Event()

    def ask() -> None:
        asks.append(clock.now)
        if len(asks) == 2:
            done.set()

    throttle = WriteThrottle(ask, interval=0.2, clock=clock)
    throttle.request()
    for _ in range(50):
        throttle.request()  # the clock stands still: all within the interval
    assert len(asks) == 1
    assert done.wait(WAIT)
    time.sleep(0.3)  # room for a wrong third ask
    assert len(asks) == 2


def test_a_request_after_the_interval_asks_at_once() -> None:
    clock = FakeClock()
    asks: list[float] = []
    throttle = WriteThrottle(lambda: asks.append(clock.now), interval=0.2, clock=clock)
    throttle.request()
    clock.now += 0.2
    throttle.request()
    assert asks == [1000.0, 1000.2]


def history_file(kernel: Kernel) -> tuple[Path, int]:
    result = kernel.execute(
        "_hm = get_ipython().history_manager\nprint(_hm.hist_file)\nprint(_hm.session_number)",
        store_history=False,
    )
    assert result.status == "ok", result.reply
    path, session = result.stream().split()
    return Path(path), int(session)


def stored_inputs(path: Path, session: int) -> list[str]:
    with sqlite3.connect(path, timeout=WAIT) as db:
        rows = db.execute(
            "SELECT source_raw FROM history WHERE session = ? ORDER BY line", (session,)
        ).fetchall()
    return [row[0] for row in rows]


def wait_for_inputs(path: Path, session: int, expected: list[str]) -> list[str]:
    deadline = time.monotonic() + WAIT
    while True:
        stored = stored_inputs(path, session)
        if stored == expected or time.monotonic() > deadline:
            return stored
        time.sleep(0.05)


def test_an_input_is_in_the_database_while_its_cell_runs(
    shared_kernel: Kernel, tmp_path: Path
) -> None:
    path, session = history_file(shared_kernel)
    before = stored_inputs(path, session)
    time.sleep(0.5)  # a quiet moment, longer than the throttle's interval
    release = tmp_path / "release"
    cell = f"import os, time\nwhile not os.path.exists({str(release)!r}):\n    time.sleep(0.01)"
    msg_id = shared_kernel.send(cell)
    try:
        stored = wait_for_inputs(path, session, [*before, cell])
    finally:
        release.touch()
    assert shared_kernel.collect(msg_id).status == "ok"
    assert stored == [*before, cell]


def test_a_burst_of_cells_loses_no_input(shared_kernel: Kernel) -> None:
    path, session = history_file(shared_kernel)
    before = stored_inputs(path, session)
    cells = [f"burst_{i} = {i}" for i in range(200)]
    for msg_id in [shared_kernel.send(cell) for cell in cells]:
        assert shared_kernel.collect(msg_id).status == "ok"
    assert wait_for_inputs(path, session, [*before, *cells]) == [*before, *cells]


def test_history_search_right_after_a_burst_sees_every_input(shared_kernel: Kernel) -> None:
    cells = [f"searched_{i} = {i}" for i in range(50)]
    for msg_id in [shared_kernel.send(cell) for cell in cells]:
        assert shared_kernel.collect(msg_id).status == "ok"
    # %history -g reads the database, after writing what is pending.
    result = shared_kernel.execute("%history -g searched_")
    assert result.status == "ok", result.reply
    for cell in cells:
        assert cell in result.stream()


def test_inputs_of_a_burst_just_before_shutdown_are_kept() -> None:
    kernel = start_kernel()
    try:
        path, session = history_file(kernel)
        cells = [f"last_{i} = {i}" for i in range(100)]
        for msg_id in [kernel.send(cell) for cell in cells]:
            assert kernel.collect(msg_id).status == "ok"
    finally:
        stop_kernel(kernel)
    assert stored_inputs(path, session) == cells
