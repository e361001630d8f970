"""Ctrl-C (KeyboardInterrupt) stops a caller blocked on the pool; the pool stays usable."""

from __future__ import annotations

import _thread
import threading
import time
from collections.abc import Callable

import pytest
from support import Gates, states, wait_only_main_interpreter, wait_until

from interp_rpc import InterpreterPool


def interrupt_when(condition: Callable[[], bool]) -> threading.Thread:
    """Deliver KeyboardInterrupt to the main thread once ``condition()`` holds."""
    def run() -> None:
        wait_until(condition)
        time.sleep(0.1)  # let the main thread settle into its wait
        _thread.interrupt_main()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


@pytest.fixture
def main_thread() -> None:
    """On the main thread (conftest gives it Python's own SIGINT handler)."""
    if threading.current_thread() is not threading.main_thread():
        pytest.skip("KeyboardInterrupt goes to the main thread")


def test_interrupt_stops_a_blocked_call(main_thread: None, pool: InterpreterPool,
                                        gates: Gates) -> None:
    gate = gates.new()
    interrupter = interrupt_when(gate.has_started)
    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        pool.call("pooltasks.block", *gate.args())  # would block for up to 60 s
    assert time.monotonic() - started < 5
    interrupter.join(10)
    # The call goes on in its worker; the pool is still usable.
    assert pool.call("pooltasks.add", 1, 2, timeout=30) == 3
    busy = [w for w in pool.status() if w.state == "busy"]
    assert [w.target for w in busy] == ["pooltasks.block"]
    gate.release()
    wait_until(lambda: all(w.state == "idle" for w in pool.status()))
    assert list(pool.map("pooltasks.square", range(4))) == [0, 1, 4, 9]


def test_interrupt_stops_a_map_and_cancels_its_queued_chunks(
        main_thread: None, pool: InterpreterPool, gates: Gates) -> None:
    blockers = [gates.new() for _ in range(2)]
    later = [gates.new() for _ in range(6)]
    items = [g.map_item(i) for i, g in enumerate(blockers + later)]
    interrupter = interrupt_when(lambda: all(g.has_started() for g in blockers))
    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        list(pool.map("pooltasks.map_item", items, chunksize=1))
    assert time.monotonic() - started < 5
    interrupter.join(10)
    gates.release_all()
    wait_until(lambda: len([r for r in pool.call_records()
                            if r.target == "pooltasks.map_item"]) == len(items))
    assert not any(g.has_started() for g in later)
    assert list(pool.map("pooltasks.square", range(4))) == [0, 1, 4, 9]


def test_interrupt_stops_future_result(main_thread: None, pool: InterpreterPool,
                                       gates: Gates) -> None:
    gate = gates.new()
    future = pool.submit("pooltasks.block", *gate.args("eventually"))
    interrupter = interrupt_when(gate.has_started)
    with pytest.raises(KeyboardInterrupt):
        future.result()
    interrupter.join(10)
    gate.release()
    assert future.result(timeout=30) == "eventually"


def test_interrupt_stops_close_waiting_for_a_running_call(main_thread: None, gates: Gates
                                                          ) -> None:
    # Regression: close() waited with the GIL released and never ran signal
    # handlers, so Ctrl-C in `with InterpreterPool() as p: p.call(long)` hung.
    pool = InterpreterPool(workers=2, init="import pooltasks")
    gate = gates.new()
    running = pool.submit("pooltasks.block", *gate.args("finished"))
    gate.wait_started()
    interrupter = interrupt_when(lambda: pool.closed)
    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        pool.close()
    assert time.monotonic() - started < 5
    interrupter.join(10)
    assert pool.closed
    # The pool goes on closing: the call finishes, and close() again ends it.
    gate.release()
    assert running.result(timeout=30) == "finished"
    pool.close()
    assert states(pool) == ["stopped", "stopped"]


def test_interrupt_stops_the_constructor_waiting_for_init(main_thread: None, gates: Gates
                                                          ) -> None:
    gate = gates.new()
    started_file, gate_file, _ = gate.args()
    init = f"import pooltasks\npooltasks.block({started_file!r}, {gate_file!r})"
    interrupter = interrupt_when(gate.has_started)
    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        InterpreterPool(workers=1, init=init, init_timeout=None)
    assert time.monotonic() - started < 5
    interrupter.join(10)
    # The half-started pool is still owned: its worker ends once init does.
    gate.release()
    wait_only_main_interpreter()


@pytest.mark.parametrize("kind", ["range", "list"])
def test_interrupt_stops_a_map_of_ten_million_items(main_thread: None, pool: InterpreterPool,
                                                     kind: str) -> None:
    items = range(10**7) if kind == "range" else list(range(10**7))
    interrupter = interrupt_when(lambda: any(w.state == "busy" for w in pool.status()))
    with pytest.raises(KeyboardInterrupt):
        list(pool.map("columntasks.square_slowly", items))
    interrupter.join(10)
    # The running chunks stop before their next item: the workers are free.
    wait_until(lambda: all(w.state == "idle" for w in pool.status()))
    assert pool.call("pooltasks.add", 1, 2, timeout=30) == 3
