"""The pool contract's promises, kept by ProcessPool as by InterpreterPool:
errors, map options, run_everywhere, status, records and profiles."""

from __future__ import annotations

import functools
import operator
import os
import signal
import threading
import zlib
from collections.abc import Callable

import copytasks
import pytest
from process_support import alive, children, wait_ended, worker_processes
from support import wait_until

from interp_rpc import (
    CallRecord,
    InterpreterPool,
    PoolClosedError,
    PoolInitError,
    ProcessPool,
    RemoteError,
    ShareabilityError,
    TargetResolutionError,
)
from interp_rpc.process.interpreter import python_executable


def test_a_remote_error_is_caught_by_its_class_with_its_traceback(
        process_pool: ProcessPool) -> None:
    with pytest.raises(ZeroDivisionError) as caught:
        process_pool.call(operator.truediv, 1, 0)
    assert isinstance(caught.value, RemoteError)
    assert "ZeroDivisionError" in caught.value.remote_traceback


def test_an_error_class_with_fields_is_caught_with_them(process_pool: ProcessPool) -> None:
    with pytest.raises(UnicodeDecodeError) as caught:
        process_pool.call("codecs.decode", b"ok \xff", "utf-8")
    assert isinstance(caught.value, RemoteError)
    assert (caught.value.start, caught.value.reason) == (3, "invalid start byte")


def test_callables_multiprocessing_takes_are_targets_too(process_pool: ProcessPool) -> None:
    assert list(process_pool.map(str.upper, ["a", "b"])) == ["A", "B"]
    assert list(process_pool.map(operator.itemgetter(0), ["xy", "z"])) == ["x", "z"]
    assert list(process_pool.map(functools.partial(pow, 2), [3])) == [8]
    assert process_pool.call("str.upper", "q") == "Q"


def test_an_unpicklable_argument_names_its_path_before_dispatch(
        process_pool: ProcessPool) -> None:
    with pytest.raises(ShareabilityError) as caught:
        process_pool.call("builtins.len", {"ok": 1, "bad": [threading.Lock()]})
    assert caught.value.argument_path == "argument 'obj'['bad'][0]"
    assert process_pool.stats().calls == 0  # nothing was sent


@pytest.mark.parametrize("kind", [bytes, bytearray])
def test_a_large_bytes_argument_arrives_whole(process_pool: ProcessPool,
                                              kind: type[bytes] | type[bytearray]) -> None:
    # Its pickle names the function that rebuilds it as the caller knows it
    # (interp_rpc._worker.wire), which a worker process maps to its own.
    data = kind(copytasks.patterned_bytes(3 * (1 << 20) + 5))
    assert process_pool.call(copytasks.checksum, data) == (
        kind.__name__, len(data), zlib.crc32(data))


def test_an_unknown_target_is_a_resolution_error(process_pool: ProcessPool) -> None:
    with pytest.raises(TargetResolutionError, match="no_such_function"):
        process_pool.call("math.no_such_function")


def test_init_failure_is_a_pool_init_error() -> None:
    with pytest.raises(PoolInitError, match="ModuleNotFoundError"):
        ProcessPool(workers=2, init="import no_such_module_here")


def test_map_options(process_pool: ProcessPool) -> None:
    assert list(process_pool.map(operator.add, [1, 2, 3], [10, 20, 30])) == [11, 22, 33]
    collected = list(process_pool.map(operator.truediv, [1, 2, 3], [1, 0, 1],
                                      errors="collect", chunksize=1))
    assert collected[0] == 1.0 and collected[2] == 3.0
    assert isinstance(collected[1], ZeroDivisionError)
    lazy = process_pool.map(abs, iter(range(-1000, 0)), buffersize=8)
    assert sum(lazy) == sum(range(1, 1001))
    results = process_pool.map(operator.truediv, [1, 2, 3], [1, 0, 1], chunksize=1)
    assert next(results) == 1.0
    with pytest.raises(ZeroDivisionError) as caught:
        next(results)
    assert caught.value.item_index == 1


