"""How big each measure is: the full benchmark, or the seconds-long --quick one."""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass
from typing import Any

MiB = 1 << 20


@dataclass(frozen=True)
class Config:
    quick: bool
    runs: int
    contenders: tuple[str, ...]
    workers: int  # W of measures 2-5 (and of the targets)
    cpu_workers: tuple[int, ...]  # the W values of measure 1
    prime_limit: int  # N: each CPU task counts the primes below N
    cpu_repeats: int  # rounds per W and contender, each paired with a baseline round
    warm_seconds: float  # how long each warm-up task occupies its worker
    latency_warmup: int
    latency_calls: int
    latency_budget_s: float  # stop sampling after this long (slow contenders)
    map_items: int
    map_repeats: int  # maps timed per contender and chunking: the median counts
    map_budget_s: float  # stop repeating after this long, once one map is in
    payload_sizes: tuple[int, ...]
    payload_repeats: int
    ready_repeats: int
    ready_timeout_s: float  # a probe that takes longer has hung
    call_timeout_s: float  # a call without a result after this long is lost
    hang_timeout_s: float  # one contender's block of a measure that takes longer has hung

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


def default_workers() -> int:
    """The targets are stated for 2 workers; fewer on a 1-core machine."""
    return min(2, os.cpu_count() or 1)


def make_config(*, quick: bool, runs: int, contenders: tuple[str, ...],
                workers: int) -> Config:
    cores = os.cpu_count() or 1
    if quick:
        return Config(
            quick=True, runs=runs, contenders=contenders, workers=workers,
            cpu_workers=tuple(range(1, min(2, cores) + 1)), prime_limit=60_000,
            cpu_repeats=2, warm_seconds=0.02, latency_warmup=20, latency_calls=200,
            latency_budget_s=1.0, map_items=2_000, map_repeats=3, map_budget_s=0.5,
            payload_sizes=(MiB,), payload_repeats=2,
            ready_repeats=1, ready_timeout_s=60.0, call_timeout_s=10.0,
            hang_timeout_s=90.0)
    return Config(
        quick=False, runs=runs, contenders=contenders, workers=workers,
        cpu_workers=tuple(range(1, cores + 1)), prime_limit=300_000, cpu_repeats=4,
        warm_seconds=0.05, latency_warmup=200, latency_calls=3_000, latency_budget_s=4.0,
        map_items=20_000, map_repeats=9, map_budget_s=2.0,
        payload_sizes=(MiB, 16 * MiB, 128 * MiB), payload_repeats=3,
        ready_repeats=3, ready_timeout_s=120.0, call_timeout_s=60.0,
        hang_timeout_s=600.0)
