"""How the latency measure samples one contender: identity(i) calls, one at a time.

Warm-up calls first, then timed calls until there are enough, or until the
time budget is spent once a minimum is in (so that a millisecond-per-call
contender does not stretch the run). Every result is checked: a fast wrong
answer must not pass for a fast right one.

The same plan drives a blocking loop (most contenders) and an ``await`` loop
run inside an event loop (anyio, whose users call it from async code).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Sampling:
    warmup: int
    calls: int
    budget_s: float  # stop sampling after this long, once min_samples are in
    min_samples: int = 100

    def deadline_ns(self) -> int:
        return time.perf_counter_ns() + int(self.budget_s * 1e9)

    def enough(self, samples: list[float], now_ns: int, deadline_ns: int) -> bool:
        return len(samples) >= self.calls or (
            now_ns > deadline_ns and len(samples) >= self.min_samples)


def check_identity(got: object, expected: int) -> None:
    if got != expected:
        raise AssertionError(f"identity returned a wrong result: {got!r:.80} != {expected!r}")


def sample_blocking(one_call: Callable[[int], Any], plan: Sampling) -> list[float]:
    """Sorted microseconds of ``one_call(i)``, which returns identity(i)'s result."""
    for i in range(plan.warmup):
        check_identity(one_call(i), i)
    samples: list[float] = []
    deadline = plan.deadline_ns()
    i = 0
    while True:
        started = time.perf_counter_ns()
        result = one_call(i)
        finished = time.perf_counter_ns()
        check_identity(result, i)
        samples.append((finished - started) / 1e3)
        if plan.enough(samples, finished, deadline):
            return sorted(samples)
        i += 1


async def sample_awaiting(one_call: Callable[[int], Awaitable[Any]],
                          plan: Sampling) -> list[float]:
    """The same as sample_blocking, for ``await one_call(i)`` inside an event loop."""
    for i in range(plan.warmup):
        check_identity(await one_call(i), i)
    samples: list[float] = []
    deadline = plan.deadline_ns()
    i = 0
    while True:
        started = time.perf_counter_ns()
        result = await one_call(i)
        finished = time.perf_counter_ns()
        check_identity(result, i)
        samples.append((finished - started) / 1e3)
        if plan.enough(samples, finished, deadline):
            return sorted(samples)
        i += 1
