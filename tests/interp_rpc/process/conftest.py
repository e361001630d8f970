"""Fixtures of the ProcessPool tests: pools that are always closed, and the
directory of their targets on sys.path (workers start with the caller's)."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from interp_rpc import ProcessPool

HERE = Path(__file__).parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))


@pytest.fixture
def make_process_pool() -> Iterator[Callable[..., ProcessPool]]:
    pools: list[ProcessPool] = []

    def make(workers: int = 2, **options: object) -> ProcessPool:
        pool = ProcessPool(workers=workers, **options)  # type: ignore[arg-type]
        pools.append(pool)
        return pool

    try:
        yield make
    finally:
        for pool in pools:
            pool.close(timeout=10)


@pytest.fixture
def process_pool(make_process_pool: Callable[..., ProcessPool]) -> ProcessPool:
    return make_process_pool()