def test_run_everywhere_reaches_each_worker(process_pool: ProcessPool) -> None:
    outcomes = process_pool.run_everywhere("processtasks.pid").wait()
    assert sorted(outcomes) == process_pool.worker_indices() == [0, 1]
    assert sorted(outcomes.values()) == sorted(process_pool.worker_pids())


def test_status_shows_a_busy_worker_and_the_stuck_rule(process_pool: ProcessPool) -> None:
    future = process_pool.submit("processtasks.sleep_then", 0.5, "done")
    busy = wait_until(lambda: [w for w in process_pool.status() if w.state == "busy"])
    assert busy[0].target == "processtasks.sleep_then"
    assert busy[0].displayed_state(stuck_after=0.0) == "stuck"
    assert busy[0].displayed_state(stuck_after=3600.0) == "busy"
    assert future.result() == "done"


def test_call_records_and_stats(process_pool: ProcessPool) -> None:
    process_pool.call("processtasks.sleep_then", 0, 1)
    records = process_pool.call_records()
    assert [type(r) for r in records] == [CallRecord]
    record = records[0]
    assert record.target == "processtasks.sleep_then" and record.outcome == "replied"
    assert record.submitted_ns <= record.enqueued_ns <= record.started_ns <= record.finished_ns
    assert process_pool.stats().replied == 1
    assert process_pool.call_records(after=record.seq) == []


def test_profile_records_every_item(process_pool: ProcessPool) -> None:
    with process_pool.profile(functions=True) as prof:
        assert list(process_pool.map(abs, range(-50, 0))) == list(range(50, 0, -1))
    assert sorted(r.item for r in prof.records if r.item is not None) == list(range(50))
    assert prof.stats is not None


def test_closed_pool_refuses_calls(make_process_pool: Callable[..., ProcessPool]) -> None:
    pool = make_process_pool(workers=1)
    pool.close()
    with pytest.raises(PoolClosedError):
        pool.submit("processtasks.pid")


def test_two_threads_call_at_once(process_pool: ProcessPool) -> None:
    results: list[int] = []

    def caller(base: int) -> None:
        results.extend(process_pool.call(operator.add, base, i) for i in range(100))

    threads = [threading.Thread(target=caller, args=(b,)) for b in (0, 1000)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results) == sorted([*range(100), *range(1000, 1100)])


def test_workers_run_a_python_not_an_embedding_program() -> None:
    assert python_executable().rsplit("/", 1)[-1].startswith("python")


def test_same_signatures_as_the_local_pool() -> None:
    import inspect

    for name in ("call", "submit", "map", "run_everywhere", "close", "shutdown", "profile",
                 "status", "stats", "call_records", "worker_indices"):
        assert (inspect.signature(getattr(ProcessPool, name))
                == inspect.signature(getattr(InterpreterPool, name))), name


def test_ctrl_c_interrupts_a_waiting_call(make_process_pool: Callable[..., ProcessPool]) -> None:
    pool = make_process_pool(workers=1)
    # A real SIGINT, as Ctrl-C sends (interrupt_main() wakes no blocked wait).
    timer = threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            pool.call("processtasks.sleep_then", 600)
    finally:
        timer.cancel()
    pids = pool.worker_pids()
    pool.close(timeout=0.1)  # the abandoned call is still running: terminated
    wait_ended(pids)


def test_init_past_its_timeout_fails_fast_and_leaves_no_process() -> None:
    before = worker_processes()
    with pytest.raises(PoolInitError, match="did not finish in time"):
        ProcessPool(workers=2, init="import time; time.sleep(600)", init_timeout=0.5)
    assert [p for p in worker_processes() - before if alive(p)] == []


def test_a_worker_count_that_cannot_fit_starts_no_process() -> None:
    before = children()
    with pytest.raises(ValueError, match=r"workers=1,000,000,000 cannot fit in this machine's "
                                         r"memory: each worker takes at least 6 MiB"):
        ProcessPool(workers=10**9)
    assert children() <= before
