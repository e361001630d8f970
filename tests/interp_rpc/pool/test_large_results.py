"""Large bytes, bytearray and str results cross with one copy, and stay what
they are.

A subinterpreter lends a bytes, bytearray or str result (or map result) of
LEND_THRESHOLD or more instead of pickling it; the caller copies it out of
the worker's memory. What the caller receives must be exactly what the
target returned, of the same type, whenever it is read: after the worker
ran other calls, after the pool closed, after the worker died. And the
worker lets go of what it lent once it was read or dropped.
"""

from __future__ import annotations

import concurrent.futures
import time
from collections.abc import Iterator

import lendtasks
import pytest
from support import MakePool, wait_until

from interp_rpc import InterpreterPool
from interp_rpc._core import pages_moved
from interp_rpc._worker.wire import LEND_THRESHOLD
from interp_rpc.testing import kill_worker

INIT = "import pooltasks, lendtasks"

SIZES = [1, LEND_THRESHOLD - 1, LEND_THRESHOLD, 3 * LEND_THRESHOLD + 7, 16 << 20]

#: One character of each width CPython stores a str in, and a lone surrogate.
CHARACTERS = ["a", "\xe9", "\u20ac", "\U0001f600", "\ud800"]


@pytest.fixture(scope="module")
def lending_pool() -> Iterator[InterpreterPool]:
    with InterpreterPool(workers=2, init=INIT) as pool:
        yield pool


