"""Where the done-callbacks of futures settled by the engine run.

The engine's completion thread settles every future that nobody is waiting
on. If user callbacks ran there, one callback that blocks would stall every
other future, and one that closes the pool would deadlock it (close() joins
that thread). So callbacks due on that thread are handed to runner threads
here. Normally one runner serves them all, in order. While callbacks are
due and no runner is free, a watchdog looks every STALL_SECONDS: when every
runner has been inside one callback for longer than that, it starts another
runner, so a blocked callback delays only itself. Runners are daemon threads
that end after IDLE_SECONDS without work; the watchdog ends when nothing is
due.
"""

from __future__ import annotations

import threading
import time
import warnings
from collections import deque
from collections.abc import Callable

#: A runner inside one callback for longer than this counts as blocked.
STALL_SECONDS = 0.05
#: A runner with nothing to do for this long ends.
IDLE_SECONDS = 2.0


class _Runners:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._due: deque[Callable[[], None]] = deque()
        self._work_arrived = threading.Condition(self._lock)
        self._idle = 0
        self._starting = 0  # runners started that have not taken the lock yet
        self._watching = False
        # When each busy runner entered its current callback (monotonic).
        self._busy_since: dict[int, float] = {}

    def run_soon(self, callback: Callable[[], None]) -> None:
        with self._lock:
            self._due.append(callback)
            if self._idle:
                self._work_arrived.notify()
                return
            start_runner = not self._busy_since and not self._starting
            if start_runner:
                self._starting += 1
            start_watchdog = not start_runner and not self._watching
            self._watching = self._watching or start_watchdog
        if start_runner:
            self._start_runner()
        if start_watchdog:
            threading.Thread(target=self._watch, name="interp-rpc callback watchdog",
                             daemon=True).start()

    def _start_runner(self) -> None:
        try:
            threading.Thread(target=self._serve, name="interp-rpc callbacks", daemon=True).start()
        except RuntimeError as exc:  # the process is at a limit on threads
            with self._lock:
                self._starting -= 1
            warnings.warn(f"interp-rpc: could not start a thread to run done-callbacks ({exc}; "
                          "a limit on threads, such as pids.max or ulimit -u?): running them "
                          "on this thread instead", RuntimeWarning, stacklevel=1)
            self._run_due_here()

    def _run_due_here(self) -> None:
        while True:
            with self._lock:
                if not self._due:
                    return
                callback = self._due.popleft()
            callback()

    def _blocked_locked(self) -> bool:
        """Whether callbacks are due and every runner is stuck in one."""
        now = time.monotonic()
        return (bool(self._due) and not self._idle and not self._starting
                and all(now - since >= STALL_SECONDS for since in self._busy_since.values()))

    def _watch(self) -> None:
        while True:
            time.sleep(STALL_SECONDS)
            with self._lock:
                if not self._due:
                    self._watching = False
                    return
                blocked = self._blocked_locked()
                if blocked:
                    self._starting += 1
            if blocked:
                self._start_runner()

    def _serve(self) -> None:
        me = threading.get_ident()
        with self._lock:
            self._starting -= 1
            while True:
                if not self._due:
                    self._idle += 1
                    woken = self._work_arrived.wait_for(lambda: bool(self._due), IDLE_SECONDS)
                    self._idle -= 1
                    if not woken:
                        return
                callback = self._due.popleft()
                self._busy_since[me] = time.monotonic()
                self._lock.release()
                try:
                    callback()
                finally:
                    self._lock.acquire()
                    del self._busy_since[me]


_runners = _Runners()


def run_soon(callback: Callable[[], None]) -> None:
    """Run ``callback()`` on a callback runner thread, soon.

    ``callback`` must not raise (Future._invoke_callbacks logs what a user
    callback raises, as concurrent.futures does)."""
    _runners.run_soon(callback)
