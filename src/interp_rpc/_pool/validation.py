"""Checks of the options callers pass, with messages that name the option."""

from __future__ import annotations

import math
import os
from typing import Any


def check_timeout(name: str, value: float | None) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{name} must be a number of seconds or None, not {type(value).__name__}")
    if math.isnan(value) or value < 0:
        raise ValueError(f"{name} must be a non-negative number of seconds, not {value!r}")


def check_init(init: object) -> None:
    """``init=``: source code every worker runs once, checked before any
    worker starts."""
    if init is None:
        return
    if not isinstance(init, str):
        raise TypeError(f"init must be source code (a str) or None, not {type(init).__name__}")
    try:
        compile(init, "<init>", "exec")
    except SyntaxError as exc:
        raise ValueError(f"init is not valid Python: {exc}") from exc


def check_workers(name: str, value: object) -> int:
    """A worker count, checked as ThreadPoolExecutor checks max_workers."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, not {type(value).__name__}")
    if value <= 0:
        raise ValueError(f"{name} must be greater than 0")
    return value


def available_memory() -> int | None:
    """Bytes of memory the system can still give (Linux's MemAvailable), or
    None where it does not say."""
    try:
        with open("/proc/meminfo", encoding="ascii") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def check_workers_fit(name: str, workers: int, memory_per_worker: int,
                      available: int | None) -> None:
    """Every worker starts before the pool is ready: a count that cannot fit
    in ``available`` bytes (``memory_per_worker`` each, at the least) is a
    mistake to name now, not after minutes of starting workers until the
    system kills the process for its memory."""
    if available is None or workers * memory_per_worker <= available:
        return
    most = available // memory_per_worker
    cores = os.process_cpu_count() or 1
    raise ValueError(
        f"{name}={workers:,} cannot fit in this machine's memory: each worker takes at "
        f"least {memory_per_worker / 2**20:.0f} MiB (more with init=), "
        f"{workers * memory_per_worker / 2**30:,.1f} GiB in all, and "
        f"{available / 2**30:,.1f} GiB is available. At most {most:,} would fit; for "
        f"CPU-bound work, more workers than cores ({cores} here) gain nothing")


def check_count(name: str, value: int | None, minimum: int) -> None:
    """A count that may be left out (None), at least ``minimum``."""
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int or None, not {type(value).__name__}")
    if value < minimum:
        raise ValueError(f"{name} must be at least {minimum}, not {value}")


def check_chunksize(value: object) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                              or value < 1):
        raise ValueError(f"chunksize must be a positive int or None, not {value!r}")


#: What a map does with a failing item: raise it (and stop), or put its
#: RemoteError among the results (and go on).
MAP_ERRORS = ("raise", "collect")


def check_errors(value: object) -> None:
    if value not in MAP_ERRORS:
        raise ValueError(f"errors must be 'raise' or 'collect', not {value!r}")


def check_buffersize(value: object) -> None:
    """As Executor.map checks it (same messages and exception types)."""
    if value is not None and not isinstance(value, int):
        raise TypeError("buffersize must be an integer or None")
    if value is not None and value < 1:
        raise ValueError("buffersize must be None or > 0")


def checked_arguments(args: object, kwargs: object) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """run_everywhere()'s ``args`` and ``kwargs``, passed as values rather
    than spread: a tuple (or list) and a dict (or None). A single argument
    passed bare would otherwise fail deep inside with a message about
    iterating it."""
    if not isinstance(args, tuple | list):
        raise TypeError(f"args must be a tuple of the target's arguments, not "
                        f"{type(args).__name__} (for one argument, pass args=(value,))")
    if kwargs is not None and not isinstance(kwargs, dict):
        raise TypeError(f"kwargs must be a dict of keyword arguments or None, not "
                        f"{type(kwargs).__name__}")
    return tuple(args), kwargs or {}
