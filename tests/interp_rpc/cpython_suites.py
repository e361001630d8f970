"""What running CPython's concurrent.futures suites against a pool of ours
needs, whichever pool: the mixin that CPython's test classes take, with our
skips. Import this after ``pytest.importorskip`` has found the suites
(Debian's libpython3.14-testsuite)."""

from __future__ import annotations

from typing import ClassVar

from test.test_concurrent_futures import util


class SubinterpreterPoolMixin(util.ExecutorMixin):
    """CPython's ExecutorMixin for a pool whose workers are subinterpreters;
    ``skips`` says, by test name, why a test cannot run against it."""

    worker_count = 2
    skips: ClassVar[dict[str, str]] = {}

    def setUp(self) -> None:
        reason = self.skips.get(self._testMethodName)
        if reason is not None:
            self.skipTest(reason)
        super().setUp()

    def create_event(self) -> None:
        # As CPython does for its InterpreterPoolExecutor: an Event is a
        # lock of the main interpreter, which no worker can wait on.
        self.skipTest("a threading.Event cannot cross to a subinterpreter "
                      "(CPython skips these for InterpreterPoolExecutor too)")
