"""The %parallel_map runs going on now, in any shell of the kernel.

Each map registers itself for as long as it runs (``running()``), numbered
in the order the maps started. Three readers:

- %parallel_status lists them, with how far each has got, in any shell: a
  subshell (a second thread of execution in the kernel) runs while a
  %parallel_map blocks the main shell, or runs maps of its own;
- %parallel_stop stops one as Ctrl-C in its shell would;
- the Workers panel's feeds show the newest as the pool's progress. They
  listen (``subscribe()``), so that they speed up when a map starts and
  send the idle state as soon as it ends.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from interp_rpc._pool.contract import MapRunning


@dataclass
class RunningMap:
    """One map going on."""

    number: int  # 1, 2, ... in the order the maps started in this kernel
    target: str
    total: int
    done: Callable[[], int]  # items finished so far (any thread)
    # From another thread: makes the map's cell fail as Ctrl-C would.
    stop: Callable[[], None]
    # (call-log position, first call id) of a map on this process's engine,
    # from which a publisher counts its items without the GIL; None for a
    # pool whose progress is counted by the thread receiving its results.
    since: tuple[int, int] | None = None
    thread_id: int = field(default_factory=threading.get_ident)
    started: float = field(default_factory=time.monotonic)
    started_ns: int = field(default_factory=time.monotonic_ns)  # the engine's clock

    def seconds(self) -> float:
        return time.monotonic() - self.started

    def describe(self) -> str:
        """One line: what runs, how far it has got, for how long."""
        return (f"map {self.number}: {self.target}, {self.done()} of {self.total} items "
                f"done, running for {self.seconds():.1f} s")


class StopOnceStarted[Run: MapRunning]:
    """A map listed before it starts, as every map is: the ``stop`` it is
    listed with, and the run once it exists. A %parallel_stop may come
    between the listing and the first chunk: it is kept and given to the run
    as it starts (``started``, the run's ``on_start``), which then stops as
    if Ctrl-C came at its first wait. And a Ctrl-C that comes as the map
    starts, before its caller has the run, finds it here (``close_started``)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._run: Run | None = None  # guarded by _lock
        self._asked = False  # guarded by _lock

    @property
    def run(self) -> Run | None:
        """The run, once it has started."""
        with self._lock:
            return self._run

    def __call__(self) -> None:
        with self._lock:
            self._asked = True
            run = self._run
        if run is not None:
            run.request_stop()

    def started(self, run: Run) -> None:
        """The run exists, and has not sent a chunk yet."""
        with self._lock:
            self._run = run
            asked = self._asked
        if asked:
            run.request_stop()

    def close_started(self) -> None:
        """Stop the run, if it started: the chunks not started are
        cancelled, and running ones stop as its pool can stop them."""
        run = self.run
        if run is not None:
            run.results().close()


Listener = Callable[["RunningMap | None"], None]

_lock = threading.Lock()
_running: dict[int, RunningMap] = {}  # guarded by _lock
_listeners: list[Listener] = []  # guarded by _lock
_numbers = itertools.count(1)


@contextmanager
def running(target: str, total: int, done: Callable[[], int], stop: Callable[[], None],
            since: tuple[int, int] | None = None) -> Iterator[RunningMap]:
    """Lists the map run by the calling thread until the block ends. Enter
    it before the map sends its first chunk (``stop``: a StopOnceStarted),
    so that no item runs while %parallel_stop or %parallel_status would say
    that no map is running."""
    with _lock:
        entry = RunningMap(next(_numbers), target, total, done, stop, since)
        _running[entry.number] = entry
    notify()
    try:
        yield entry
    finally:
        with _lock:
            del _running[entry.number]
        notify()


def all_running() -> list[RunningMap]:
    """The maps going on now, oldest first."""
    with _lock:
        return sorted(_running.values(), key=lambda m: m.number)


def others() -> list[RunningMap]:
    """The maps going on now in threads other than the caller's."""
    me = threading.get_ident()
    return [m for m in all_running() if m.thread_id != me]


def current() -> RunningMap | None:
    """The newest map going on, which the Workers panel shows."""
    with _lock:
        return _running[max(_running)] if _running else None


def subscribe(listener: Listener) -> None:
    """``listener(newest map or None)`` is called, on the map's thread,
    whenever a map starts or ends, or what a map leaves has changed
    (notify()). It must not block."""
    with _lock:
        _listeners.append(listener)


def unsubscribe(listener: Listener) -> None:
    with _lock:
        if listener in _listeners:
            _listeners.remove(listener)


def notify() -> None:
    """Call every listener with the newest map (or None)."""
    now = current()
    with _lock:
        listeners = list(_listeners)
    for listener in listeners:
        listener(now)
