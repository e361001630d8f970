"""The pool contract, case by case, on InterpreterPool and ClusterPool alike:
each test runs once on each kind of pool and expects the same behaviour."""

from __future__ import annotations

import itertools
import json
import re
import threading
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("distributed")

from dask_support import CLUSTER_LIMIT, INIT, local_cluster
from support import wait_until

from interp_rpc import InterpreterPool, PoolClosedError, RemoteError, ShareabilityError
from interp_rpc.dask import ClusterPool

pytestmark = pytest.mark.timeout(240)


@pytest.fixture(scope="module")
def client() -> Iterator[Any]:
    with local_cluster(2) as (_, client):
        yield client


@pytest.fixture(scope="module", params=["InterpreterPool", "ClusterPool"])
def any_pool(request: pytest.FixtureRequest, client: Any) -> Iterator[Any]:
    if request.param == "InterpreterPool":
        pool: Any = InterpreterPool(workers=2, init=INIT)
    else:
        pool = ClusterPool(client, init=INIT)
    try:
        yield pool
    finally:
        pool.close(timeout=CLUSTER_LIMIT)


def test_except_the_original_class_catches_a_remote_call_error(any_pool: Any) -> None:
    with pytest.raises(ZeroDivisionError) as caught:
        any_pool.call("operator.truediv", 1, 0)
    assert isinstance(caught.value, RemoteError)
    assert type(caught.value).__qualname__ == "RemoteError[ZeroDivisionError]"
    assert caught.value.target == "operator.truediv"


def test_an_error_class_with_fields_is_caught_with_them(any_pool: Any) -> None:
    # json.JSONDecodeError(msg, doc, pos) cannot be rebuilt from a message:
    # its fields come from the worker, through the dask worker's pool too.
    with pytest.raises(json.JSONDecodeError) as caught:
        any_pool.call("json.loads", "[1, 2")
    assert isinstance(caught.value, RemoteError)
    assert (caught.value.pos, caught.value.doc) == (5, "[1, 2")


def test_except_star_finds_the_errors_of_a_remote_exception_group(any_pool: Any) -> None:
    # The group's errors are relayed through the dask worker's pool as
    # remote errors of their own classes.
    caught: list[BaseException] = []
    try:
        any_pool.call("builtins.exec", "raise ExceptionGroup('two', [ValueError(1), OSError(2)])")
    except* ValueError as group:
        caught += group.exceptions
    except* OSError as group:
        caught += group.exceptions
    assert [type(e).__qualname__ for e in caught] == ["RemoteError[ValueError]",
                                                      "RemoteError[OSError]"]
    assert [e.args for e in caught] == [(1,), (2,)]


def test_except_the_original_class_catches_a_failing_map_item(any_pool: Any) -> None:
    results = any_pool.map(divmod, [1, 1, 1, 1], [2, 3, 0, 5], chunksize=1)
    assert next(results) == (0, 1)
    assert next(results) == (0, 1)
    with pytest.raises(ZeroDivisionError) as caught:
        next(results)
    assert caught.value.item_index == 2


def test_errors_collect_puts_each_failure_in_its_place(any_pool: Any) -> None:
    results = list(any_pool.map("pooltasks.fail_on", range(8), [3] * 8, chunksize=3,
                                errors="collect"))
    assert [r for i, r in enumerate(results) if i != 3] == [0, 1, 2, 4, 5, 6, 7]
    failure = results[3]
    assert isinstance(failure, RemoteError) and isinstance(failure, ValueError)
    assert failure.item_index == 3
    assert failure.worker is not None and f"worker {failure.worker}" in str(failure)


def test_errors_takes_only_raise_or_collect(any_pool: Any) -> None:
    with pytest.raises(ValueError, match="errors must be 'raise' or 'collect', not 'ignore'"):
        any_pool.map(abs, [1], errors="ignore")


def test_worker_indices_are_what_run_everywhere_and_statuses_use(any_pool: Any) -> None:
    indices = any_pool.worker_indices()
    assert len(indices) == any_pool.workers == 2
    assert sorted(w.index for w in any_pool.status()) == sorted(indices)
    chosen = indices[-1:]
    outcomes = any_pool.run_everywhere("os.getpid", workers=chosen).wait()
    assert list(outcomes) == chosen


@pytest.fixture(params=["InterpreterPool", "ClusterPool"])
def closed_pool(request: pytest.FixtureRequest, client: Any) -> Any:
    pool: Any = (InterpreterPool(workers=1) if request.param == "InterpreterPool"
                 else ClusterPool(client))
    pool.close(timeout=CLUSTER_LIMIT)
    return pool


def test_a_closed_pool_reads_nothing_of_a_maps_input(closed_pool: Any) -> None:
    # No data is lost: the items stay in the caller's iterator.
    items = iter(range(5))
    message = "the pool is closed; cannot call 'builtins.abs'"
    with pytest.raises(PoolClosedError, match=re.escape(message)):
        closed_pool.map(abs, items)
    assert list(items) == [0, 1, 2, 3, 4]


