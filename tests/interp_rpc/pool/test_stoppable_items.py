"""stoppable_items (core/stoppable_items.hpp): how a chunk's loop takes its
items, reading the map's stop flag in C before each one. The engine gives
it to every worker; the extension module has it too, for worker processes."""

from __future__ import annotations

import mmap

import pytest

from interp_rpc import _core


class Stopped(Exception):
    """What a stopped chunk raises (the worker's MapStopped)."""


def test_the_items_come_in_order_while_the_flag_is_clear() -> None:
    flag = bytearray(1)
    assert list(_core.stoppable_items([1, "a", None], flag, Stopped, 0)) == [1, "a", None]


def test_a_set_flag_stops_before_the_next_item_and_names_it() -> None:
    flag = bytearray(1)
    items = _core.stoppable_items(range(10, 20), memoryview(flag), Stopped, 40)
    assert next(items) == 10
    assert next(items) == 11
    flag[0] = 1
    with pytest.raises(Stopped, match=r"^the map was stopped before item 42$"):
        next(items)


def test_a_flag_set_before_the_first_item_stops_it() -> None:
    with pytest.raises(Stopped, match=r"before item 7$"):
        next(_core.stoppable_items([1], b"\x01", Stopped, 7))


def test_it_reads_a_flag_in_shared_memory_as_the_pool_writes_it() -> None:
    board = mmap.mmap(-1, mmap.PAGESIZE)
    items = _core.stoppable_items([1, 2], memoryview(board)[5:6], Stopped, 0)
    assert next(items) == 1
    board[5] = 1
    with pytest.raises(Stopped):
        next(items)


def test_an_error_of_the_items_comes_through() -> None:
    def failing() -> object:
        yield 1
        raise KeyError("broken input")

    items = _core.stoppable_items(failing(), bytearray(1), Stopped, 0)
    assert next(items) == 1
    with pytest.raises(KeyError, match="broken input"):
        next(items)


def test_it_lets_go_of_the_flag_when_it_goes() -> None:
    flag = memoryview(bytearray(1))
    items = _core.stoppable_items([1], flag, Stopped, 0)
    with pytest.raises(BufferError):
        flag.release()  # the iterator holds the flag's buffer
    del items
    flag.release()


@pytest.mark.parametrize(("arguments", "problem"), [
    (([1], "not a buffer", Stopped, 0), "a bytes-like object is required"),
    (([1], b"", Stopped, 0), "the flag is an empty buffer"),
    (([1], bytearray(1), ValueError("an instance"), 0), "stopped must be an exception class"),
    ((42, bytearray(1), Stopped, 0), "not iterable"),
])
def test_bad_arguments_are_refused_by_name(arguments: tuple[object, ...], problem: str) -> None:
    with pytest.raises((TypeError, ValueError), match=problem):
        _core.stoppable_items(*arguments)  # type: ignore[arg-type]
