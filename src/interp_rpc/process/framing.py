"""Messages between the pool and a worker process, over a pipe.

Both sides use this file: the pool imports it, and each worker process
loads it by path, so it imports only the standard library. A message is a
fixed header (an integer tag and the number of parts), the parts' lengths,
then the parts themselves, written with one ``os.writev`` where the pipe
allows: the pickled request and its out-of-band buffers cross without being
copied into one string first. Only the reading side of each pipe reads it,
through one Receiver.

A part of ``SHARED_THRESHOLD`` bytes or more (a large array, out of band)
does not go through the pipe: the sender copies it into one of its shared
memory segments (segments.py), and the message names the segment. A
segment that crosses for the first time has its descriptor passed over the
worker's file socket (``SCM_RIGHTS``), just before the message that uses
it. The receiver's part is a writable view of the segment that it owns:
the sender uses the segment again only once the receiver has let go of it.
A message also carries what its sender has to tell the peer about
segments: those it let go of, and those it closed. Small messages, most of
them, never touch the socket: a pipe wakes its reader sooner.
"""

from __future__ import annotations

import io
import os
import pickle
import socket
import struct

TYPE_CHECKING = False  # a worker process starts without typing (4 ms to import)
if TYPE_CHECKING:
    from typing import Any

    from interp_rpc.process.segments import SharedMemory

#: tag (a call id, or a control code), number of parts, of released and of
#: retired segments (see segments.py)
_HEADER = struct.Struct("<qIII")
_LENGTH = struct.Struct("<Q")
#: Set in a part's length when the part crossed in a shared segment.
_SHARED_FLAG = 1 << 63

#: Parts at least this large cross in shared segments. Below it, the pipe
#: is cheaper than a segment's bookkeeping.
SHARED_THRESHOLD = 1024 * 1024
#: The most descriptors one message passes (Linux's SCM_MAX_FD); a
#: message's further large parts that need a new segment go through the pipe.
_MAX_NEW_SEGMENTS = 253

#: The most buffers one writev() takes (Linux's IOV_MAX).
_MAX_IOV = 1024
#: What one read() asks for: a pipe's default capacity.
_BUFFER_SIZE = 64 * 1024


def file_sockets() -> tuple[socket.socket, socket.socket]:
    """The two ends of a worker's file socket: each side passes the
    descriptors of its new segments on its own end. Datagrams keep each
    message's descriptors apart."""
    return socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)


class ChannelClosed(EOFError):
    """The other end of the pipe is gone (its process ended)."""


def _bytes_of(part: Any) -> memoryview:
    """A part's bytes, in memory order, without a copy where it is
    contiguous: a Fortran-ordered array's buffer (which pickle hands out as
    it lies in memory) as much as a C-ordered one."""
    if isinstance(part, pickle.PickleBuffer):
        try:
            return part.raw()
        except BufferError:  # not contiguous: its items, in C order
            return memoryview(memoryview(part).tobytes())
    return memoryview(part).cast("B")


#: The layouts of one to four numbers, which nearly every message uses.
_NUMBERS = [struct.Struct(f"<{n}Q") for n in range(5)]


def _pack(values: list[int]) -> bytes:
    count = len(values)
    layout = _NUMBERS[count] if count < len(_NUMBERS) else struct.Struct(f"<{count}Q")
    return layout.pack(*values)


