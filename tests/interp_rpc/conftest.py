"""Fixtures of the pool tests.

Worker modules live in fixtures/; that directory goes on sys.path here, before
any pool exists, because workers start with the caller's sys.path.
"""

from __future__ import annotations

import signal
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from support import FIXTURES, Gates, pool_for_fixture

from interp_rpc import InterpreterPool

if str(FIXTURES) not in sys.path:
    sys.path.insert(0, str(FIXTURES))

INIT = "import pooltasks, mymodule"


@pytest.fixture(scope="session", autouse=True)
def python_handles_ctrl_c() -> Iterator[None]:
    """Ctrl-C raises KeyboardInterrupt, as in a python started from a
    terminal. A shell starts background jobs (``./dev test &``, a CI step)
    with SIGINT ignored, Python keeps that, and the tests that press Ctrl-C
    (a real SIGINT, or _thread.interrupt_main()) then pressed nothing: they
    hung, or saw their map run to the end."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


@pytest.fixture
def gates(tmp_path: Path) -> Iterator[Gates]:
    """Gates that blocking worker calls wait on; all open at teardown."""
    gates = Gates(tmp_path / "gates")
    yield gates
    gates.release_all()


@pytest.fixture
def pool(gates: Gates) -> Iterator[InterpreterPool]:
    """A 2-worker pool, always closed (gates opened first, so it cannot hang)."""
    pool = InterpreterPool(workers=2, init=INIT)
    try:
        yield pool
    finally:
        gates.release_all()
        pool.close(timeout=60)


@pytest.fixture
def make_pool(gates: Gates) -> Iterator[Callable[..., InterpreterPool]]:
    """Makes pools that are closed at teardown, after the gates opened (a
    failing test that leaves calls blocked cannot hang its teardown)."""
    pools: list[InterpreterPool] = []

    def make(workers: int = 2, init: str | None = INIT, **options: object) -> InterpreterPool:
        pool = InterpreterPool(workers=workers, init=init, **options)  # type: ignore[arg-type]
        pools.append(pool)
        return pool

    try:
        yield make
    finally:
        gates.release_all()
        for pool in pools:
            pool.close(timeout=60)


@pytest.fixture(scope="module")
def module_pool() -> Iterator[InterpreterPool]:
    """One pool shared by a module's tests that leave it as they found it."""
    yield from pool_for_fixture(2, INIT)
