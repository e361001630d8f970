"""Shared memory between the pool and one worker process: segments written
again and again, not a fresh one for every large part.

Both sides use this file (a worker process loads it by path, so it imports
only the standard library), each with one ``SharedMemory`` per peer. A side
copies the large parts it sends into segments of its own: anonymous memory
files (``memfd_create``) that it keeps mapped. The first time a segment
crosses, its descriptor goes with the message (see framing.py) and the peer
maps it and keeps that mapping; later messages name the segment by its id.

Memory touched for the first time costs a page fault per page, which is
most of what copying into fresh memory costs; a segment used again has its
pages in place on both sides, so a large part costs one copy into memory
already touched.

A segment is lent to the receiver, not shared with the sender: the
receiver's part is a writable view that it owns (a ``_Loan``), and the
sender writes that segment again only once the loan and every array or
view made from it is gone. The receiver then says so in its next message
(``released``), and the sender may use the segment again. A sender keeps
``CACHED_BYTES`` of free segments at most; the ones freed longest ago are
closed, and the peer is told (``retired``) to drop its mapping too.

Nothing outlives the two processes: a segment has no name, and the kernel
frees it with its last descriptor or mapping, however the processes end.
"""

from __future__ import annotations

import collections
import mmap
import os
import threading

TYPE_CHECKING = False  # a worker process starts without typing (4 ms to import)
if TYPE_CHECKING:
    from typing import Any

#: The most bytes of free segments one side keeps for reuse, per peer.
CACHED_BYTES = 256 * 1024 * 1024
#: What /proc shows of a segment (tests look for it).
SEGMENT_NAME = "interp-rpc-part"
#: Segment sizes are rounded up to one of this many steps per power of two,
#: so that parts of nearly the same size fit the same segment.
_SIZE_STEPS = 8


