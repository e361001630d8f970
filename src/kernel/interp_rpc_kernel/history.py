"""IPython's history, with its database writes throttled.

IPython writes each cell's input to its sqlite database as the cell starts,
on its history saving thread. Each write commits, and a commit syncs the
file: about half a millisecond of CPU per cell here, which the cell waits
for on a machine with few cores. A burst of quick cells ("Run All", a client
that sends one request after another) paid it for every cell.

Here the first input after a quiet moment is written at once, as IPython
does, so that a cell that crashes the kernel still leaves its input in the
database. Inputs that follow within WRITE_INTERVAL_S are written together,
WRITE_INTERVAL_S after the previous write. IPython's own reads of the
database (%history, the kernel's history replies) and its end of session
write whatever is pending first, so they see every input.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from IPython.core.history import HistoryManager
from IPython.core.interactiveshell import InteractiveShell

# The longest an input waits for its write during a burst of cells.
WRITE_INTERVAL_S = 0.1


class WriteThrottle:
    """Asks for a write at once, or, within `interval` of the last one, once
    that interval has passed: one write for all that was asked meanwhile."""

    def __init__(
        self,
        ask: Callable[[], None],
        interval: float = WRITE_INTERVAL_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._ask = ask
        self._interval = interval
        self._clock = clock
        self._lock = threading.Lock()
        self._last_asked = -float("inf")
        self._due: threading.Timer | None = None

    def request(self) -> None:
        with self._lock:
            if self._due is not None:
                return  # the write already due takes this input too
            wait = self._last_asked + self._interval - self._clock()
            if wait > 0:
                self._due = threading.Timer(wait, self._ask_when_due)
                # A pending write must not keep the process alive: the end of
                # the session writes what is left.
                self._due.daemon = True
                self._due.start()
                return
            self._last_asked = self._clock()
        self._ask()

    def _ask_when_due(self) -> None:
        with self._lock:
            self._due = None
            self._last_asked = self._clock()
        self._ask()


class _ThrottledFlag:
    """What HistoryManager.store_inputs and store_output set to ask their
    thread for a write."""

    def __init__(self, throttle: WriteThrottle) -> None:
        self._throttle = throttle

    def set(self) -> None:
        self._throttle.request()


class KernelHistoryManager(HistoryManager):
    """IPython's HistoryManager, whose database writes are throttled."""

    def __init__(self, shell: InteractiveShell, **kwargs: Any) -> None:
        super().__init__(shell, **kwargs)
        self._throttled_flag = _ThrottledFlag(WriteThrottle(self._wake_saving_thread))

    @property
    def save_flag(self) -> _ThrottledFlag | None:  # type: ignore[override]
        # IPython's store methods set this flag (set() is all they call), its
        # thread waits on the thread's own: the throttle sits between them.
        if self.save_thread is None:
            return None
        return self._throttled_flag

    def _wake_saving_thread(self) -> None:
        # The thread of the moment: IPython stops it before a fork and starts
        # another after.
        thread = self.save_thread
        if thread is not None:
            thread.save_flag.set()
