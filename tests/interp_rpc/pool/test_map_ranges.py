"""A map over a range sends each chunk as a slice of it, and behaves as a
map over the same items in a list.

No int of the range is made in the caller: the worker's loop makes them.
What the target sees, the results, the errors and their item indexes, the
collected failures and a profile must be exactly those of the list.
"""

from __future__ import annotations

import pickletools
from typing import Any

import columntasks
import pooltasks
import pytest
from support import wait_until

from interp_rpc import CallTimeoutError, InterpreterPool, ProcessPool, RemoteError
from interp_rpc._pool.encoding import encode_call
from interp_rpc._pool.map_spec import map_spec

RANGES = [
    range(0), range(1), range(7), range(3, 20_000, 3), range(50, -50, -7),
    range(2**70, 2**70 + 300), range(-(2**64), -(2**64) + 5_000, 11),
]


def spec_of(items: Any) -> Any:
    return map_spec(pooltasks.square, (items,), timeout=None, chunksize=None, buffersize=None,
                    errors="raise", check_open=lambda name: None)


def test_a_range_is_kept_as_the_map_input_and_sliced_into_chunks() -> None:
    items = range(5, 10**7, 2)
    assert spec_of(items).items is items and spec_of(items).total == len(items)
    request = encode_call(pooltasks.square, (items[1000:2000],), {}, mode="chunk")
    assert any(arg == "range" for _, arg, _ in pickletools.genops(request.data))
    assert len(request.data) < 200


def test_other_inputs_are_read_whole_as_before() -> None:
    assert spec_of(iter(range(5))).items == [0, 1, 2, 3, 4]
    assert spec_of([1, 2]).items == [1, 2]


@pytest.mark.parametrize("items", RANGES, ids=repr)
@pytest.mark.parametrize("chunksize", [None, 1, 1000])
def test_a_range_maps_as_its_list_does(module_pool: InterpreterPool, items: range,
                                       chunksize: int | None) -> None:
    results = list(module_pool.map(columntasks.describe, items, chunksize=chunksize))
    assert results == [columntasks.describe(i) for i in list(items)]


def test_a_failing_item_of_a_range_is_named_by_its_index(module_pool: InterpreterPool) -> None:
    items = range(100, 30_100, 3)
    bad = items[4321]
    with pytest.raises(RemoteError) as raised:
        list(module_pool.map(pooltasks.fail_on, items, [bad] * len(items)))  # star: a list
    assert raised.value.item_index == 4321
    items = range(100, 30_100)
    with pytest.raises(RemoteError) as raised:
        list(module_pool.map(columntasks.fail_on_value, items))
    assert raised.value.item_index == items.index(columntasks.FAILING_VALUE)


def test_collected_failures_of_a_range_take_their_places(module_pool: InterpreterPool) -> None:
    items = range(columntasks.FAILING_VALUE - 500, columntasks.FAILING_VALUE + 500)
    results = module_pool.map(columntasks.fail_on_value, items, errors="collect")
    failed = [i for i, r in enumerate(results) if isinstance(r, RemoteError)]
    assert failed == [items.index(columntasks.FAILING_VALUE)]


def test_a_profiled_map_over_a_range_times_every_item(module_pool: InterpreterPool) -> None:
    items = range(0, 30_000, 2)
    with module_pool.profile() as profile:
        results = list(module_pool.map(pooltasks.square, items))
    assert results == [i * i for i in items]
    timed = sorted(r.item for r in profile.records if r.item is not None)
    assert timed == list(range(len(items)))


def test_a_worker_process_maps_a_range() -> None:
    with ProcessPool(workers=2, init="import columntasks") as pool:
        items = range(2**65, 2**65 + 3_000, 5)
        assert list(pool.map(columntasks.describe, items)) == [columntasks.describe(i)
                                                               for i in items]


@pytest.mark.parametrize("kind", ["range", "list"])
def test_a_timeout_ends_a_map_of_ten_million_items(module_pool: InterpreterPool,
                                                     kind: str) -> None:
    items = range(10**7) if kind == "range" else list(range(10**7))
    results = module_pool.map(columntasks.square_slowly, items, timeout=0.5)
    with pytest.raises(CallTimeoutError) as raised:
        list(results)
    assert raised.value.total == 10**7 and raised.value.completed < 10**7
    wait_until(lambda: all(w.state == "idle" for w in module_pool.status()))
    assert module_pool.call(pooltasks.add, 1, 2) == 3
