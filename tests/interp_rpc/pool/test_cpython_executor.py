"""CPython's own concurrent.futures tests, run against InterpreterPool.

The test classes come from Debian's libpython3.14-testsuite
(``test.test_concurrent_futures``) and run through its mixins, exactly as
CPython runs them against its own executors. Each skip says why;
docs/guide/targets.md lists them. Workers import the test modules by name, as they would any
target's module.
"""

from __future__ import annotations

import unittest

import pytest

executor_tests = pytest.importorskip("test.test_concurrent_futures.executor",
                                     reason="needs CPython's test suite "
                                            "(libpython3.14-testsuite)")
from cpython_suites import SubinterpreterPoolMixin  # noqa: E402
from test.test_concurrent_futures import (  # noqa: E402 - after the importorskip
    test_as_completed,
    test_shutdown,
    test_wait,
    util,
)

from interp_rpc import InterpreterPool  # noqa: E402

#: Why a test cannot run against InterpreterPool, by test name.
SKIPS = {
    # Each runs a script that imports the executor class by name from
    # concurrent.futures, where InterpreterPool is not. test_exit.py, beside
    # this file, checks the same behaviour for InterpreterPool, within the
    # seed's contract that exit never hangs: a call left running at exit
    # gets 1 s (EXIT_TIMEOUT) in all, where these scripts' calls take 1 s.
    "test_interpreter_shutdown": "its script imports the executor from concurrent.futures "
                                 "(test_exit.py::test_a_short_call_left_running_at_exit_finishes)",
    "test_submit_after_interpreter_shutdown":
        "its script imports the executor from concurrent.futures "
        "(test_exit.py::test_submit_after_interpreter_exit_raises_runtime_error)",
    "test_hang_gh83386": "its script imports the executor from concurrent.futures "
                         "(test_exit.py::test_a_short_call_left_running_at_exit_finishes)",
}


class InterpRpcPoolMixin(SubinterpreterPoolMixin):
    executor_type = InterpreterPool
    skips = SKIPS


class InterpreterPoolExecutorTest(InterpRpcPoolMixin, executor_tests.ExecutorTest,
                                  util.BaseTestCase):
    pass


class InterpreterPoolWaitTest(InterpRpcPoolMixin, test_wait.WaitTests, util.BaseTestCase):
    pass


class InterpreterPoolAsCompletedTest(InterpRpcPoolMixin, test_as_completed.AsCompletedTests,
                                     util.BaseTestCase):
    pass


class InterpreterPoolShutdownTest(InterpRpcPoolMixin, test_shutdown.ExecutorShutdownTest,
                                  util.BaseTestCase):
    pass


def test_every_skip_names_a_real_test() -> None:
    classes = [InterpreterPoolExecutorTest, InterpreterPoolWaitTest,
               InterpreterPoolAsCompletedTest, InterpreterPoolShutdownTest]
    names = {name for cls in classes for name in unittest.TestLoader().getTestCaseNames(cls)}
    assert set(SKIPS) <= names