def send(fd: int, files: socket.socket, memory: SharedMemory, tag: int,
         parts: list[Any]) -> None:
    """Write one message: ``tag`` and ``parts`` (bytes-like objects), its
    large parts placed in ``memory``'s segments, the descriptors of new
    ones passed on ``files`` first."""
    views = [_bytes_of(p) for p in parts]
    new: list[int] = []
    try:
        lengths = []
        segment_ids = []
        pending: list[memoryview] = []
        for view in views:
            placed = None
            if view.nbytes >= SHARED_THRESHOLD:
                placed = memory.place(view, may_create=len(new) < _MAX_NEW_SEGMENTS)
            if placed is not None:
                segment_id, descriptor = placed
                segment_ids.append(segment_id)
                if descriptor is not None:
                    new.append(descriptor)
                lengths.append(view.nbytes | _SHARED_FLAG)
            else:
                lengths.append(view.nbytes)
                if view.nbytes:
                    pending.append(view)
        if new:
            socket.send_fds(files, [b"F"], new)
    finally:
        for descriptor in new:  # passed: the mappings keep the segments
            os.close(descriptor)
    released, retired = memory.notes()
    head = _HEADER.pack(tag, len(views), len(released), len(retired)) + _pack(lengths)
    if segment_ids or released or retired:  # most messages have none
        head += _pack(segment_ids) + _pack(released) + _pack(retired)
    pending.insert(0, memoryview(head))
    while pending:
        written = os.writev(fd, pending[:_MAX_IOV])
        while written:
            first = pending[0]
            if written >= first.nbytes:
                written -= first.nbytes
                pending.pop(0)
            else:
                pending[0] = first[written:]
                written = 0


class Receiver:
    """Reads messages from a pipe through a buffer, so that a small message
    (most replies, most requests) costs one read() system call, not one per
    field; larger parts are read straight into their own bytes, and shared
    ones lent from ``memory``'s mappings of the peer's segments, whose new
    descriptors ``files`` brings."""

    def __init__(self, fd: int, files: socket.socket, memory: SharedMemory) -> None:
        self._file = io.BufferedReader(io.FileIO(fd, "rb", closefd=False), _BUFFER_SIZE)
        self._files = files
        self._memory = memory

    def _exactly(self, size: int) -> bytes:
        data = self._file.read(size)
        if len(data) < size:
            raise ChannelClosed()
        return data

    def _numbers(self, count: int) -> tuple[int, ...]:
        if not count:
            return ()
        data = self._exactly(_LENGTH.size * count)
        return (_NUMBERS[count] if count < len(_NUMBERS) else struct.Struct(f"<{count}Q")
                ).unpack(data)

    def _part(self, size: int) -> bytearray:
        """A part, writable: an array the other side sent is its
        receiver's to change, however small."""
        part = bytearray(size)
        view = memoryview(part)
        have = 0
        while have < size:
            count = self._file.readinto(view[have:])
            if not count:
                raise ChannelClosed()
            have += count
        return part

    def _descriptors(self, count: int) -> list[int]:
        _, fds, flags, _ = socket.recv_fds(self._files, 1, count)
        if len(fds) != count or flags & socket.MSG_CTRUNC:
            for fd in fds:
                os.close(fd)
            raise ChannelClosed(f"a message's {count} new segments did not all arrive")
        return fds

    def receive(self) -> tuple[int, list[Any]]:
        """Read one message: its tag and its parts (a bytearray, or a
        writable memoryview for a shared part). Raises ChannelClosed at the end of
        the pipe."""
        tag, count, released, retired = _HEADER.unpack(self._exactly(_HEADER.size))
        lengths = self._numbers(count)
        # A flagged length is above every other: max() finds, in C, whether any is.
        in_segments = (sum(1 for n in lengths if n & _SHARED_FLAG)
                       if max(lengths, default=0) & _SHARED_FLAG else 0)
        segment_ids = list(self._numbers(in_segments))
        if released or retired:
            notes = self._numbers(released + retired)
            self._memory.take_notes(list(notes[:released]), list(notes[released:]))
        if segment_ids:
            new = self._memory.unknown(segment_ids)
            if new:
                self._memory.adopt(new, self._descriptors(len(new)))
        parts: list[Any] = []
        shared = iter(segment_ids)
        for length in lengths:
            if length & _SHARED_FLAG:
                parts.append(self._memory.lend(next(shared), length & ~_SHARED_FLAG))
            else:
                parts.append(self._part(length))
        return tag, parts
