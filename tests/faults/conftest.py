"""Fixtures of the fault tests (the runs themselves: fault_runs.py)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
from fault_runs import LIFECYCLE, Run, run_with_preloaded


@pytest.fixture(scope="session")
def thread_fault_library() -> Path:
    """The LD_PRELOAD library that fails a chosen pthread_create (built by
    CMake in ./dev's test builds)."""
    build = os.environ.get("INTERP_RPC_BUILD_DIR")
    if not build:
        pytest.skip("the fault tests need ./dev's test build (INTERP_RPC_BUILD_DIR is not set)")
    library = Path(build) / "tests" / "faults" / "libfail_pthread_create.so"
    assert library.is_file(), f"{library} is missing: the test build should have made it"
    return library


@pytest.fixture
def run_lifecycle(thread_fault_library: Path) -> Callable[..., Run]:
    """Runs pool_lifecycle.py with the thread fault library preloaded."""
    return run_with_preloaded(thread_fault_library, LIFECYCLE)
