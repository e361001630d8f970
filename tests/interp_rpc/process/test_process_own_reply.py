"""call() reads its own reply when a worker takes the call at once, and
leaves it to the worker's reader thread when it stops reading: at its
timeout, when output comes first, when it is interrupted (engine.py)."""

from __future__ import annotations

import operator
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator

import pytest
from process_support import wait_ended
from support import wait_until

from interp_rpc import CallTimeoutError, ProcessPool, WorkerDiedError
from interp_rpc._pool.map import MapRun
from interp_rpc.notebook.relay import OutputRelay
from interp_rpc.process import framing

#: Long enough for a loaded machine to have every call here running.
SETTLE = 0.5


@pytest.fixture
def one_worker(make_process_pool: Callable[..., ProcessPool]) -> ProcessPool:
    return make_process_pool(workers=1)


def record_of(pool: ProcessPool, target: str) -> str:
    """The outcome of the last finished call of ``target``."""
    return [r.outcome for r in pool.call_records() if r.target == target][-1]


def test_ctrl_c_while_a_call_waits_leaves_its_reply_to_the_reader(one_worker: ProcessPool) -> None:
    pid = one_worker.call("processtasks.pid")

    def ctrl_c_once_busy() -> None:
        wait_until(lambda: one_worker.status()[0].state == "busy")
        os.kill(os.getpid(), signal.SIGINT)  # a real SIGINT, as Ctrl-C sends

    interrupter = threading.Thread(target=ctrl_c_once_busy)
    interrupter.start()
    with pytest.raises(KeyboardInterrupt):
        one_worker.call("processtasks.sleep_then", 4 * SETTLE, "abandoned")
    interrupter.join()
    # The call goes on; its reply is read by the reader, and the worker
    # takes the next call: nothing was cut, so it is not replaced.
    assert one_worker.call(operator.add, 1, 2, timeout=60) == 3
    assert record_of(one_worker, "processtasks.sleep_then") == "replied"
    assert one_worker.call("processtasks.pid") == pid


class HalfwayInterrupt:
    """Once armed, the main thread's next read of a message part raises
    KeyboardInterrupt, after the message's head was read: as a Ctrl-C
    landing there would."""

    def __init__(self) -> None:
        self.armed = False
        self.raised = 0


@pytest.fixture
def interrupt_halfway() -> Iterator[HalfwayInterrupt]:
    interrupt = HalfwayInterrupt()
    original = framing.Receiver._part

    def part(self: framing.Receiver, size: int) -> bytearray:
        if threading.current_thread() is threading.main_thread() and interrupt.armed:
            interrupt.armed = False
            interrupt.raised += 1
            raise KeyboardInterrupt
        return original(self, size)

    framing.Receiver._part = part  # type: ignore[method-assign]
    try:
        yield interrupt
    finally:
        framing.Receiver._part = original  # type: ignore[method-assign]


def test_ctrl_c_halfway_through_a_reply_replaces_the_worker(
        one_worker: ProcessPool, interrupt_halfway: HalfwayInterrupt) -> None:
    pid = one_worker.call("processtasks.pid")
    interrupt_halfway.armed = True
    with pytest.raises(KeyboardInterrupt):
        one_worker.call("processtasks.echo", "cut short")
    assert interrupt_halfway.raised == 1
    # The pipe was out of step: its worker was replaced, and the call failed.
    wait_ended([pid])
    assert one_worker.call("processtasks.echo", "whole", timeout=60) == "whole"
    assert one_worker.call("processtasks.pid") != pid
    outcomes = [r.outcome for r in one_worker.call_records() if r.target == "processtasks.echo"]
    assert outcomes == ["worker_died", "replied"]


def test_a_call_past_its_timeout_leaves_its_reply_to_the_reader(one_worker: ProcessPool) -> None:
    with pytest.raises(CallTimeoutError):
        one_worker.call("processtasks.sleep_then", 2 * SETTLE, "late", timeout=0.05)
    wait_until(lambda: one_worker.status()[0].state == "idle", what="the late reply to be read")
    assert record_of(one_worker, "processtasks.sleep_then") == "replied"
    assert one_worker.call(operator.mul, 6, 7, timeout=60) == 42


def test_a_call_queued_behind_one_that_reads_its_reply_runs_next(
        one_worker: ProcessPool) -> None:
    for n in range(3):  # the reader no longer watches the pipe: callers read their replies
        assert one_worker.call(operator.add, n, 0) == n
    first: list[object] = []
    reading = threading.Thread(target=lambda: first.append(
        one_worker.call("processtasks.sleep_then", SETTLE, "first")))
    reading.start()
    wait_until(lambda: one_worker.status()[0].state == "busy")
    queued = one_worker.submit(operator.add, 2, 3)
    # The caller that read the first reply leaves the queued call to the
    # reader, which hands it to the worker.
    assert one_worker.call(operator.add, 1, 1, timeout=60) == 2
    assert queued.result(timeout=60) == 5
    reading.join()
    assert first == ["first"]


