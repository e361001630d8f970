"""The %parallel_map runs going on now, in any shell of the kernel.

A subshell (a second thread of execution in the kernel, see the kernel's
subshells) runs while a %parallel_map blocks the main shell, or runs maps of
its own. %parallel_status there lists the maps going on, with how far each
has got, and %parallel_stop stops one as Ctrl-C in its shell would. Each map
registers itself for as long as it runs (``running()``); this module keeps
them, numbered in the order they started.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field


@dataclass
class RunningMap:
    """One map going on."""

    number: int  # 1, 2, ... in the order the maps started in this kernel
    target: str
    total: int
    done: Callable[[], int]  # items finished so far
    # Makes the map's cell fail as Ctrl-C would; None: this map cannot be
    # stopped from another thread (the pool's results are read in its own).
    stop: Callable[[], None] | None
    thread_id: int = field(default_factory=threading.get_ident)
    started: float = field(default_factory=time.monotonic)

    def describe(self) -> str:
        """One line: what runs, how far it has got, for how long."""
        seconds = time.monotonic() - self.started
        return (f"map {self.number}: {self.target}, {self.done()} of {self.total} items "
                f"done, running for {seconds:.1f} s")


_lock = threading.Lock()
_running: dict[int, RunningMap] = {}
_numbers = itertools.count(1)


@contextmanager
def running(target: str, total: int, done: Callable[[], int],
            stop: Callable[[], None] | None) -> Iterator[RunningMap]:
    """Lists the map run by the calling thread until the block ends."""
    with _lock:
        entry = RunningMap(next(_numbers), target, total, done, stop)
        _running[entry.number] = entry
    try:
        yield entry
    finally:
        with _lock:
            del _running[entry.number]


def all_running() -> list[RunningMap]:
    """The maps going on now, oldest first."""
    with _lock:
        return sorted(_running.values(), key=lambda m: m.number)


def others() -> list[RunningMap]:
    """The maps going on now in threads other than the caller's."""
    me = threading.get_ident()
    return [m for m in all_running() if m.thread_id != me]
