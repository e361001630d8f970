"""The stop flags of a ProcessPool's maps, in memory its workers map.

A map stops its running chunks before their next item by setting a byte
that the worker reads before every item (see _pool/map.py). A subinterpreter
reads the caller's own byte. A worker process reads the stop board: a page
of shared memory (an anonymous memory file, ``memfd_create``) that the pool
creates and every worker process maps when it starts, one byte per map.

A map takes a byte when it starts and gives it back when it goes. The bytes
given back longest ago are taken first, so that a chunk still running for a
map that is over (told to stop, or abandoned unread) goes on reading its own
byte for as long as can be. Were a byte taken sooner, nothing would be
lost: such a chunk's results are not wanted, and it would only run on, as
without a flag, or stop with the map that took the byte.
"""

from __future__ import annotations

import collections
import mmap
import os
import threading

#: How many maps can have a byte at once; a map beyond them runs without
#: one (its running chunks then finish rather than stop).
BOARD_BYTES = mmap.PAGESIZE
#: What /proc shows of the board (tests look for it).
BOARD_NAME = "interp-rpc-stop-board"


class StopBoard:
    """The pool's side: the board, and which of its bytes are free."""

    def __init__(self) -> None:
        self.fd = os.memfd_create(BOARD_NAME, os.MFD_CLOEXEC)
        try:
            os.ftruncate(self.fd, BOARD_BYTES)
            self._view = memoryview(mmap.mmap(self.fd, BOARD_BYTES, flags=mmap.MAP_SHARED,
                                              prot=mmap.PROT_READ | mmap.PROT_WRITE,
                                              trackfd=False))
        except BaseException:
            os.close(self.fd)
            raise
        self._lock = threading.Lock()
        self._free = collections.deque(range(BOARD_BYTES))

    def take(self) -> tuple[int, memoryview] | None:
        """A free byte, cleared: its index (what a chunk carries) and a view
        of it (what the map sets); None when every byte is taken."""
        with self._lock:
            if not self._free:
                return None
            index = self._free.popleft()
        flag = self._view[index:index + 1]
        flag[0] = 0
        return index, flag

    def give_back(self, index: int) -> None:
        """The map that took byte ``index`` is gone (from any thread)."""
        with self._lock:
            self._free.append(index)

    def free_bytes(self) -> int:
        """How many bytes no map holds (for tests)."""
        with self._lock:
            return len(self._free)

    def close(self) -> None:
        """No worker will map the board any more: close its descriptor. The
        mapping stays while a map's view of it does."""
        with self._lock:
            fd, self.fd = self.fd, -1
        if fd >= 0:
            os.close(fd)


def map_board(fd: int) -> memoryview:
    """A worker process's view of the board whose descriptor it was given
    (the descriptor is closed: the mapping keeps the memory)."""
    try:
        return memoryview(mmap.mmap(fd, BOARD_BYTES, flags=mmap.MAP_SHARED, prot=mmap.PROT_READ,
                                    trackfd=False))
    finally:
        os.close(fd)
