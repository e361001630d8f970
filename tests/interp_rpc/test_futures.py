"""Futures from submit(): results, exceptions, callbacks, waiting and cancellation."""

from __future__ import annotations

import concurrent.futures
import sys
from collections.abc import Iterator

import pytest

from interp_rpc import InterpreterPool


@pytest.fixture
def frequent_thread_switches() -> Iterator[None]:
    """Switch threads as often as possible, so that races between the
    submitting thread and the engine's completion thread show up."""
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        yield
    finally:
        sys.setswitchinterval(interval)


def test_a_call_that_finishes_before_submit_returns_still_settles_its_future(
        module_pool: InterpreterPool, frequent_thread_switches: None) -> None:
    # Regression: the completion thread could settle a future before submit()
    # had attached its handle; the future then never completed.
    futures = [module_pool.submit("pooltasks.square", i) for i in range(3000)]
    done, not_done = concurrent.futures.wait(futures, timeout=60)
    assert not not_done, f"{len(not_done)} futures never completed"
    assert [f.result() for f in futures] == [i * i for i in range(3000)]
