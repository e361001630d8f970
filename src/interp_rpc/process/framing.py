"""Messages between the pool and a worker process, over a pipe.

Both sides use this file: the pool imports it, and each worker process
loads it by path, so it imports only the standard library. A message is a
fixed header (an integer tag and the number of parts), the parts' lengths,
then the parts themselves, written with one ``os.writev`` where the pipe
allows: the pickled request and its out-of-band buffers cross without being
copied into one string first. Only the reading side of each pipe reads it,
through one Receiver.
"""

from __future__ import annotations

import os
import struct
from typing import Any

_HEADER = struct.Struct("<qI")  # tag (a call id, or a control code), number of parts
_LENGTH = struct.Struct("<Q")

#: The most buffers one writev() takes (Linux's IOV_MAX).
_MAX_IOV = 1024
#: What one read() asks for: a pipe's default capacity.
_BUFFER_SIZE = 64 * 1024


class ChannelClosed(EOFError):
    """The other end of the pipe is gone (its process ended)."""


def send(fd: int, tag: int, parts: list[Any]) -> None:
    """Write one message: ``tag`` and ``parts`` (bytes-like objects)."""
    views = [memoryview(p).cast("B") for p in parts]
    head = _HEADER.pack(tag, len(views)) + b"".join(_LENGTH.pack(v.nbytes) for v in views)
    pending: list[memoryview] = [memoryview(head), *views]
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
        while pending and pending[0].nbytes == 0:
            pending.pop(0)


class Receiver:
    """Reads messages from a pipe through a buffer, so that a small message
    (most replies, most requests) costs one read() system call, not one per
    field; larger parts are read straight into their own bytes."""

    def __init__(self, fd: int) -> None:
        self._file = open(fd, "rb", buffering=_BUFFER_SIZE, closefd=False)  # noqa: SIM115

    def _exactly(self, size: int) -> bytes:
        data = self._file.read(size)
        if len(data) < size:
            raise ChannelClosed()
        return data

    def receive(self) -> tuple[int, list[bytes]]:
        """Read one message: its tag and its parts. Raises ChannelClosed at
        the end of the pipe."""
        tag, count = _HEADER.unpack(self._exactly(_HEADER.size))
        if count == 0:
            return tag, []
        lengths = struct.unpack(f"<{count}Q", self._exactly(_LENGTH.size * count))
        return tag, [self._exactly(n) if n else b"" for n in lengths]
