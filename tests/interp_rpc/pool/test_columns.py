"""Lists and tuples of one scalar type cross as one column, and arrive
exactly as pickle would deliver them.

The packer (core/packed_column.hpp, through _worker/columns.py) must give
back the same types, the same values (a float's every bit) and the same
object structure as pickle, for everything it packs, and leave the rest to
pickle: bools among ints, IntEnum and other subclasses, ints beyond 64 bits,
mixed lists, a str or bytes object met twice, and a byte value met twice
as one-byte bytes (split shares CPython's cached object for it, pickle does
not). The properties compare the
packed path with pickle itself, on generated lists.
"""

from __future__ import annotations

import enum
import io
import pickle
import pickletools
import struct
from collections.abc import Iterator
from typing import Any

import columntasks
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support import pool_for_fixture

from interp_rpc import InterpreterPool, ProcessPool
from interp_rpc._core import pack_column
from interp_rpc._pool.encoding import encode_call
from interp_rpc._worker import columns

N = columns.MIN_ITEMS
INIT = "import columntasks"


def crossed(values: Any) -> Any:
    """``values`` after packing (when they pack) and a pickle round trip."""
    column = columns.packed(values, pack_column)
    return pickle.loads(pickle.dumps(values if column is None else column, protocol=5))


def shape(values: Any) -> tuple[str, list[tuple[str, Any]], list[int]]:
    """What a receiver can observe: the container's type, each item's type
    and value (floats by their bits), and which items are one object."""
    first: dict[int, int] = {}
    return (type(values).__name__,
            [("float", struct.pack("<d", v)) if type(v) is float else (type(v).__name__, v)
             for v in values],
            [first.setdefault(id(v), i) for i, v in enumerate(values)])


def same_as_pickle(values: Any) -> None:
    assert shape(crossed(values)) == shape(pickle.loads(pickle.dumps(values, protocol=5)))


# Floats from any 64 bits: every NaN payload, both zeros, subnormals.
ANY_FLOAT = st.integers(0, 2**64 - 1).map(
    lambda bits: struct.unpack("<d", bits.to_bytes(8, "little"))[0])
SCALAR_LISTS = st.one_of(
    st.lists(st.integers(), min_size=N, max_size=3 * N),
    st.lists(st.integers(-(2**63), 2**63 - 1), min_size=N, max_size=3 * N),
    st.lists(ANY_FLOAT, min_size=N, max_size=3 * N),
    st.lists(st.text(), min_size=N, max_size=2 * N),
    st.lists(st.text(alphabet=st.characters(codec=None)), min_size=N, max_size=2 * N),
    st.lists(st.binary(), min_size=N, max_size=2 * N),
    st.lists(st.one_of(st.integers(), st.floats(), st.text(), st.binary(), st.booleans()),
             min_size=N, max_size=2 * N),
)


@settings(max_examples=300, deadline=None)
@given(values=SCALAR_LISTS, as_tuple=st.booleans())
def test_a_packed_list_arrives_as_pickle_delivers_it(values: list[Any], as_tuple: bool) -> None:
    same_as_pickle(tuple(values) if as_tuple else values)


@settings(max_examples=100, deadline=None)
@given(values=st.lists(st.sampled_from(["ab", "cd", b"xy", "", "é", b"z"]),
                       min_size=N, max_size=2 * N),
       pool_of=st.lists(st.text(min_size=2), min_size=1, max_size=4))
