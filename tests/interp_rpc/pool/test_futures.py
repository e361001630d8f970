"""Futures from submit(): results, exceptions, callbacks, waiting and cancellation."""

from __future__ import annotations

import concurrent.futures
import sys
import threading
from collections.abc import Iterator
from concurrent.futures import CancelledError, Future
from pathlib import Path

import pytest
from support import Gates

from interp_rpc import InterpreterPool, RemoteError


@pytest.fixture
def frequent_thread_switches() -> Iterator[None]:
    """Switch threads as often as possible, so that races between the
    submitting thread and the engine's completion thread show up."""
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        yield
    finally:
        sys.setswitchinterval(interval)


def test_a_call_that_finishes_before_submit_returns_still_settles_its_future(
        module_pool: InterpreterPool, frequent_thread_switches: None) -> None:
    # Regression: the completion thread could settle a future before submit()
    # had attached its handle; the future then never completed.
    futures = [module_pool.submit("pooltasks.square", i) for i in range(3000)]
    _, not_done = concurrent.futures.wait(futures, timeout=60)
    assert not not_done, f"{len(not_done)} futures never completed"
    assert [f.result() for f in futures] == [i * i for i in range(3000)]


def test_result_and_exception(module_pool: InterpreterPool) -> None:
    ok = module_pool.submit("pooltasks.add", 1, 2)
    bad = module_pool.submit("pooltasks.fail", "no good")
    assert ok.result(timeout=30) == 3
    assert ok.exception(timeout=30) is None
    error = bad.exception(timeout=30)
    assert isinstance(error, RemoteError)
    assert error.remote_message == "no good"
    with pytest.raises(RemoteError, match="no good"):
        bad.result(timeout=30)


def test_result_timeout_raises_timeout_error_and_the_future_stays_usable(
        pool: InterpreterPool, gates: Gates) -> None:
    gate = gates.new()
    future = pool.submit("pooltasks.block", *gate.args("late"))
    with pytest.raises(TimeoutError):
        future.result(timeout=0.2)
    with pytest.raises(TimeoutError):
        future.exception(timeout=0.05)
    assert not future.done()
    gate.release()
    assert future.result(timeout=30) == "late"


def test_done_callbacks_run_once_with_the_settled_future(module_pool: InterpreterPool) -> None:
    seen: list[tuple[Future[object], object]] = []
    event = threading.Event()

    def callback(future: Future[object]) -> None:
        seen.append((future, future.result()))
        event.set()

    future = module_pool.submit("pooltasks.add", 40, 2)
    future.add_done_callback(callback)
    assert event.wait(30)
    assert seen == [(future, 42)]
    # Added after completion: runs at once, in this thread.
    future.add_done_callback(callback)
    assert seen[-1] == (future, 42)
    assert len(seen) == 2


def test_callbacks_fire_without_anyone_calling_result(module_pool: InterpreterPool) -> None:
    events = [threading.Event() for _ in range(20)]
    futures = [module_pool.submit("pooltasks.square", i) for i in range(20)]
    for future, event in zip(futures, events, strict=True):
        future.add_done_callback(lambda _f, e=event: e.set())
    for event in events:
        assert event.wait(30)


def test_concurrent_futures_wait_and_as_completed(pool: InterpreterPool, gates: Gates) -> None:
    gate = gates.new()
    slow = pool.submit("pooltasks.block", *gate.args("slow"))
    fast = [pool.submit("pooltasks.square", i) for i in range(10)]
    done, not_done = concurrent.futures.wait(fast, timeout=30)
    assert done == set(fast) and not not_done
    done, not_done = concurrent.futures.wait([slow, *fast], timeout=0.2)
    assert not_done == {slow}
    done, not_done = concurrent.futures.wait(
        [slow, *fast], timeout=0.2, return_when=concurrent.futures.FIRST_COMPLETED)
    assert slow in not_done and done
    gate.release()
    order = list(concurrent.futures.as_completed([slow, *fast], timeout=30))
    assert set(order) == {slow, *fast}
    assert slow.result() == "slow"
    failing = pool.submit("pooltasks.fail", "x")
    done, _ = concurrent.futures.wait([failing], timeout=30,
                                      return_when=concurrent.futures.FIRST_EXCEPTION)
    assert done == {failing}


def test_cancel_of_a_queued_future_means_it_never_runs(
        pool: InterpreterPool, gates: Gates, tmp_path: Path) -> None:
    blockers = [gates.new() for _ in range(pool.workers)]
    running = [pool.submit("pooltasks.block", *g.args(i)) for i, g in enumerate(blockers)]
    for gate in blockers:
        gate.wait_started()
    marker = tmp_path / "must-not-exist"
    queued = pool.submit("pooltasks.touch", str(marker))
    callback_saw: list[bool] = []
    queued.add_done_callback(lambda f: callback_saw.append(f.cancelled()))

    assert queued.cancel() is True
    assert queued.cancelled() and queued.done()
    assert callback_saw == [True]
    with pytest.raises(CancelledError):
        queued.result(timeout=1)
    assert queued.cancel() is True  # cancelling again is harmless
    # wait() and as_completed() count it as done (regression: it stayed
    # CANCELLED, never CANCELLED_AND_NOTIFIED, and wait() waited for ever).
    assert concurrent.futures.wait([queued], timeout=30).done == {queued}
    assert list(concurrent.futures.as_completed([queued], timeout=30)) == [queued]

    for gate in blockers:
        gate.release()
    assert [f.result(timeout=30) for f in running] == [0, 1]
    # Both workers are free again: anything queued before would have run.
    assert list(pool.map("pooltasks.square", range(4), chunksize=1)) == [0, 1, 4, 9]
    assert not marker.exists()
    assert "cancelled" in [r.outcome for r in pool.call_records()]


