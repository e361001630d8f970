"""The text a worker sends for a %%parallel cell's result: the value's repr,
exactly, until a container is longer than IPython shows or the text longer
than a worker sends; then abbreviated as IPython abbreviates, or cut."""

from __future__ import annotations

import collections
import sys
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from interp_rpc._worker.cell_result import MAX_CHARACTERS, MAX_ITEMS, result_text

scalars = (st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True)
           | st.text(max_size=8) | st.binary(max_size=8) | st.complex_numbers())
hashables = st.recursive(scalars, lambda inner: st.tuples(inner, inner)
                         | st.frozensets(inner, max_size=4), max_leaves=10)
values = st.recursive(
    hashables,
    lambda inner: (st.lists(inner, max_size=5) | st.tuples(inner) | st.tuples(inner, inner)
                   | st.dictionaries(hashables, inner, max_size=4)
                   | st.sets(hashables, max_size=4) | st.just(()) | st.just(frozenset())),
    max_leaves=25)


@given(values)
def test_within_the_limits_the_text_is_the_repr(value: Any) -> None:
    assert result_text(value) == repr(value)


def test_containers_inside_themselves_are_written_as_repr_writes_them() -> None:
    inside: list[Any] = [1]
    inside.append(inside)
    mapping: dict[str, Any] = {}
    mapping["me"] = mapping
    wrapped: list[Any] = []
    pair = (wrapped, 2)
    wrapped.append(pair)
    for value in (inside, mapping, pair, [inside, inside]):
        assert result_text(value) == repr(value)


def test_nesting_deeper_than_python_recursion_still_gives_the_repr() -> None:
    deep: list[Any] = []
    for _ in range(sys.getrecursionlimit() + 100):
        deep = [deep]
    assert result_text(deep) == repr(deep)


def test_subclasses_keep_their_own_repr() -> None:
    counts = collections.Counter("abracadabra")
    ordered = collections.OrderedDict(a=1)

    class Shown(list[int]):
        def __repr__(self) -> str:
            return "shown"

    for value in (counts, ordered, Shown([1, 2]), collections.deque([1, 2])):
        assert result_text(value) == repr(value)


def test_a_long_list_shows_its_first_items_then_dots() -> None:
    text = result_text(list(range(10**7)))
    assert text == "[" + ", ".join(map(str, range(MAX_ITEMS))) + ", ...]"


def test_long_containers_are_abbreviated_at_any_depth() -> None:
    many = MAX_ITEMS + 1
    text = result_text({"big": tuple(range(many)), "set": set(range(many)), "small": (1,)})
    assert text.startswith("{'big': (0, 1, 2,")
    assert f", {MAX_ITEMS - 1}, ...), 'set': {{0, 1," in text
    assert text.endswith(", ...}, 'small': (1,)}")
    long_dict = result_text(dict.fromkeys(range(many)))
    assert long_dict.endswith(f"{MAX_ITEMS - 1}: None, ...}}")
    assert result_text(frozenset(range(many))).endswith(", ...})")


def test_exactly_as_many_items_as_shown_needs_no_dots() -> None:
    assert result_text(list(range(MAX_ITEMS))) == repr(list(range(MAX_ITEMS)))


def test_a_text_too_long_is_cut_and_says_how_long_it_was() -> None:
    long = "x" * (2 * MAX_CHARACTERS)
    text = result_text(long)
    assert text.startswith(repr(long)[:MAX_CHARACTERS] + "\n")
    assert text.endswith(f"cut here: the result's text is {len(repr(long)):,} characters long")
    assert result_text("x" * (MAX_CHARACTERS - 2)) == repr("x" * (MAX_CHARACTERS - 2))


def test_the_limit_is_ipythons() -> None:
    from IPython.core.formatters import PlainTextFormatter

    assert PlainTextFormatter.max_seq_length.default_value == MAX_ITEMS