def test_close_from_another_thread_while_a_call_reads_its_reply(
        one_worker: ProcessPool) -> None:
    for n in range(3):  # the reader no longer watches the pipe: callers read their replies
        assert one_worker.call(operator.add, n, 0) == n
    pids = one_worker.worker_pids()
    result: list[object] = []
    reading = threading.Thread(target=lambda: result.append(
        one_worker.call("processtasks.sleep_then", SETTLE, "finished")))
    reading.start()
    wait_until(lambda: one_worker.status()[0].state == "busy")
    closing = threading.Thread(target=one_worker.close)
    closing.start()
    closing.join(60)
    assert not closing.is_alive(), "close() waits on a worker nobody lets exit"
    reading.join()
    assert result == ["finished"]
    wait_ended(pids)


def relayed_map(pool: ProcessPool, relay: OutputRelay, target: str,
                *iterables: list[object]) -> list[object]:
    run = MapRun(pool, target, iterables, timeout=None, chunksize=1, buffersize=None,
                 errors="raise", output=relay.id)
    return run.collect()


def later_lines(relay: OutputRelay, taken: list[str]) -> list[str]:
    taken.extend(p.text for p in relay.take())
    return "".join(taken).splitlines()


def test_output_printed_after_its_call_is_relayed_while_the_worker_waits(
        one_worker: ProcessPool) -> None:
    relay = OutputRelay(one_worker)
    assert relayed_map(one_worker, relay, "processtasks.print_later", [5]) == [5]
    taken: list[str] = []
    wait_until(lambda: len(later_lines(relay, taken)) == 5,
               what="the lines printed after the call")
    assert later_lines(relay, taken) == [f"later {n}" for n in range(5)]


def test_output_that_comes_before_a_reply_is_relayed_and_the_reply_read(
        one_worker: ProcessPool) -> None:
    relay = OutputRelay(one_worker)
    lines = 100
    assert relayed_map(one_worker, relay, "processtasks.print_later", [lines], [0.002]) \
        == [lines]
    # Calls made while the lines come: a caller may find a line before its
    # reply in the pipe.
    deadline = time.monotonic() + 60
    taken: list[str] = []
    n = 0
    while len(later_lines(relay, taken)) < lines and time.monotonic() < deadline:
        assert one_worker.call(operator.add, n, 1, timeout=60) == n + 1
        n += 1
    assert later_lines(relay, taken) == [f"later {n}" for n in range(lines)]


def test_callers_maps_futures_timeouts_and_crashes_at_once(
        make_process_pool: Callable[..., ProcessPool]) -> None:
    """Every way a reply is read, at once: callers reading their own,
    a map's and futures' replies read by the readers, callers that stop
    reading at their timeout, workers that die under either."""
    pool = make_process_pool(workers=2)
    failures: list[BaseException] = []

    def calls(base: int) -> None:
        for n in range(300):
            assert pool.call(operator.add, base, n, timeout=60) == base + n

    def maps() -> None:
        for _ in range(5):
            assert list(pool.map(operator.neg, range(2000), timeout=60)) \
                == [-n for n in range(2000)]

    def futures() -> None:
        submitted = [pool.submit(operator.mul, n, 2) for n in range(300)]
        assert [f.result(timeout=60) for f in submitted] == [2 * n for n in range(300)]

    def timeouts_and_crashes() -> None:
        for _ in range(3):
            with pytest.raises(CallTimeoutError):
                pool.call("processtasks.sleep_then", 0.2, None, timeout=0.01)
            with pytest.raises(WorkerDiedError):
                pool.call("processtasks.exit_with", 3, timeout=60)

    def run(work: Callable[[], None]) -> None:
        try:
            work()
        except BaseException as exc:  # reported below, with the others
            failures.append(exc)

    threads = [threading.Thread(target=run, args=(work,)) for work in (
        lambda: calls(0), lambda: calls(10_000), maps, futures, timeouts_and_crashes)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert not [t for t in threads if t.is_alive()], "a caller never got its reply"
    assert not failures, failures
    wait_until(lambda: [w.state for w in pool.status()] == ["idle", "idle"],
               what="every worker idle, and every late reply read")
    assert pool.call(operator.add, 1, 1, timeout=60) == 2


def test_a_caller_whose_worker_dies_leaves_the_replacement_alone(
        make_process_pool: Callable[..., ProcessPool]) -> None:
    """The dead worker's pipes are closed while its caller may still hold
    them, and a replacement's new pipes can take their numbers: the caller
    must not read or wake through them."""
    pool = make_process_pool(workers=2)
    for _ in range(30):
        slow = pool.submit("processtasks.sleep_then", 0.01, "survived")
        with pytest.raises(WorkerDiedError):
            pool.call("processtasks.segfault", timeout=60)
        assert slow.result(timeout=60) == "survived"
        wait_until(lambda: [w.state for w in pool.status()] == ["idle", "idle"],
                   what="the replacement worker to be ready")
    assert pool.call(operator.add, 2, 2, timeout=60) == 4
