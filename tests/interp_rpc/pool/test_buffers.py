"""Buffers keep their meaning across the boundary.

A memoryview arrives with its format, item size and shape; strided views are
copied; writable buffers are snapshotted unless lent with borrow(); bytes and
bytearrays arrive as themselves at every size; read-only views are not
copied; and a view left in cyclic garbage is not mistaken for one the target
kept.
"""

from __future__ import annotations

import warnings
from array import array

import pytest
from support import Gates, MakePool

from interp_rpc import InterpreterPool, ShareabilityError, borrow
from interp_rpc._worker.wire import OUT_OF_BAND_THRESHOLD


def test_a_double_view_arrives_as_doubles(module_pool: InterpreterPool) -> None:
    view = memoryview(array("d", [1.0, 2.0]))
    assert module_pool.call("buffertasks.total", view) == 3.0
    assert module_pool.call("buffertasks.describe", view) == (
        "memoryview", "d", 8, (2,), True, [1.0, 2.0])


@pytest.mark.parametrize("typecode", ["b", "B", "h", "i", "l", "q", "f", "d"])
def test_every_native_format_keeps_its_values(module_pool: InterpreterPool,
                                              typecode: str) -> None:
    values = [1, 2, 3, 120]
    data = array(typecode, values)
    kind, fmt, itemsize, shape, _, arrived = module_pool.call(
        "buffertasks.describe", memoryview(data).toreadonly())
    assert (kind, fmt, itemsize, shape) == ("memoryview", typecode, data.itemsize, (4,))
    assert arrived == data.tolist()


def test_a_multidimensional_view_keeps_its_shape(module_pool: InterpreterPool) -> None:
    view = memoryview(array("i", range(6))).cast("B").cast("i", [2, 3])
    assert module_pool.call("buffertasks.describe", view)[3:] == (
        (2, 3), True, [[0, 1, 2], [3, 4, 5]])


def test_a_strided_view_is_copied_in_order(module_pool: InterpreterPool) -> None:
    view = memoryview(array("d", [0.0, 1.0, 2.0, 3.0, 4.0]))[::2]
    assert not view.c_contiguous
    assert module_pool.call("buffertasks.describe", view)[5] == [0.0, 2.0, 4.0]


def test_a_fortran_ordered_view_is_copied_in_order(module_pool: InterpreterPool) -> None:
    numpy = pytest.importorskip("numpy")  # in the caller only: workers never import it
    square = memoryview(numpy.asfortranarray(numpy.arange(6, dtype=numpy.float64)
                                             .reshape(2, 3)))
    assert square.f_contiguous and not square.c_contiguous
    assert module_pool.call("buffertasks.describe", square)[1:] == (
        "d", 8, (2, 3), True, [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]])


def test_a_map_item_view_keeps_its_format(module_pool: InterpreterPool) -> None:
    views = [memoryview(array("d", [i, 0.5])) for i in range(5)]
    assert list(module_pool.map("buffertasks.total", views)) == [i + 0.5 for i in range(5)]


def test_a_view_of_an_unsupported_format_is_refused_by_name(
        module_pool: InterpreterPool) -> None:
    # A format memoryview.cast cannot produce, as numpy's structured arrays have.
    import ctypes

    class Pair(ctypes.Structure):
        _fields_ = [("a", ctypes.c_int), ("b", ctypes.c_double)]

    view = memoryview((Pair * 2)())
    with pytest.raises(ShareabilityError) as info:
        module_pool.call("buffertasks.total", view)
    err = info.value
    assert err.argument_path == "argument 'view'"
    assert err.value_type == "memoryview"
    assert "cannot be rebuilt in the worker" in err.reason


@pytest.mark.parametrize("typecode", ["B", "b", "q", "d"])
def test_an_empty_view_arrives_as_an_empty_view_of_its_format(
        module_pool: InterpreterPool, typecode: str) -> None:
    for view in (memoryview(array(typecode)), memoryview(array(typecode, [1, 2]))[2:]):
        assert module_pool.call("buffertasks.describe", view) == (
            "memoryview", typecode, view.itemsize, (0,), True, [])
    # The same as a borrowed buffer, and as map items.
    assert module_pool.call("buffertasks.describe", borrow(bytearray()))[3] == (0,)
    assert list(module_pool.map("builtins.len", [memoryview(b"")] * 3)) == [0] * 3


def test_an_empty_view_of_two_dimensions_is_refused_by_name(
        module_pool: InterpreterPool) -> None:
    numpy = pytest.importorskip("numpy")
    view = memoryview(numpy.zeros((3, 0)))
    with pytest.raises(ShareabilityError) as info:
        module_pool.call("buffertasks.total", view)
    err = info.value
    assert err.argument_path == "argument 'view'"
    assert "shape (3, 0) cannot be rebuilt in the worker" in err.reason