@pytest.mark.parametrize(("options", "error", "message"), [
    ({"chunksize": 0}, ValueError, "chunksize must be a positive int or None, not 0"),
    ({"buffersize": 0}, ValueError, "buffersize must be None or > 0"),
    ({"buffersize": 1.5}, TypeError, "buffersize must be an integer or None"),
    ({"timeout": -1}, ValueError, "timeout must be a non-negative number of seconds"),
])
def test_map_options_are_checked_with_the_same_messages(any_pool: Any, options: dict[str, Any],
                                                        error: type[Exception],
                                                        message: str) -> None:
    items = iter(range(3))
    with pytest.raises(error, match=re.escape(message)):
        any_pool.map(abs, items, **options)
    assert list(items) == [0, 1, 2]


def test_buffersize_reads_an_endless_input_lazily(any_pool: Any) -> None:
    results = any_pool.map("pooltasks.square", itertools.count(), buffersize=4)
    assert list(itertools.islice(results, 10)) == [i * i for i in range(10)]
    results.close()


def test_an_unshareable_map_item_is_named_by_its_path_before_anything_runs(
        any_pool: Any) -> None:
    with pytest.raises(ShareabilityError) as caught:
        any_pool.map("pooltasks.identity", [1, {"key": [threading.Lock()]}])
    assert caught.value.item_index == 1
    assert caught.value.argument_path == "argument 'value'['key'][0]"


def test_a_profile_records_every_item_of_a_map(any_pool: Any) -> None:
    with any_pool.profile() as prof:
        assert list(any_pool.map("pooltasks.square", range(30), chunksize=4)) == [
            i * i for i in range(30)]
    assert sorted(r.item for r in prof.records) == list(range(30))
    assert {r.worker for r in prof.records} <= set(any_pool.worker_indices())


def test_run_everywhere_sends_large_arguments_to_every_worker(any_pool: Any) -> None:
    big = bytes(range(256)) * 4096  # out of band: one encoding, sent to each worker
    outcomes = any_pool.run_everywhere("zlib.crc32", (big,)).wait()
    assert sorted(outcomes) == sorted(any_pool.worker_indices())
    assert set(outcomes.values()) == {zlib.crc32(big)}


def test_a_profile_leaves_out_the_chunks_of_a_map_begun_before_it(any_pool: Any,
                                                                  tmp_path: Path) -> None:
    # Two chunks hold both workers and a third waits behind them (queued in
    # the engine, or in a dask worker's queue) when the profile starts: none
    # of that map is the profile's. A cluster once numbered the queued chunk
    # as item 0 of whatever map it profiled.
    gate = tmp_path / "gate"
    started = [tmp_path / f"started-{i}" for i in range(3)]
    earlier = any_pool.map("pooltasks.block", [str(s) for s in started], [str(gate)] * 3,
                           range(3), chunksize=1)
    wait_until(lambda: all(s.exists() for s in started[:2]), CLUSTER_LIMIT,
               "two blocked chunks running")
    with any_pool.profile() as prof:
        gate.touch()
        assert list(earlier) == [0, 1, 2]
        assert list(any_pool.map("pooltasks.square", range(4), chunksize=1)) == [0, 1, 4, 9]
    profiled = sorted((r.target, r.item) for r in prof.records)
    assert profiled == [("pooltasks.square", i) for i in range(4)]


def test_a_memoryview_result_comes_back_as_a_read_only_view(any_pool: Any) -> None:
    for size in (48, 1 << 17):  # pickled into the reply, and lent
        data = (bytes(range(256)) * (size // 256 + 1))[:size]
        back = any_pool.call("buffertasks.view_of", data, "d", (size // 8,))
        assert type(back) is memoryview
        assert (back.format, back.shape, back.readonly) == ("d", (size // 8,), True)
        assert back.tobytes() == data
    mapped = list(any_pool.map("buffertasks.view_of", [b"ab", b"cd"], ["B", "B"], [(2,), (2,)]))
    assert [(type(v), bytes(v)) for v in mapped] == [(memoryview, b"ab"), (memoryview, b"cd")]


def test_run_everywhere_names_arguments_passed_bare(any_pool: Any) -> None:
    """args and kwargs are values, not spread: one argument passed bare is
    refused with the fix, before anything is sent."""
    with pytest.raises(TypeError, match=r"args must be a tuple .* not bool .*args=\(value,\)"):
        any_pool.run_everywhere("pooltasks.identity", True)
    with pytest.raises(TypeError, match=r"kwargs must be a dict .* not list"):
        any_pool.run_everywhere("pooltasks.add", (1,), [2])
    # A list of arguments is fine.
    assert set(any_pool.run_everywhere("pooltasks.add", [1, 2]).wait().values()) == {3}
