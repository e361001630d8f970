"""The pool contract, case by case, on InterpreterPool and ClusterPool alike:
each test runs once on each kind of pool and expects the same behaviour."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("distributed")

from dask_support import CLUSTER_LIMIT, INIT, local_cluster

from interp_rpc import InterpreterPool, RemoteError
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
