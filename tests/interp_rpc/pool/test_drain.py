"""_core.drain: how a map hands over each chunk's results, letting go of
each one as it goes (CPython's Executor.map does, and its tests check it)."""

from __future__ import annotations

import gc
import operator
import sys
import weakref

import pytest

from interp_rpc import _core


class Result:
    """A result a caller can hold a weak reference to."""


def test_items_come_in_order_and_each_place_is_emptied_as_it_goes() -> None:
    values = ["a", "b", "c"]
    drain = _core.drain(values)
    assert next(drain) == "a"
    assert values == [None, "b", "c"]
    assert list(drain) == ["b", "c"]
    assert values == [None, None, None]
    assert list(drain) == []


def test_a_result_the_caller_drops_is_freed_at_once() -> None:
    drain = _core.drain([Result(), Result()])
    taken = next(drain)
    gone = weakref.ref(taken)
    del taken
    assert gone() is None
    assert isinstance(next(drain), Result)


def test_the_list_is_let_go_at_its_end() -> None:
    values = [1]
    drain = _core.drain(values)
    held = sys.getrefcount(values)
    assert list(drain) == [1]
    assert sys.getrefcount(values) == held - 1


def test_its_length_hint_counts_what_is_left() -> None:
    drain = _core.drain([1, 2, 3])
    assert operator.length_hint(drain) == 3
    next(drain)
    assert operator.length_hint(drain) == 2
    list(drain)
    assert operator.length_hint(drain) == 0


def test_an_empty_list_ends_at_once() -> None:
    assert list(_core.drain([])) == []


def test_a_list_that_shrinks_meanwhile_is_not_read_past() -> None:
    values = [1, 2, 3]
    drain = _core.drain(values)
    assert next(drain) == 1
    del values[1:]
    assert list(drain) == []


@pytest.mark.parametrize("values", [(1, 2), "ab", iter([1]), None])
def test_anything_but_a_list_is_refused_by_name(values: object) -> None:
    with pytest.raises(TypeError, match=f"drain\\(\\) takes a list, not {type(values).__name__}"):
        _core.drain(values)  # type: ignore[arg-type]


def test_a_cycle_through_it_is_collected() -> None:
    result = Result()
    gone = weakref.ref(result)
    values: list[object] = [result]
    values.append(_core.drain(values))
    del result, values
    gc.collect()
    assert gone() is None
