"""Work for the demo notebook: plain functions that workers import."""

import time


def count_primes(limit: int) -> int:
    """Count primes below ``limit`` the slow way: pure-Python CPU work."""
    count = 0
    for n in range(2, limit):
        for d in range(2, int(n**0.5) + 1):
            if n % d == 0:
                break
        else:
            count += 1
    return count


class NegativeInputError(ValueError):
    pass


def checked_sqrt(x: float) -> float:
    if x < 0:
        raise NegativeInputError(f"cannot take the square root of {x}")
    return x**0.5


def describe(record: dict) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in record.items())


def nap(seconds: float) -> float:
    """Sleep, then return how long: stands in for a slow or stuck call."""
    time.sleep(seconds)
    return seconds
