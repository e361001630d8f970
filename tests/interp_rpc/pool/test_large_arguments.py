"""Large bytes and bytearray arguments, which the worker copies from the
caller's memory with the waiting caller's help (core/argument_copy.hpp):
they arrive whole and in order, whoever copies which part, with or without a
caller standing by, and one that waits no longer (a timeout) or a call whose
arguments fail to load leaves the pool serving."""

from __future__ import annotations

import threading
import zlib
from typing import Any

import copytasks
import pytest

from interp_rpc import CallTimeoutError, InterpreterPool, ShareabilityError

MiB = 1 << 20
# Around shared_copy_threshold (2 MiB), and sizes that end mid-chunk.
SIZES = [2 * MiB - 1, 2 * MiB, 16 * MiB + 4099]


def expected(data: Any) -> tuple[str, int, int]:
    return type(data).__name__, len(data), zlib.crc32(data)


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("kind", [bytes, bytearray])
def test_a_large_argument_arrives_whole(module_pool: InterpreterPool, size: int,
                                        kind: type[bytes] | type[bytearray]) -> None:
    data = kind(copytasks.patterned_bytes(size))
    assert module_pool.call(copytasks.checksum, data) == expected(data)


def test_several_large_arguments_of_one_call_arrive_whole(module_pool: InterpreterPool) -> None:
    first, second = copytasks.patterned_bytes(5 * MiB, 1), copytasks.patterned_bytes(3 * MiB, 2)
    third = bytearray(copytasks.patterned_bytes(4 * MiB + 1, 3))
    assert module_pool.call(copytasks.checksums, first, second, last=third) == [
        expected(first), expected(second), expected(third)]


def test_two_threads_calling_at_once_each_get_their_own_argument(
        module_pool: InterpreterPool) -> None:
    datas = [copytasks.patterned_bytes(12 * MiB + i, seed=i) for i in range(2)]
    results: dict[int, list[tuple[str, int, int]]] = {0: [], 1: []}

    def run(index: int) -> None:
        for _ in range(5):
            results[index].append(module_pool.call(copytasks.checksum, datas[index]))

    threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for index, data in enumerate(datas):
        assert results[index] == [expected(data)] * 5


def test_a_future_read_later_has_its_argument_whole(module_pool: InterpreterPool) -> None:
    # Nobody stands by while the worker copies: it copies alone.
    data = copytasks.patterned_bytes(16 * MiB)
    future = module_pool.submit(copytasks.nap_then_checksum, 0.0, data)
    assert future.result(timeout=60) == expected(data)


def test_a_caller_that_times_out_leaves_the_pool_serving(pool: InterpreterPool) -> None:
    data = copytasks.patterned_bytes(16 * MiB)
    with pytest.raises(CallTimeoutError):
        pool.call(copytasks.nap_then_checksum, 1.0, data, timeout=0.05)
    assert pool.call(copytasks.checksum, data) == expected(data)


def test_arguments_that_fail_to_load_end_the_callers_stand_by(pool: InterpreterPool) -> None:
    # The large argument comes before one that cannot load in the worker.
    data = copytasks.patterned_bytes(8 * MiB)
    with pytest.raises(ShareabilityError):
        pool.call(copytasks.checksums, data, Unloadable())
    assert pool.call(copytasks.checksum, data) == expected(data)


class Unloadable:
    """Pickles by reference to a class that workers cannot import."""

    def __reduce__(self) -> tuple[Any, ...]:
        return _missing_in_workers, ()


def _missing_in_workers() -> None:
    raise AssertionError("never called")
