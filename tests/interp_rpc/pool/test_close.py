"""close(): stops accepting, lets queued work finish (or cancels it), never hangs."""

from __future__ import annotations

import concurrent.futures
import threading
import time
import warnings
from concurrent.futures import CancelledError
from pathlib import Path

import pytest
from support import Gates, MakePool, states, wait_only_main_interpreter, wait_until

from interp_rpc import InterpreterPool, PoolClosedError


def test_calls_after_close_raise_pool_closed_error() -> None:
    pool = InterpreterPool(workers=2, init="import pooltasks")
    pool.close()
    assert pool.closed
    with pytest.raises(PoolClosedError):
        pool.call("pooltasks.add", 1, 2)
    with pytest.raises(PoolClosedError):
        pool.submit("pooltasks.add", 1, 2)
    with pytest.raises(PoolClosedError):
        list(pool.map("pooltasks.square", [1, 2]))
    assert "closed" in repr(pool)
    assert states(pool) == ["stopped", "stopped"]
    wait_only_main_interpreter()


def test_close_twice_and_shutdown_after_close_are_fine() -> None:
    pool = InterpreterPool(workers=2)
    pool.close()
    pool.close()
    pool.close(wait=False, timeout=0)
    pool.shutdown()
    assert pool.closed


def test_context_manager_closes_even_on_error() -> None:
    with pytest.raises(RuntimeError), InterpreterPool(workers=2) as pool:
        raise RuntimeError("inside the with block")
    assert pool.closed
    with pytest.raises(PoolClosedError):
        pool.call("os.getpid")


def block_every_worker(pool: InterpreterPool, gates: Gates) -> list[object]:
    blockers = [gates.new() for _ in range(pool.workers)]
    running = [pool.submit("pooltasks.block", *g.args(f"running-{i}"))
               for i, g in enumerate(blockers)]
    for gate in blockers:
        gate.wait_started()
    return running


def test_close_lets_queued_work_finish(make_pool: MakePool, gates: Gates,
                                      tmp_path: Path) -> None:
    pool = make_pool()
    running = block_every_worker(pool, gates)
    markers = [tmp_path / f"queued-{i}" for i in range(6)]
    queued = [pool.submit("pooltasks.touch", str(m)) for m in markers]
    closer = threading.Thread(target=pool.close)
    closer.start()
    wait_until(lambda: pool.closed)
    with pytest.raises(PoolClosedError):
        pool.call("pooltasks.add", 1, 2)  # no longer accepting ...
    assert closer.is_alive()  # ... but waiting for the queued work
    gates.release_all()
    closer.join(60)
    assert not closer.is_alive()
    assert [f.result(timeout=0) for f in running] == ["running-0", "running-1"]
    assert [f.result(timeout=0) for f in queued] == [str(m) for m in markers]
    assert all(m.exists() for m in markers)
    assert states(pool) == ["stopped", "stopped"]


def test_close_without_wait_cancels_queued_calls(make_pool: MakePool, gates: Gates,
                                                tmp_path: Path) -> None:
    pool = make_pool()
    running = block_every_worker(pool, gates)
    markers = [tmp_path / f"queued-{i}" for i in range(6)]
    queued = [pool.submit("pooltasks.touch", str(m)) for m in markers]
    closer = threading.Thread(target=pool.close, kwargs={"wait": False})
    closer.start()
    wait_until(lambda: all(f.cancelled() for f in queued), what="queued futures cancelled")
    for future in queued:
        with pytest.raises(CancelledError):
            future.result(timeout=0)
    # Running calls cannot be cancelled: they finish.
    assert not any(f.done() for f in running)
    gates.release_all()
    closer.join(60)
    assert not closer.is_alive()
    assert [f.result(timeout=0) for f in running] == ["running-0", "running-1"]
    assert not any(m.exists() for m in markers)


