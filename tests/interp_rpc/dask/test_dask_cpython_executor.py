"""CPython's own concurrent.futures tests, run against ClusterPool.

The same test classes as pool/test_cpython_executor.py runs against
InterpreterPool, from Debian's libpython3.14-testsuite, through CPython's own
mixins. One dask LocalCluster (one worker process) serves the module; each
test gets a ClusterPool of its own on it, with as many subinterpreters as
the test asks workers. Each skip says why.
"""

from __future__ import annotations

import unittest
from typing import Any

import pytest

executor_tests = pytest.importorskip("test.test_concurrent_futures.executor",
                                     reason="needs CPython's test suite "
                                            "(libpython3.14-testsuite)")
from cpython_suites import SubinterpreterPoolMixin  # noqa: E402 - after the importorskip
from dask_support import local_cluster  # noqa: E402
from test.test_concurrent_futures import test_as_completed, test_wait, util  # noqa: E402

from interp_rpc.dask import ClusterPool  # noqa: E402

#: Why a test cannot run against ClusterPool, by test name.
SKIPS = {
    "test_max_workers_negative": "ClusterPool takes no max_workers: the cluster sizes it "
                                 "(test_dask_pool.py checks workers_per_process)",
}

_cluster: Any = None
_client: Any = None


def setUpModule() -> None:
    global _cluster, _client
    _cluster = local_cluster(processes=1)
    _client = _cluster.__enter__()[1]


def tearDownModule() -> None:
    _cluster.__exit__(None, None, None)


def cluster_pool(max_workers: int) -> ClusterPool:
    """What the mixin calls as ``executor_type(max_workers=N)``."""
    return ClusterPool(_client, workers_per_process=max_workers)


class ClusterPoolMixin(SubinterpreterPoolMixin):
    executor_type = staticmethod(cluster_pool)
    skips = SKIPS


class ClusterPoolExecutorTest(ClusterPoolMixin, executor_tests.ExecutorTest,
                              util.BaseTestCase):
    pass


class ClusterPoolWaitTest(ClusterPoolMixin, test_wait.WaitTests, util.BaseTestCase):
    pass


class ClusterPoolAsCompletedTest(ClusterPoolMixin, test_as_completed.AsCompletedTests,
                                 util.BaseTestCase):
    pass


def test_every_skip_names_a_real_test() -> None:
    classes = [ClusterPoolExecutorTest, ClusterPoolWaitTest, ClusterPoolAsCompletedTest]
    names = {name for cls in classes for name in unittest.TestLoader().getTestCaseNames(cls)}
    assert set(SKIPS) <= names
