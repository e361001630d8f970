"""A memoryview that a target returns comes back as a memoryview.

Its memory is the worker's, so the caller gets a read-only view, of the same
format, shape and values, over a copy (lent like a large bytes result, its
pages moved from 32 MiB), as a memoryview argument arrives in the worker. So
on a pool of interpreters and on a pool of processes alike, at every size.
A format that memoryview.cast cannot rebuild comes back as its bytes.
"""

from __future__ import annotations

import warnings
from array import array
from collections.abc import Iterator

import buffertasks
import pytest
from support import MakePool, wait_until

from interp_rpc import InterpreterPool, ProcessPool
from interp_rpc._core import pages_moved
from interp_rpc._worker.wire import LEND_THRESHOLD
from interp_rpc.testing import kill_worker

INIT = "import buffertasks"

#: Small (pickled into the reply) and large (lent) results.
SIZES = {"small": 48, "large": 2 * LEND_THRESHOLD}

#: Large enough for its pages to move (see test_large_results.py).
MOVED_SIZE = 40 << 20


@pytest.fixture(scope="module", params=["interpreters", "processes"])
def any_pool(request: pytest.FixtureRequest) -> Iterator[InterpreterPool | ProcessPool]:
    kind = InterpreterPool if request.param == "interpreters" else ProcessPool
    with kind(workers=2, init=INIT) as pool:
        yield pool


@pytest.mark.parametrize("size", SIZES.values(), ids=SIZES.keys())
@pytest.mark.parametrize(("fmt", "shape_of"), [
    ("B", lambda n: (n,)),
    ("d", lambda n: (n // 8,)),
    ("q", lambda n: (2, n // 16)),
    ("h", lambda n: (4, 2, n // 16)),
])
def test_a_view_comes_back_as_a_read_only_view_of_its_format_and_shape(
        any_pool: InterpreterPool | ProcessPool, size: int, fmt: str,
        shape_of: object) -> None:
    data = bytes(range(256)) * (size // 256) + bytes(range(size % 256))
    shape = shape_of(size)  # type: ignore[operator]
    back = any_pool.call(buffertasks.view_of, data, fmt, shape)
    assert type(back) is memoryview
    assert (back.format, back.shape, back.readonly) == (fmt, shape, True)
    assert back.tobytes() == data  # every bit (NaNs among the doubles compare unequal)


def test_strided_empty_and_scalar_views_come_back_as_views(
        any_pool: InterpreterPool | ProcessPool) -> None:
    strided = any_pool.call(buffertasks.every_other_double, 2 * LEND_THRESHOLD)
    assert (strided.format, strided.shape) == ("d", (LEND_THRESHOLD,))
    assert strided.tolist() == [float(i) for i in range(0, 2 * LEND_THRESHOLD, 2)]
    empty = any_pool.call(buffertasks.empty_doubles)
    assert (type(empty), empty.format, empty.shape) == (memoryview, "d", (0,))
    scalar = any_pool.call(buffertasks.view_of, array("d", [2.5]).tobytes(), "d", ())
    assert (scalar.shape, scalar.tolist()) == ((), 2.5)


def test_views_among_map_results_and_in_containers_come_back_as_views(
        any_pool: InterpreterPool | ProcessPool) -> None:
    sizes = [1, LEND_THRESHOLD, 3]
    datas = [b"a" * size for size in sizes]
    back = list(any_pool.map(buffertasks.view_of, datas, ["B"] * 3, [(n,) for n in sizes]))
    assert [type(v) for v in back] == [memoryview] * 3
    assert [bytes(v) for v in back] == datas
    nested = any_pool.call(buffertasks.nested_view)
    assert type(nested["v"][0]) is memoryview and nested["v"][0] == b"xyz"


def test_a_format_cast_cannot_rebuild_comes_back_as_its_bytes(
        any_pool: InterpreterPool | ProcessPool) -> None:
    back = any_pool.call(buffertasks.a_pair_view)
    assert type(back) is bytes
    assert back == bytes(buffertasks.a_pair_view())


def test_a_view_of_a_buffer_the_worker_changes_afterwards_is_as_returned(
        make_pool: MakePool) -> None:
    pool = make_pool(workers=1, init=INIT)
    results = pool.map(buffertasks.view_of_kept_buffer, [1, 2, 3], chunksize=1)
    wait_until(lambda: sum(r.target.endswith("view_of_kept_buffer")
                           for r in pool.call_records()) == 3, 30, "the calls to finish")
    assert pool.call(buffertasks.view_of_kept_buffer, 9)[0] == 9
    size = len(buffertasks.KEPT_BUFFER)
    assert [bytes(v) for v in results] == [bytes([b]) * size for b in (1, 2, 3)]


@pytest.mark.parametrize("end", ["close", "death"])
def test_a_view_read_after_close_or_its_workers_death_is_intact(
        make_pool: MakePool, end: str) -> None:
    pool = make_pool(workers=1, init=INIT)
    datas = [bytes([i]) * (LEND_THRESHOLD + i) for i in range(3)]
    results = pool.map(buffertasks.view_of, datas, ["B"] * 3, [(len(d),) for d in datas],
                       chunksize=1)
    wait_until(lambda: len(pool.call_records()) >= 3, 30, "the calls to finish")
    if end == "close":
        pool.close()
    else:
        kill_worker(pool, 0)
        wait_until(lambda: pool.status()[0].state == "dead", 30, "the worker to die")
    assert [bytes(v) for v in results] == datas


def test_a_large_view_result_moves_its_pages(make_pool: MakePool) -> None:
    pool = make_pool(workers=1, init=INIT)
    data = bytes(range(1, 256)) * (MOVED_SIZE // 255)
    moved = pages_moved()
    back = pool.call(buffertasks.view_of, data, "B", (len(data),), timeout=60)
    assert back == data
    assert pages_moved() > moved


def test_an_argument_view_returned_as_is_is_not_taken_for_one_kept(
        make_pool: MakePool) -> None:
    pool = make_pool(workers=1, init=INIT)
    sent = memoryview(array("d", range(LEND_THRESHOLD)))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        back = pool.call("pooltasks.identity", sent)
    assert (back.format, back.shape) == ("d", sent.shape) and back == sent
    assert not [w for w in caught if "kept a view" in str(w.message)]
