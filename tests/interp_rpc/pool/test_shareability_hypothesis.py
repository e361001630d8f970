"""Property: for any nesting, argument_path is exactly where the one unshareable leaf is."""

from __future__ import annotations

import threading

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pooltasks import Box, Reduced, Slotted

from interp_rpc import InterpreterPool, ShareabilityError

MAX_DEPTH = 5

SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False),
    st.text(max_size=6), st.binary(max_size=6),
)
HASHABLE_SCALARS = st.one_of(st.integers(), st.text(max_size=6), st.booleans(), st.none())
KEYS = st.one_of(st.integers(-5, 50), st.text(max_size=4))
# Values without the leaf: any nesting of containers and attribute objects.
PLAIN = st.recursive(
    SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.lists(inner, max_size=3).map(tuple),
        st.dictionaries(KEYS, inner, max_size=3),
        st.frozensets(HASHABLE_SCALARS, max_size=3),
        st.builds(lambda a: Box(a=a), inner),
    ),
    max_leaves=6,
)
ATTRIBUTE_NAMES = ["alpha", "beta", "gamma", "data", "x"]


def build(draw: st.DrawFn, leaf: object, depth: int, hashable: bool) -> tuple[object, str]:
    """A value holding ``leaf`` exactly once, and the path suffix that leads to it."""
    kinds = ["tuple", "frozenset"] if hashable else [
        "list", "tuple", "dict_value", "dict_key", "set", "box", "slotted", "reduced"]
    if depth >= MAX_DEPTH or draw(st.integers(0, 3)) == 0:
        return leaf, ""
    kind = draw(st.sampled_from(kinds))
    child_must_hash = kind in ("dict_key", "set", "frozenset")
    child, suffix = build(draw, leaf, depth + 1, hashable or child_must_hash)

    if kind in ("list", "tuple"):
        siblings = draw(st.lists(HASHABLE_SCALARS if hashable else PLAIN, max_size=4))
        at = draw(st.integers(0, len(siblings)))
        items = [*siblings[:at], child, *siblings[at:]]
        return (tuple(items) if kind == "tuple" else items), f"[{at}]{suffix}"
    if kind in ("dict_value", "dict_key"):
        keys = draw(st.lists(KEYS, unique=True, max_size=4))
        at = draw(st.integers(0, len(keys)))
        values = draw(st.lists(PLAIN, min_size=len(keys) + 1, max_size=len(keys) + 1))
        if kind == "dict_value":
            own_key = draw(KEYS.filter(lambda k: k not in keys))
            pairs = [(k, v) for k, v in zip(keys, values, strict=False)]
            pairs.insert(at, (own_key, child))
            return dict(pairs), f"[{own_key!r}]{suffix}"
        pairs = [(k, v) for k, v in zip(keys, values, strict=False)]
        pairs.insert(at, (child, values[-1]))
        return dict(pairs), f"<key #{at}>{suffix}"
    if kind in ("set", "frozenset"):
        others = draw(st.sets(HASHABLE_SCALARS, max_size=4))
        members = {*others, child}
        value = frozenset(members) if kind == "frozenset" else members
        at = next(i for i, member in enumerate(value) if member is child)
        return value, f"<element #{at}>{suffix}"
    if kind == "box":
        names = draw(st.lists(st.sampled_from(ATTRIBUTE_NAMES), unique=True, min_size=1))
        own = names[draw(st.integers(0, len(names) - 1))]
        attributes = {name: (child if name == own else draw(PLAIN)) for name in names}
        return Box(**attributes), f".{own}{suffix}"
    if kind == "slotted":
        own = draw(st.sampled_from(["first", "second"]))
        other = draw(PLAIN)
        if own == "first":
            return Slotted(first=child, second=other), f".first{suffix}"
        return Slotted(first=other, second=child), f".second{suffix}"
    assert kind == "reduced"
    siblings = draw(st.lists(PLAIN, max_size=3))
    at = draw(st.integers(0, len(siblings)))
    return Reduced(*siblings[:at], child, *siblings[at:]), f"<constructor argument #{at}>{suffix}"


@st.composite
def payloads(draw: st.DrawFn) -> tuple[str, tuple[object, ...], dict[str, object], str]:
    """(target, args, kwargs, expected argument_path) with one lock somewhere."""
    value, suffix = build(draw, threading.Lock(), 0, hashable=False)
    how = draw(st.sampled_from(["positional", "keyword", "star-args", "star-kwargs"]))
    if how == "positional":
        return "pooltasks.identity", (value,), {}, f"argument 'value'{suffix}"
    if how == "keyword":
        return "pooltasks.identity", (), {"value": value}, f"argument 'value'{suffix}"
    if how == "star-args":
        before = draw(st.lists(PLAIN, max_size=3))
        args = (*before, value)
        return "pooltasks.echo", args, {}, f"argument 'args'[{len(before)}]{suffix}"
    return "pooltasks.echo", (), {"first": draw(PLAIN), "culprit": value}, (
        f"argument 'kwargs'['culprit']{suffix}")


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(payloads())
def test_argument_path_is_exactly_where_the_leaf_is(
        module_pool: InterpreterPool,
        case: tuple[str, tuple[object, ...], dict[str, object], str]) -> None:
    target, args, kwargs, expected_path = case
    calls_before = module_pool.stats().calls
    records_before = len(module_pool.call_records())
    with pytest.raises(ShareabilityError) as info:
        module_pool.call(target, *args, **kwargs)
    assert info.value.argument_path == expected_path
    assert info.value.value_type == "lock"
    # Nothing was dispatched.
    assert module_pool.stats().calls == calls_before
    assert len(module_pool.call_records()) == records_before
