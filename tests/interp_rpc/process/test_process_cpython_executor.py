"""CPython's own concurrent.futures tests, run against ProcessPool.

The same test classes as pool/test_cpython_executor.py runs against
InterpreterPool, from Debian's libpython3.14-testsuite, through CPython's own
mixins; workers import the test modules by name, as they would any target's
module. Each skip says why.
"""

from __future__ import annotations

import unittest

import pytest

executor_tests = pytest.importorskip("test.test_concurrent_futures.executor",
                                     reason="needs CPython's test suite "
                                            "(libpython3.14-testsuite)")
from cpython_suites import SubinterpreterPoolMixin  # noqa: E402 - after the importorskip
from test.test_concurrent_futures import (  # noqa: E402 - after the importorskip
    test_as_completed,
    test_shutdown,
    test_wait,
    util,
)

from interp_rpc import ProcessPool  # noqa: E402

#: Why a test cannot run against ProcessPool, by test name.
SKIPS = {
    # Each runs a script that imports the executor class by name from
    # concurrent.futures, where ProcessPool is not. test_process_close.py
    # checks that a pool left open at exit, with a call running, ends.
    "test_interpreter_shutdown": "its script imports the executor from concurrent.futures "
                                 "(test_process_close.py::"
                                 "test_a_pool_left_open_at_exit_ends_its_workers)",
    "test_submit_after_interpreter_shutdown":
        "its script imports the executor from concurrent.futures",
    "test_hang_gh83386": "its script imports the executor from concurrent.futures "
                         "(test_process_close.py::"
                         "test_a_pool_left_open_at_exit_ends_its_workers)",
}


class ProcessPoolMixin(SubinterpreterPoolMixin):
    executor_type = ProcessPool
    skips = SKIPS


class ProcessPoolExecutorTest(ProcessPoolMixin, executor_tests.ExecutorTest, util.BaseTestCase):
    pass


class ProcessPoolWaitTest(ProcessPoolMixin, test_wait.WaitTests, util.BaseTestCase):
    pass


class ProcessPoolAsCompletedTest(ProcessPoolMixin, test_as_completed.AsCompletedTests,
                                 util.BaseTestCase):
    pass


class ProcessPoolShutdownTest(ProcessPoolMixin, test_shutdown.ExecutorShutdownTest,
                              util.BaseTestCase):
    pass


def test_every_skip_names_a_real_test() -> None:
    classes = [ProcessPoolExecutorTest, ProcessPoolWaitTest, ProcessPoolAsCompletedTest,
               ProcessPoolShutdownTest]
    names = {name for cls in classes for name in unittest.TestLoader().getTestCaseNames(cls)}
    assert set(SKIPS) <= names