def test_bytearray_is_snapshotted_when_the_call_is_made(pool: InterpreterPool,
                                                        gates: Gates) -> None:
    gate = gates.new()
    data = bytearray(b"abcd" * (OUT_OF_BAND_THRESHOLD // 2))  # large: out of band
    future = pool.submit("buffertasks.head_when_open", data, gate.started, gate.gate)
    gate.wait_started()
    data[:4] = b"XXXX"
    gate.release()
    assert future.result(timeout=60) == ("bytearray", b"abcd")


def test_a_writable_memoryview_is_snapshotted(pool: InterpreterPool, gates: Gates) -> None:
    gate = gates.new()
    data = bytearray(b"abcd" * 16)
    future = pool.submit("buffertasks.head_when_open", memoryview(data), gate.started,
                         gate.gate)
    gate.wait_started()
    data[:4] = b"XXXX"
    gate.release()
    assert future.result(timeout=60) == ("memoryview", b"abcd")


def test_borrow_lends_a_writable_buffer_without_a_copy(pool: InterpreterPool,
                                                       gates: Gates) -> None:
    gate = gates.new()
    data = bytearray(b"abcd" * 16)
    future = pool.submit("buffertasks.head_when_open", borrow(data), gate.started, gate.gate)
    gate.wait_started()
    data[:4] = b"XXXX"  # the caller broke its promise: the worker sees it
    gate.release()
    assert future.result(timeout=60) == ("memoryview", b"XXXX")
    assert pool.call("buffertasks.owner_type", borrow(data)) == "BufferLease"
    assert pool.call("buffertasks.total", borrow(array("d", [1.5, 2.5]))) == 4.0


def test_borrow_refuses_what_it_cannot_lend(module_pool: InterpreterPool) -> None:
    with pytest.raises(ValueError, match="C-contiguous"):
        borrow(memoryview(bytearray(8))[::2])
    with pytest.raises(TypeError):
        borrow(12)  # type: ignore[arg-type]
    with pytest.raises(ShareabilityError) as info:
        module_pool.call("pooltasks.identity", {"nested": borrow(bytearray(4))})
    assert "top-level argument" in info.value.reason


SIZES_AROUND_THE_THRESHOLD = [0, 5, OUT_OF_BAND_THRESHOLD - 1, OUT_OF_BAND_THRESHOLD,
                              4 * OUT_OF_BAND_THRESHOLD + 3]


@pytest.mark.parametrize("size", SIZES_AROUND_THE_THRESHOLD)
def test_bytes_arrive_as_bytes_at_every_size(module_pool: InterpreterPool, size: int) -> None:
    # Large bytes once arrived as a read-only memoryview, and a target that
    # worked on a small file failed on a large one ('memoryview' object has
    # no attribute 'decode').
    data = bytes(i % 251 for i in range(size))
    assert module_pool.call("buffertasks.as_bytes_would", data) == (
        "bytes", len(data), data[-3:], hash(data))
    assert module_pool.call("buffertasks.as_bytes_would", data=data)[0] == "bytes"


@pytest.mark.parametrize("size", SIZES_AROUND_THE_THRESHOLD)
def test_bytearrays_arrive_as_bytearrays_at_every_size(module_pool: InterpreterPool,
                                                       size: int) -> None:
    data = bytearray(i % 251 for i in range(size))
    assert module_pool.call("buffertasks.type_and_length", data) == ("bytearray", len(data))


def test_large_bytes_map_items_arrive_as_bytes(module_pool: InterpreterPool) -> None:
    items = [b"%d" % i * OUT_OF_BAND_THRESHOLD for i in range(3)]
    assert list(module_pool.map("buffertasks.type_and_length", items)) == [
        ("bytes", len(item)) for item in items]


def test_read_only_views_are_not_copied(module_pool: InterpreterPool) -> None:
    assert module_pool.call("buffertasks.owner_type", memoryview(b"abc")) == "BufferLease"
    large = memoryview(b"x" * OUT_OF_BAND_THRESHOLD)
    assert module_pool.call("buffertasks.owner_type", large) == "BufferLease"


def test_a_view_left_in_cyclic_garbage_is_not_retained(module_pool: InterpreterPool) -> None:
    data = memoryview(b"y" * OUT_OF_BAND_THRESHOLD)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert module_pool.call("buffertasks.keep_in_a_cycle", data) == len(data)
    assert not [w for w in caught if "kept a view" in str(w.message)]


def test_a_view_kept_for_good_still_warns(make_pool: MakePool) -> None:
    pool = make_pool(workers=1)
    with pytest.warns(RuntimeWarning, match="kept a view"):
        pool.call("buffertasks.keep_for_good", memoryview(b"z" * 64))