def segment_size(nbytes: int) -> int:
    """The size of a new segment for a part of ``nbytes``: at most an
    eighth more, whole pages."""
    step = max(mmap.PAGESIZE, 1 << max(0, nbytes.bit_length() - _SIZE_STEPS.bit_length()))
    return max(step, -(-nbytes // step) * step)


class _Segment:
    """One of this side's segments, mapped writable."""

    __slots__ = ("id", "mapping", "size", "view")

    def __init__(self, segment_id: int, mapping: mmap.mmap) -> None:
        self.id = segment_id
        self.mapping = mapping
        self.size = len(mapping)
        self.view = memoryview(mapping)

    def close(self) -> None:
        """Unmap it; a view of it still alive keeps it mapped until it goes."""
        try:
            self.view.release()
            self.mapping.close()
        except BufferError:
            pass


class _Loan:
    """A part received in a peer's segment: its buffer is a writable view of
    the segment's first bytes. When the loan goes (with the last view or
    array made from it), the segment is reported released."""

    __slots__ = ("_released", "_segment_id", "_view")

    def __init__(self, view: memoryview, segment_id: int,
                 released: collections.deque[int]) -> None:
        self._view = view
        self._segment_id = segment_id
        self._released = released

    def __buffer__(self, flags: int) -> memoryview:
        return self._view

    def __release_buffer__(self, view: memoryview) -> None:
        pass

    def __del__(self) -> None:
        self._released.append(self._segment_id)  # deque.append: safe from any thread


class SharedMemory:
    """One side's segments with one peer: those it writes (its own), and the
    peer's that it maps. Thread-safe: one thread may send while another
    receives, and a loan may end in any thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._own: dict[int, _Segment] = {}
        self._free: dict[int, _Segment] = {}  # in the order they were freed
        self._free_bytes = 0
        self._last_id = 0
        self._peers: dict[int, mmap.mmap] = {}
        #: The peer's segments this side no longer uses, not yet told.
        self._released: collections.deque[int] = collections.deque()
        #: This side's segments closed, not yet told.
        self._retired: list[int] = []

    # ------------------------------------------------------------- sending

    def place(self, view: memoryview, *, may_create: bool) -> tuple[int, int | None] | None:
        """Copy ``view`` (bytes) into a free segment, or a new one when
        ``may_create`` (None if none fits and it may not). Returns the
        segment's id, and for a new segment the descriptor to pass to the
        peer (the caller closes it)."""
        nbytes = view.nbytes
        with self._lock:
            fitting = [s for s in self._free.values() if s.size >= nbytes]
            segment = min(fitting, key=lambda s: s.size) if fitting else None
            if segment is not None:
                del self._free[segment.id]
                self._free_bytes -= segment.size
        if segment is not None:
            segment.view[:nbytes] = view
            return segment.id, None
        if not may_create:
            return None
        segment, fd = self._create(segment_size(nbytes), view)
        return segment.id, fd

    def _create(self, size: int, view: memoryview) -> tuple[_Segment, int]:
        """A new segment holding ``view``. It is filled by write(), which
        puts fresh pages in place far faster than a first copy through a
        new mapping; the mapping is for the copies after."""
        fd = os.memfd_create(SEGMENT_NAME, os.MFD_CLOEXEC)
        try:
            os.ftruncate(fd, size)
            written = 0
            while written < view.nbytes:  # one write() moves at most about 2 GiB
                written += os.pwrite(fd, view[written:], written)
            mapping = mmap.mmap(fd, size, flags=mmap.MAP_SHARED,
                                prot=mmap.PROT_READ | mmap.PROT_WRITE, trackfd=False)
        except BaseException:
            os.close(fd)
            raise
        with self._lock:
            self._last_id += 1
            segment = _Segment(self._last_id, mapping)
            self._own[segment.id] = segment
        return segment, fd

    def notes(self) -> tuple[list[int], list[int]]:
        """What the next message tells the peer: its segments this side
        released, and this side's segments it closed."""
        released = []
        while self._released:
            released.append(self._released.popleft())
        if not self._retired:  # most messages: no lock to take
            return released, []
        with self._lock:
            retired, self._retired = self._retired, []
        return released, retired

    # ----------------------------------------------------------- receiving

    def take_notes(self, released: list[int], retired: list[int]) -> None:
        """The peer's notes: these segments of this side are free again, and
        these of the peer's are closed."""
        with self._lock:
            for segment_id in released:
                segment = self._own.get(segment_id)
                if segment is not None:
                    self._free[segment_id] = segment
                    self._free_bytes += segment.size
            while self._free_bytes > CACHED_BYTES:
                oldest = self._free.pop(next(iter(self._free)))
                self._free_bytes -= oldest.size
                del self._own[oldest.id]
                oldest.close()
                self._retired.append(oldest.id)
        for segment_id in retired:
            self._peers.pop(segment_id, None)

    def unknown(self, segment_ids: list[int]) -> list[int]:
        """Which of the peer's segments arrive with a descriptor: those not
        mapped yet, in order."""
        return [i for i in segment_ids if i not in self._peers]

    def adopt(self, segment_ids: list[int], fds: list[int]) -> None:
        """Map the peer's new segments; their descriptors are closed."""
        try:
            for segment_id, fd in zip(segment_ids, fds, strict=True):
                self._peers[segment_id] = mmap.mmap(
                    fd, 0, flags=mmap.MAP_SHARED, prot=mmap.PROT_READ | mmap.PROT_WRITE,
                    trackfd=False)
        finally:
            for fd in fds:
                os.close(fd)

    def lend(self, segment_id: int, nbytes: int) -> memoryview:
        """The part in the peer's segment: a writable view of its first
        ``nbytes``, this side's until it goes."""
        view = memoryview(self._peers[segment_id])[:nbytes]
        return memoryview(_Loan(view, segment_id, self._released))

    # --------------------------------------------------------------- close

    def close(self) -> None:
        """Close every segment of this side and drop the peer's mappings
        (a part still in use keeps its own mapping until it goes)."""
        with self._lock:
            own, self._own, self._free = list(self._own.values()), {}, {}
            self._free_bytes = 0
        for segment in own:
            segment.close()
        self._peers.clear()

    def segments(self) -> dict[str, Any]:
        """How many segments this side has, and maps (for tests)."""
        with self._lock:
            return {"own": len(self._own), "free": len(self._free), "peers": len(self._peers)}