@pytest.mark.parametrize("size", SIZES)
def test_bytes_results_come_back_as_bytes_with_their_values(
        lending_pool: InterpreterPool, size: int) -> None:
    sent = bytes(range(256)) * (size // 256) + b"\x01" * (size % 256)
    back = lending_pool.call("pooltasks.identity", sent)
    assert type(back) is bytes
    assert back == sent


@pytest.mark.parametrize("size", SIZES)
def test_bytearray_results_come_back_as_bytearray_with_their_values(
        lending_pool: InterpreterPool, size: int) -> None:
    sent = bytearray(bytes(range(256)) * (size // 256) + b"\x02" * (size % 256))
    back = lending_pool.call("pooltasks.identity", sent)
    assert type(back) is bytearray
    assert back == sent


@pytest.mark.parametrize("character", CHARACTERS)
@pytest.mark.parametrize("size", [LEND_THRESHOLD - 1, LEND_THRESHOLD, 1 << 20])
def test_str_results_of_every_width_come_back_equal(
        lending_pool: InterpreterPool, character: str, size: int) -> None:
    sent = ("x" * (size - 1)) + character
    back = lending_pool.call("pooltasks.identity", sent)
    assert type(back) is str
    assert back == sent
    assert len(back) == size


def test_map_results_mix_lent_and_pickled_values_in_order(
        lending_pool: InterpreterPool) -> None:
    items = [b"small", "é" * LEND_THRESHOLD, 7, b"z" * (2 * LEND_THRESHOLD), None,
             "tiny", b"q" * LEND_THRESHOLD, bytearray(b"w" * LEND_THRESHOLD), bytearray(b"s")]
    for chunksize in (1, 3, len(items)):
        back = list(lending_pool.map("pooltasks.identity", items, chunksize=chunksize))
        assert back == items
        assert [type(v) for v in back] == [type(v) for v in items]


def test_what_is_not_lent_still_crosses_whole(lending_pool: InterpreterPool) -> None:
    tagged = lending_pool.call("lendtasks.tagged", 2 * LEND_THRESHOLD)
    assert type(tagged).__name__ == "TaggedBytes" and tagged == b"t" * (2 * LEND_THRESHOLD)
    assert lending_pool.call("lendtasks.big_in_a_tuple", LEND_THRESHOLD) == (
        b"b" * LEND_THRESHOLD, "s" * LEND_THRESHOLD)


def test_one_value_returned_twice_in_a_chunk_arrives_as_one_object(
        lending_pool: InterpreterPool) -> None:
    """As pickle's memo makes it: a value is lent (and copied) once."""
    first, second = lending_pool.map("lendtasks.shared", [1, 2], chunksize=2)
    assert first is second
    assert first == b"s" * (256 * 1024)


def finished_calls(pool: InterpreterPool, target: str) -> int:
    return sum(1 for r in pool.call_records() if r.target == target and r.outcome == "replied")


def test_a_result_read_late_is_intact_after_other_calls_and_close(
        make_pool: MakePool) -> None:
    pool = make_pool(workers=1, init=INIT)
    sent = [bytes([i]) * (LEND_THRESHOLD + i) for i in range(4)]
    results = pool.map("pooltasks.identity", sent, chunksize=1)
    wait_until(lambda: finished_calls(pool, "pooltasks.identity") == 4, 30,
               "the four calls to finish")
    assert pool.call("pooltasks.add", 1, 2) == 3  # the worker moves on
    assert next(results) == sent[0]
    pool.close()  # the worker ends, the rest unread
    assert list(results) == sent[1:]


def test_a_bytearray_the_worker_changes_afterwards_arrives_as_it_was_returned(
        make_pool: MakePool) -> None:
    """The worker returns the same buffer from each call, refilled (and
    resized, which moves its memory): a result read after the later calls
    still holds what its own call returned."""
    pool = make_pool(workers=1, init=INIT)
    sizes = [LEND_THRESHOLD, 5 * LEND_THRESHOLD, 2 * LEND_THRESHOLD, 64 * LEND_THRESHOLD]
    results = pool.map("lendtasks.refill", sizes, range(1, len(sizes) + 1), chunksize=1)
    wait_until(lambda: finished_calls(pool, "lendtasks.refill") == len(sizes), 30,
               "the calls to finish")
    assert pool.call("lendtasks.refill", 3 * LEND_THRESHOLD, 99) == bytearray(
        b"\x63" * (3 * LEND_THRESHOLD))
    for byte, (size, back) in enumerate(zip(sizes, results, strict=True), start=1):
        assert type(back) is bytearray
        assert back == bytes([byte]) * size


def test_a_result_read_after_its_worker_died_is_intact(make_pool: MakePool) -> None:
    pool = make_pool(workers=1, init=INIT)
    sent = "\u20ac" * (2 * LEND_THRESHOLD)
    results = pool.map("pooltasks.identity", [sent, sent], chunksize=1)
    wait_until(lambda: finished_calls(pool, "pooltasks.identity") == 2, 30,
               "the calls to finish")
    kill_worker(pool, 0)
    wait_until(lambda: pool.status()[0].state == "dead", 30, "the worker to die")
    assert list(results) == [sent, sent]


@pytest.mark.parametrize("end", ["close", "death"])
def test_a_bytearray_read_after_close_or_its_workers_death_is_intact(
        make_pool: MakePool, end: str) -> None:
    pool = make_pool(workers=1, init=INIT)
    sent = [bytearray([i + 1]) * (LEND_THRESHOLD + i) for i in range(3)]
    results = pool.map("pooltasks.identity", sent, chunksize=1)
    wait_until(lambda: finished_calls(pool, "pooltasks.identity") == 3, 30,
               "the calls to finish")
    if end == "close":
        pool.close()
    else:
        kill_worker(pool, 0)
        wait_until(lambda: pool.status()[0].state == "dead", 30, "the worker to die")
    back = list(results)
    assert back == sent
    assert all(type(b) is bytearray for b in back)


def test_the_worker_lets_go_once_the_result_is_read_or_dropped(
        make_pool: MakePool) -> None:
    pool = make_pool(workers=1, init=INIT)
    value = b"k" * LEND_THRESHOLD
    results = pool.map("lendtasks.keep", [value], chunksize=1)
    wait_until(lambda: finished_calls(pool, "lendtasks.keep") == 1, 30, "keep() to finish")
    assert pool.call("lendtasks.kept_references") == 1  # lent, not read yet
    assert next(results) == value
    assert pool.call("lendtasks.kept_references") == 0

    dropped = pool.map("lendtasks.keep", [value], chunksize=1)
    wait_until(lambda: finished_calls(pool, "lendtasks.keep") == 2, 30, "keep() to finish")
    assert pool.call("lendtasks.kept_references") == 1
    dropped.close()
    del dropped
    # Dropping wakes the worker, which lets go without waiting for a call.
    deadline = time.monotonic() + 30
    while pool.call("lendtasks.kept_references") != 0:
        assert time.monotonic() < deadline, "the dropped result is still held"
        time.sleep(0.05)


#: Large enough for the engine to move pages rather than copy them, and for
#: the C allocator to give both sides their own mapping (so that their pages
#: line up), as it does from 32 MiB.
MOVED_SIZE = 40 << 20


def test_large_results_moved_rather_than_copied_are_exact_call_after_call(
        lending_pool: InterpreterPool) -> None:
    moved = pages_moved()
    for seed in range(4):
        assert lending_pool.call(lendtasks.patterned, MOVED_SIZE + seed, seed) == \
            lendtasks.patterned(MOVED_SIZE + seed, seed)
    results = list(lending_pool.map(lendtasks.patterned, [MOVED_SIZE] * 2, range(2)))
    assert results == [lendtasks.patterned(MOVED_SIZE, s) for s in range(2)]
    assert pages_moved() > moved


def test_a_large_bytearray_only_the_result_references_is_moved_and_exact(
        lending_pool: InterpreterPool) -> None:
    moved = pages_moved()
    for seed in range(2):
        back = lending_pool.call(lendtasks.patterned_bytearray, MOVED_SIZE + seed, seed)
        assert type(back) is bytearray
        assert back == lendtasks.patterned(MOVED_SIZE + seed, seed)
    assert pages_moved() > moved


def test_a_large_result_the_worker_keeps_stays_whole_in_the_worker(
        lending_pool: InterpreterPool) -> None:
    """Only a value no one else references may lose its pages to the caller."""
    sent = lendtasks.patterned(MOVED_SIZE, 3)
    moved = pages_moved()
    for _ in range(2):
        assert lending_pool.call(lendtasks.keep, sent, timeout=60) == sent
    assert pages_moved() == moved
    counted = lending_pool.run_everywhere(lendtasks.zeros_in_kept).wait().values()
    assert set(counted) - {None} == {0}


#: Large enough that the worker that made a result shares its caller's copy
#: (core/shared_copy.hpp), not large enough to move pages instead.
SHARED_COPY_SIZE = (16 << 20) + 4099


def test_large_results_read_by_two_threads_at_once_are_exact(
        lending_pool: InterpreterPool) -> None:
    """Two callers copy at once, each from its own worker, while (at most)
    one worker stands by to share a copy: every result still arrives whole."""
    def read(seed: int) -> list[bytes]:
        return [lending_pool.call(lendtasks.patterned, SHARED_COPY_SIZE, seed)
                for _ in range(3)]

    with concurrent.futures.ThreadPoolExecutor(2) as threads:
        results = list(threads.map(read, [5, 6]))
    for seed, values in zip([5, 6], results, strict=True):
        assert values == [lendtasks.patterned(SHARED_COPY_SIZE, seed)] * 3


def test_a_large_result_dropped_unread_frees_its_worker_for_the_next_call(
        make_pool: MakePool) -> None:
    """A worker standing by to share a copy that never comes serves on."""
    pool = make_pool(workers=1, init=INIT)
    for seed in range(3):
        future = pool.submit(lendtasks.patterned, SHARED_COPY_SIZE, seed)
        del future
        assert pool.call(lendtasks.patterned, SHARED_COPY_SIZE, seed) == \
            lendtasks.patterned(SHARED_COPY_SIZE, seed)
    str_future = pool.submit(lendtasks.patterned_str, SHARED_COPY_SIZE)
    assert str_future.result(timeout=60) == lendtasks.patterned_str(SHARED_COPY_SIZE)