def test_close_with_a_stuck_worker_gives_up_and_warns(make_pool: MakePool,
                                                      gates: Gates) -> None:
    pool = make_pool(workers=1)
    gate = gates.new()
    pool.submit("pooltasks.block", *gate.args())
    gate.wait_started()
    stuck = next(w.index for w in pool.status() if w.state == "busy")
    queued = [pool.submit("pooltasks.square", i) for i in range(3)]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        pool.close(timeout=0.5)  # returns although the call runs on: it gave up
    runtime_warnings = [w for w in caught if issubclass(w.category, RuntimeWarning)]
    assert len(runtime_warnings) == 1
    message = str(runtime_warnings[0].message)
    assert f"worker {stuck} running 'pooltasks.block' for " in message
    assert "gave up after 0.5 s on 1 stuck worker(s)" in message
    # The seconds it had been running, as a number.
    seconds = float(message.split("for ", 1)[1].split(" s", 1)[0])
    assert seconds >= 0.5
    assert runtime_warnings[0].filename == __file__  # points at the caller's close()
    with pytest.raises(PoolClosedError):
        pool.call("pooltasks.add", 1, 2)
    # The calls queued behind it do not wait for a worker that may never be
    # free: they are cancelled.
    outcomes = concurrent.futures.wait(queued, timeout=30)
    assert not outcomes.not_done, "a queued call still waits after close() gave up"
    assert all(f.cancelled() for f in queued)
    # Once the call ends on its own, the worker goes away.
    gate.release()
    wait_only_main_interpreter()


def test_close_timeout_with_no_stuck_worker_does_not_warn() -> None:
    pool = InterpreterPool(workers=2, init="import pooltasks")
    assert pool.call("pooltasks.add", 1, 2) == 3
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        pool.close(timeout=30)


def test_close_timeout_is_checked() -> None:
    with InterpreterPool(workers=1) as pool:
        with pytest.raises(ValueError, match="timeout must be a non-negative number"):
            pool.close(timeout=-1)
        assert pool.call("os.getpid")


def test_eight_threads_closing_at_once_all_return(make_pool: MakePool, gates: Gates) -> None:
    # Regression: two close() calls joined the same threads (undefined
    # behaviour); with eight, one never returned and the process hung.
    pool = make_pool()
    gate = gates.new()
    running = pool.submit("pooltasks.block", *gate.args("done"))
    gate.wait_started()
    start = threading.Barrier(8)
    errors: list[BaseException] = []

    def close() -> None:
        start.wait()
        try:
            pool.close()
        except BaseException as exc:
            errors.append(exc)

    closers = [threading.Thread(target=close, daemon=True) for _ in range(8)]
    for closer in closers:
        closer.start()
    wait_until(lambda: pool.closed)
    gate.release()
    for closer in closers:
        closer.join(60)
    assert not [c for c in closers if c.is_alive()], "a close() never returned"
    assert errors == []
    assert running.result(timeout=0) == "done"
    assert states(pool) == ["stopped", "stopped"]
    wait_only_main_interpreter()


@pytest.mark.filterwarnings("ignore:InterpreterPool.close\\(\\) gave up:RuntimeWarning")
def test_closing_from_many_threads_with_timeouts_and_a_stuck_worker(
        make_pool: MakePool, gates: Gates) -> None:
    pool = make_pool()
    gate = gates.new()
    pool.submit("pooltasks.block", *gate.args())
    gate.wait_started()
    returned: list[float] = []
    lock = threading.Lock()

    def close() -> None:
        pool.close(timeout=0.2)  # warns, naming the stuck worker
        with lock:
            returned.append(time.monotonic())

    closers = [threading.Thread(target=close, daemon=True) for _ in range(6)]
    for closer in closers:
        closer.start()
    for closer in closers:
        closer.join(30)  # each gives up on the stuck worker after 0.2 s
    assert len(returned) == 6
    gate.release()
    pool.close()  # and the last close() joins it
    wait_only_main_interpreter()
