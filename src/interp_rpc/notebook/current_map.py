"""The %parallel_map running now, if any: what the Workers panel shows as
progress, and what its stop button stops.

The map magic announces its map here while it runs (``running()``); the
panel's feeds listen (``subscribe()``), so that they speed up when a map
starts and send the idle state as soon as it ends. Only the main shell runs
%parallel_map, so one map runs at a time; a subshell's map replaces the
announcement while it runs, and the earlier one comes back after it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from time import monotonic, monotonic_ns


@dataclass(frozen=True)
class RunningMap:
    """A map as the panel shows it."""

    target: str
    total: int
    started: float  # time.monotonic() when it started
    started_ns: int  # time.monotonic_ns() then, as the engine's clock counts
    done: Callable[[], int]  # items done so far (any thread)
    # (call-log position, first call id) of a map on this process's engine,
    # from which a publisher counts its items without the GIL; None for a
    # pool whose progress is counted by the thread receiving its results.
    since: tuple[int, int] | None = None

    def seconds(self) -> float:
        return monotonic() - self.started


Listener = Callable[[RunningMap | None], None]

_lock = threading.Lock()
_maps: list[RunningMap] = []  # the newest last; guarded by _lock
_listeners: list[Listener] = []  # guarded by _lock


def current() -> RunningMap | None:
    with _lock:
        return _maps[-1] if _maps else None


def subscribe(listener: Listener) -> None:
    """``listener(map or None)`` is called, on the map's thread, whenever
    the current map changes. It must not block."""
    with _lock:
        _listeners.append(listener)


def unsubscribe(listener: Listener) -> None:
    with _lock:
        if listener in _listeners:
            _listeners.remove(listener)


def _notify() -> None:
    with _lock:
        now = _maps[-1] if _maps else None
        listeners = list(_listeners)
    for listener in listeners:
        listener(now)


@contextmanager
def running(target: str, total: int, done: Callable[[], int],
            since: tuple[int, int] | None = None) -> Iterator[RunningMap]:
    """Announce a map for as long as the block runs."""
    announced = RunningMap(target, total, monotonic(), monotonic_ns(), done, since)
    with _lock:
        _maps.append(announced)
    _notify()
    try:
        yield announced
    finally:
        with _lock:
            _maps.remove(announced)
        _notify()