def test_repeated_objects_stay_one_object(values: list[Any], pool_of: list[str]) -> None:
    # The same objects several times over, as lists built from a few names are.
    values = [*values, *(pool_of * (N // len(pool_of)))]
    same_as_pickle(values)


class Small(enum.IntEnum):
    ONE = 1


class Text(str):
    pass


@pytest.mark.parametrize(("name", "values"), [
    ("bool among ints", [1] * (N - 1) + [True]),
    ("bools", [True] * N),
    ("an IntEnum", [2] * (N - 1) + [Small.ONE]),
    ("an int above 64 bits", [*range(N - 1), 2**63]),
    ("an int below 64 bits", [*range(N - 1), -(2**63) - 1]),
    ("an int among floats", [0.5] * (N - 1) + [1]),
    ("a str subclass", [f"s{i}" for i in range(N - 1)] + [Text("t")]),
    ("a None among strs", [f"s{i}" for i in range(N - 1)] + [None]),
    ("a bytes item too long", [bytes([i % 256, 1]) for i in range(N - 1)]
     + [b"x" * columns.MAX_ITEM]),
    # Split would give the interpreter's one shared b"\xaf" for both, pickle
    # an object each.
    ("one byte value twice, as one-byte bytes", [bytes([i % 256, 1]) for i in range(N - 2)]
     + [bytes(bytearray(b"\xaf")), bytes(bytearray(b"\xaf"))]),
    ("a str holding every separator", [f"s{i}" for i in range(N - 1)] + ["\x00\x1f\x1e"]),
    ("too short", list(range(N - 1))),
    ("a set", set(range(N))),
])
def test_what_does_not_fit_a_column_is_left_to_pickle(name: str, values: Any) -> None:
    assert columns.packed(values, pack_column) is None, name


def test_one_byte_bytes_arrive_as_pickle_delivers_them() -> None:
    """Found by the property above: 62 empty bytes, then b"\xaf" twice, as
    two objects."""
    same_as_pickle([b""] * 62 + [bytes(bytearray(b"\xaf")), bytes(bytearray(b"\xaf"))])
    distinct = [bytes([i]) for i in range(N)]
    assert columns.packed(distinct, pack_column) is not None
    same_as_pickle(distinct)


def test_a_str_object_met_twice_is_left_to_pickle() -> None:
    text = "twice"
    values = [f"s{i}" for i in range(N)] + [text, text]
    assert columns.packed(values, pack_column) is None


@pytest.mark.parametrize(("values", "kind"), [
    ([-(2**63), 2**63 - 1, 0] * N, columns.INT64),
    # Either side of one digit (2^30), where the packer reads ints in place.
    ([2**30 - 1, 2**30, -(2**30) + 1, -(2**30), -1, 1, 2**31, -(2**31)] * N, columns.INT64),
    ([-0.0, float("nan"), float("-inf"), 5e-324] * N, columns.FLOAT64),
    ([f"\x00{i}\ud800" for i in range(N)], columns.STR),
    ([bytes([i % 256, 0, 0x1f]) for i in range(N)], columns.BYTES),
    (["a", "", "a", "é"] * N, columns.STR),  # the interpreter's shared one-character strs
])
def test_what_fits_is_packed_and_exact(values: list[Any], kind: int) -> None:
    column = columns.packed(values, pack_column)
    assert column is not None and column.kind == kind
    same_as_pickle(values)


def test_a_packed_tuple_arrives_as_a_tuple() -> None:
    values = tuple(range(N))
    column = columns.packed(values, pack_column)
    assert column is not None
    assert crossed(values) == values and type(crossed(values)) is tuple


class OnlyBuiltins(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        assert module == "builtins", f"a column's pickle needs {module}.{name}"
        return super().find_class(module, name)


def test_a_packed_column_is_rebuilt_by_the_standard_library_alone() -> None:
    """A worker process reads it with pickle and nothing of ours."""
    for values in (list(range(N)), [0.5] * N, [f"s{i}" for i in range(N)],
                   [b"b%d" % i for i in range(N)]):
        column = columns.packed(values, pack_column)
        assert column is not None
        assert OnlyBuiltins(io.BytesIO(pickle.dumps(column, protocol=5))).load() == list(values)


def test_requests_pack_map_items_and_list_arguments() -> None:
    def refers_to_tolist(data: bytes) -> bool:
        return any(arg == "tolist" for _, arg, _ in pickletools.genops(data))

    items = list(range(N))
    chunk = encode_call(columntasks.squares, (items,), {}, mode="chunk")
    assert refers_to_tolist(chunk.data)
    call = encode_call(columntasks.identity, (items,), {})
    assert refers_to_tolist(call.data)
    # Beside a container that could also hold it, a list is pickled as is.
    call = encode_call(columntasks.holds_same_object, (items, {"a": items}), {})
    assert not refers_to_tolist(call.data)
    call = encode_call(columntasks.first_is, (items, [items]), {})
    assert not refers_to_tolist(call.data)
    # A short list of scalars beside it holds nothing else.
    call = encode_call(columntasks.first_is, (items, [1, "two"]), {})
    assert refers_to_tolist(call.data)


def test_a_large_column_goes_beside_the_request_not_into_it() -> None:
    items = [i * 0.5 for i in range(100_000)]  # an 800,000-byte payload
    call = encode_call(columntasks.identity, (items,), {})
    assert [memoryview(b).nbytes for b in call.buffers] == [800_000]
    assert len(call.data) < 1000
    chunk = encode_call(columntasks.squares, (list(range(100_000)),), {}, mode="chunk")
    assert len(chunk.buffers) == 1 and len(chunk.data) < 1000


@pytest.fixture(scope="module", params=["interpreters", "processes"])
def column_pool(request: pytest.FixtureRequest) -> Iterator[InterpreterPool | ProcessPool]:
    """Each pool kind: its workers pack their results alike."""
    if request.param == "interpreters":
        yield from pool_for_fixture(2, INIT)
        return
    with ProcessPool(workers=2, init=INIT) as pool:
        yield pool


def test_a_worker_packs_its_results(
        column_pool: InterpreterPool | ProcessPool) -> None:
    assert column_pool.call(columntasks.packed_here, list(range(N))) == "Column"
    assert column_pool.call(columntasks.packed_here, [True] * N) == "list"


@pytest.mark.parametrize("values", [
    list(range(-N, N)),
    [2**62, -(2**63)] * N,
    columntasks.floats(N),
    [f"é{i}\x00" for i in range(N)],
    [bytes([i % 256]) * 3 for i in range(N)],
    [1, 2.0, "three", b"four"] * N,
    [True, 1] * N,
])
def test_arguments_and_results_arrive_exactly(column_pool: InterpreterPool | ProcessPool,
                                              values: list[Any]) -> None:
    expected = [columntasks.describe(v) for v in values]
    assert column_pool.call(columntasks.described, values) == expected
    assert column_pool.call(columntasks.described, tuple(values)) == expected
    returned = column_pool.call(columntasks.identity, values)
    assert [columntasks.describe(v) for v in returned] == expected and type(returned) is list
    assert type(column_pool.call(columntasks.identity, tuple(values))) is tuple


@pytest.mark.parametrize("n", [10_000, 300_001])
def test_large_lists_cross_both_ways_exactly(column_pool: InterpreterPool | ProcessPool,
                                            n: int) -> None:
    """Payloads large enough to go out of band, and to be lent back."""
    for values in ([i * 0.25 for i in range(n)], [i * 7919 - 2**62 for i in range(n)]):
        assert column_pool.call(columntasks.identity, values) == values
        assert column_pool.call(columntasks.identity, tuple(values)) == tuple(values)
    returned = column_pool.call(columntasks.floats, n)
    assert list(map(columntasks.describe, returned)) == list(map(columntasks.describe,
                                                                 columntasks.floats(n)))


def test_subclasses_come_back_as_themselves(
        column_pool: InterpreterPool | ProcessPool) -> None:
    assert set(map(type, column_pool.call(columntasks.colours, N))) == {columntasks.Colour}
    assert list(map(type, column_pool.call(columntasks.bools, 2 * N))) == [bool, int] * N


def test_a_list_passed_twice_is_one_object_in_the_worker(
        column_pool: InterpreterPool | ProcessPool) -> None:
    items = list(range(N))
    assert column_pool.call(columntasks.same_object, items, items) is True
    assert column_pool.call(columntasks.same_object, items, list(items)) is False
    assert column_pool.call(columntasks.holds_same_object, items, {"a": items}) is True
    assert column_pool.call(columntasks.first_is, items, [items]) is True
    assert column_pool.call(columntasks.kinds, items, b=tuple(items)) == ("list", "tuple")


def test_a_result_repeating_one_object_keeps_it_one(
        column_pool: InterpreterPool | ProcessPool) -> None:
    values = column_pool.call(columntasks.repeated, "same text", 2 * N)
    assert columntasks.repeats(values) == [0] * (2 * N)


@pytest.mark.parametrize(("target", "kind"), [
    (columntasks.squares, int), (columntasks.halves, float),
    (columntasks.labels, str), (columntasks.blobs, bytes),
])
def test_map_results_of_each_kind_arrive_in_order(
        column_pool: InterpreterPool | ProcessPool, target: Any, kind: type) -> None:
    items = range(20_000)
    results = list(column_pool.map(target, items))
    assert results == [target(i) for i in items]
    assert {type(r) for r in results} == {kind}


def test_a_worker_process_loads_the_engine_for_its_first_list_result() -> None:
    with ProcessPool(workers=1, init=INIT) as pool:
        assert pool.call(columntasks.engine_loaded) is False  # not at start: ready sooner
        assert pool.call(columntasks.packed_here, list(range(N))) == "Column"
        assert pool.call(columntasks.engine_loaded) is True
        assert pool.call(columntasks.package_finds_the_loaded_engine) is True


def test_a_worker_process_reads_packed_requests_and_answers_as_usual() -> None:
    with ProcessPool(workers=1, init=INIT) as pool:
        values = [*columntasks.floats(N), 0.25]
        assert pool.call(columntasks.described, values) == [columntasks.describe(v) for v in values]
        assert list(pool.map(columntasks.squares, range(5 * N))) == [i * i for i in range(5 * N)]
        assert type(pool.call(columntasks.identity, tuple(range(N)))) is tuple
