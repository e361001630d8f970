"""What the benchmark's workers run.

Every contender's workers import this module by name (``workloads``), so it
sits at the top of bench/, which is on their ``sys.path``: run.py's directory
for threads, subinterpreters and multiprocessing, added explicitly for
ipyparallel's engines. It imports nothing heavy, so that importing it does not
blur the times it is used to measure.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


def count_primes(limit: int) -> int:
    """How many primes are below ``limit``, by trial division.

    Pure-Python CPU work with no I/O and no allocation to speak of: the
    workload on which the GIL decides everything.
    """
    count = 0
    for n in range(2, limit):
        if n % 2 == 0:
            count += n == 2
            continue
        divisor = 3
        while divisor * divisor <= n:
            if n % divisor == 0:
                break
            divisor += 2
        else:
            count += 1
    return count


def identity[T](value: T) -> T:
    """The tiny task: whatever a call costs beyond this is the contender's."""
    return value


def payload_len(data: bytes | bytearray | memoryview) -> int:
    """Returns only the length, so a large payload crosses one way only."""
    return len(data)


def import_json_decimal() -> None:
    """The initializer equivalent of ``init="import json, decimal"``.

    Executors take a callable initializer, not source code; this is the same
    work for them.
    """
    import decimal  # noqa: F401
    import json  # noqa: F401


def warm(seconds: float) -> int:
    """Occupies a worker for ``seconds`` and resolves this module there.

    Submitting one per worker at once makes lazily started pools (threads,
    InterpreterPoolExecutor, ProcessPoolExecutor) start all of them.
    """
    time.sleep(seconds)
    return count_primes(100)


def array_nbytes(array: Any) -> int:
    """A NumPy array's size: it crossed as an argument."""
    return int(array.nbytes)


def first_value(array: Any) -> float:
    """A NumPy array's first value: whether a change made in place arrived."""
    return float(array[0])


def ones(items: int) -> Any:
    """A new float64 array of ``items`` ones, to cross as a result."""
    import numpy

    return numpy.ones(items)


def filled_bytes(size: int) -> bytes:
    """``size`` bytes, every page written (as real data is; ``bytes(size)``
    would be untouched zero pages, dear to read on this VM), to cross as a
    result."""
    return b"\xa5" * size


def filled_bytearray(size: int) -> bytearray:
    """filled_bytes() as a new bytearray, to cross as a result."""
    return bytearray(b"\xa5") * size


def filled_str(size: int) -> str:
    """A str of ``size`` characters, every page written, to cross as a result."""
    return "\u00e9" * size


def square(x: int) -> int:
    """The tiny map item of the scaling run."""
    return x * x


def floats(items: int) -> list[float]:
    """A new list of ``items`` floats, to cross as a result."""
    return [i * 0.5 for i in range(items)]


def ints(items: int) -> list[int]:
    """A new list of ``items`` ints (beyond the small-int cache), to cross as a result."""
    return [i * 7919 for i in range(items)]


#: The list of each kind a worker holds (see held_floats): one per kind, so
#: a worker keeps at most one float and one int list, of the last size asked.
_held: dict[str, list[Any]] = {}


def _held_list(kind: str, items: int, make: Callable[[int], list[Any]]) -> list[Any]:
    held = _held.get(kind)
    if held is None or len(held) != items:
        held = _held[kind] = make(items)
    return held


def held_floats(items: int) -> list[float]:
    """floats(items), made by this worker's first call for that size and
    returned by the next ones: what crosses as a result, without the making,
    as the argument rows' list is made once in the caller."""
    return _held_list("float", items, floats)


def held_ints(items: int) -> list[int]:
    """ints(items), as held_floats() holds floats."""
    return _held_list("int", items, ints)


def count(values: list[Any]) -> int:
    """Returns only the length, so a list crosses one way only."""
    return len(values)