def test_cancel_of_a_running_future_returns_false(pool: InterpreterPool, gates: Gates) -> None:
    gate = gates.new()
    future = pool.submit("pooltasks.block", *gate.args("finished anyway"))
    gate.wait_started()
    assert future.cancel() is False
    assert not future.cancelled()
    assert not future.done()
    gate.release()
    assert future.result(timeout=30) == "finished anyway"
    assert future.cancel() is False  # done futures cannot be cancelled either



def test_a_done_callback_can_shut_the_pool_down(gates: Gates) -> None:
    # Regression: callbacks ran on the engine's completion thread, which
    # shutdown() joins: "Resource deadlock avoided".
    pool = InterpreterPool(workers=2, init="import pooltasks")
    closed = threading.Event()
    errors: list[BaseException] = []

    def shut_down(_future: Future[object]) -> None:
        try:
            pool.shutdown(wait=True)
        except BaseException as exc:
            errors.append(exc)
        closed.set()

    future = pool.submit("pooltasks.add", 1, 2)
    future.add_done_callback(shut_down)
    assert closed.wait(30)
    assert errors == []
    assert future.result(timeout=0) == 3
    assert pool.closed
    assert [w.state for w in pool.status()] == ["stopped", "stopped"]


def test_a_blocking_done_callback_stalls_no_other_future(pool: InterpreterPool) -> None:
    # Regression: one completion thread ran every callback, so a callback
    # that blocked stopped every other future from settling.
    release = threading.Event()
    blocking_entered = threading.Event()

    def block(_future: Future[object]) -> None:
        blocking_entered.set()
        release.wait(60)

    try:
        first = pool.submit("pooltasks.add", 1, 1)
        first.add_done_callback(block)
        assert blocking_entered.wait(30)
        later = [pool.submit("pooltasks.square", i) for i in range(20)]
        called = [threading.Event() for _ in later]
        for future, event in zip(later, called, strict=True):
            future.add_done_callback(lambda _f, e=event: e.set())
        # Settled without anyone calling result(), and their callbacks ran.
        _, not_done = concurrent.futures.wait(later, timeout=30)
        assert not not_done
        for event in called:
            assert event.wait(30)
    finally:
        release.set()


def test_done_callbacks_do_not_run_on_the_engine_thread(module_pool: InterpreterPool) -> None:
    from interp_rpc import _core

    seen: list[bool] = []
    ran = threading.Event()

    def record(_future: Future[object]) -> None:
        seen.append(_core.on_completion_thread())
        ran.set()

    future = module_pool.submit("pooltasks.add", 2, 2)
    future.add_done_callback(record)
    assert ran.wait(30)
    assert seen == [False]


def test_a_handle_that_lost_the_claim_releases_nothing(module_pool: InterpreterPool) -> None:
    # Only the party that won the claim may release what a call holds (its
    # future, the caller's buffers). A buffer still exported cannot resize.
    data = bytearray(b"x" * 100)
    encoded = module_pool._encode("pooltasks.add", (1, 2), {})
    status, handle = module_pool._engine.submit(encoded.name, encoded.data, [data], -1, 1, None,
                                                encoded.submitted_ns, encoded.serialize_ns, -1)
    assert status == "queued" and handle is not None
    assert handle.wait(30)
    assert handle.release() is False  # not claimed: nothing released
    # The engine's completion thread contests the claim of a call that had
    # finished before wait() (nobody was waiting on it): whoever wins
    # releases, exactly once.
    if handle.claim():
        with pytest.raises(BufferError):  # the release() above released nothing
            data.extend(b"y")
        assert handle.release() is True
    else:
        assert handle.release() is False  # the completion thread released it
    data.extend(b"y")  # released now


def test_infinite_timeouts_mean_no_timeout(module_pool: InterpreterPool) -> None:
    inf = float("inf")
    assert module_pool.call("pooltasks.add", 1, 2, timeout=inf) == 3
    assert module_pool.submit("pooltasks.add", 2, 2).result(timeout=inf) == 4
    assert list(module_pool.map("pooltasks.square", range(4), timeout=inf)) == [0, 1, 4, 9]
    assert module_pool._engine.interrupt([], inf) == []
    with InterpreterPool(workers=1, init_timeout=inf) as pool:
        assert pool.call("math.sqrt", 16.0, timeout=1e300) == 4.0
        pool.close(timeout=inf)
