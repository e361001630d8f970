"""Messages between the pool and a worker process, over a pipe.

Both sides use this file: the pool imports it, and each worker process
loads it by path, so it imports only the standard library. A message is a
fixed header (an integer tag and the number of parts), the parts' lengths,
then the parts themselves, written with one ``os.writev`` where the pipe
allows: the pickled request and its out-of-band buffers cross without being
copied into one string first. Only the reading side of each pipe reads it,
through one Receiver.

A part of ``SHARED_THRESHOLD`` bytes or more (a large array, out of band)
does not go through the pipe: the sender writes it into a fresh memory file
(``memfd_create``), passes the file's descriptor over the worker's file
socket (``SCM_RIGHTS``), just before the message that uses it, and closes
its own. The receiver maps the file, and the mapping is all that is left
of it: the part arrives writable and aliases nothing the sender can still
change, at the cost of one copy instead of the four a pipe takes (into the
pipe, out of it, and pickle's two). The file has no name, so nothing is
left behind however either process ends: the kernel frees it with its last
descriptor or mapping. Small messages, most of them, never touch the
socket: a pipe wakes its reader sooner.
"""

from __future__ import annotations

import io
import mmap
import os
import pickle
import socket
import struct
from typing import Any

_HEADER = struct.Struct("<qI")  # tag (a call id, or a control code), number of parts
_LENGTH = struct.Struct("<Q")
#: Set in a part's length when the part crossed as a memory file.
_SHARED_FLAG = 1 << 63

#: Parts at least this large cross as memory files. Below it, the pipe is
#: cheaper than creating, filling and mapping a file.
SHARED_THRESHOLD = 1024 * 1024
#: The most descriptors one message passes (Linux's SCM_MAX_FD); a
#: message's further large parts go through the pipe.
_MAX_SHARED_PARTS = 253

#: The most buffers one writev() takes (Linux's IOV_MAX).
_MAX_IOV = 1024
#: What one read() asks for: a pipe's default capacity.
_BUFFER_SIZE = 64 * 1024


def file_sockets() -> tuple[socket.socket, socket.socket]:
    """The two ends of a worker's file socket: each side passes the memory
    files of the messages it sends on its own end. Datagrams keep each
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


def _memory_file(view: memoryview) -> int:
    """A fresh anonymous memory file holding ``view``'s bytes."""
    fd = os.memfd_create("interp-rpc-part", os.MFD_CLOEXEC)
    try:
        written = 0
        while written < view.nbytes:  # one write() moves at most about 2 GiB
            written += os.write(fd, view[written:])
    except BaseException:
        os.close(fd)
        raise
    return fd


def send(fd: int, files: socket.socket, tag: int, parts: list[Any]) -> None:
    """Write one message: ``tag`` and ``parts`` (bytes-like objects), its
    large parts' memory files passed on ``files`` first."""
    views = [_bytes_of(p) for p in parts]
    shared: list[int] = []
    try:
        lengths = []
        pending: list[memoryview] = []
        for view in views:
            if view.nbytes >= SHARED_THRESHOLD and len(shared) < _MAX_SHARED_PARTS:
                shared.append(_memory_file(view))
                lengths.append(view.nbytes | _SHARED_FLAG)
            else:
                lengths.append(view.nbytes)
                if view.nbytes:
                    pending.append(view)
        if shared:
            socket.send_fds(files, [b"F"], shared)
    finally:
        for file in shared:
            os.close(file)
    head = _HEADER.pack(tag, len(views)) + b"".join(_LENGTH.pack(n) for n in lengths)
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
    ones mapped from the memory files that ``files`` brings."""

    def __init__(self, fd: int, files: socket.socket) -> None:
        self._file = io.BufferedReader(io.FileIO(fd, "rb", closefd=False), _BUFFER_SIZE)
        self._files = files

    def _exactly(self, size: int) -> bytes:
        data = self._file.read(size)
        if len(data) < size:
            raise ChannelClosed()
        return data

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

    def _memory_files(self, count: int) -> list[int]:
        _, fds, flags, _ = socket.recv_fds(self._files, 1, count)
        if len(fds) != count or flags & socket.MSG_CTRUNC:
            for fd in fds:
                os.close(fd)
            raise ChannelClosed(f"a message's {count} memory files did not all arrive")
        return fds

    def receive(self) -> tuple[int, list[Any]]:
        """Read one message: its tag and its parts (a bytearray, or a
        writable memoryview for a shared part). Raises ChannelClosed at the end of
        the pipe."""
        tag, count = _HEADER.unpack(self._exactly(_HEADER.size))
        if count == 0:
            return tag, []
        lengths = struct.unpack(f"<{count}Q", self._exactly(_LENGTH.size * count))
        shared = sum(1 for n in lengths if n & _SHARED_FLAG)
        fds = self._memory_files(shared) if shared else []
        parts: list[Any] = []
        try:
            for length in lengths:
                if length & _SHARED_FLAG:
                    parts.append(_mapped(fds.pop(0), length & ~_SHARED_FLAG))
                else:
                    parts.append(self._part(length))
        finally:
            for fd in fds:  # a part failed: the files not mapped yet
                os.close(fd)
        return tag, parts


def _mapped(fd: int, size: int) -> memoryview:
    """Memory file ``fd``, mapped writable; the descriptor is closed."""
    try:
        return memoryview(mmap.mmap(fd, size, flags=mmap.MAP_SHARED,
                                    prot=mmap.PROT_READ | mmap.PROT_WRITE, trackfd=False))
    finally:
        os.close(fd)
