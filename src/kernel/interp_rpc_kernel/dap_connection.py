"""A connection that carries Debug Adapter Protocol messages: JSON bodies,
each after a `Content-Length: N` header and a blank line, over a stream
socket (the kernel's connection to debugpy's adapter)."""

from __future__ import annotations

import json
import select
import socket
import time
from typing import Any

Message = dict[str, Any]

_HEADER_END = b"\r\n\r\n"
_LENGTH_FIELD = b"content-length:"
#: A header longer than this is no DAP header.
_MAX_HEADER = 1024


class DapConnectionClosed(ConnectionError):
    """The other side closed the connection."""


class DapProtocolError(ConnectionError):
    """The other side sent something that is not a DAP message."""


class DapConnection:
    """One DAP connection. Not thread-safe: one thread reads and writes it."""

    def __init__(self, sock: socket.socket) -> None:
        self._socket = sock
        self._buffer = b""

    @classmethod
    def connect(cls, host: str, port: int, timeout: float) -> DapConnection:
        sock = socket.create_connection((host, port), timeout=timeout)
        sock.settimeout(None)
        return cls(sock)

    def fileno(self) -> int:
        return self._socket.fileno()

    def close(self) -> None:
        self._socket.close()

    def send(self, message: Message) -> None:
        body = json.dumps(message, ensure_ascii=False, allow_nan=False).encode("utf-8")
        self._socket.sendall(b"Content-Length: %d\r\n\r\n" % len(body) + body)

    def receive(self, timeout: float | None) -> Message | None:
        """The next message; None if none came within ``timeout`` seconds
        (None: wait as long as it takes)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            message = self._take_message()
            if message is not None:
                return message
            remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
            readable, _, _ = select.select([self._socket], [], [], remaining)
            if not readable:
                return None
            chunk = self._socket.recv(65536)
            if not chunk:
                raise DapConnectionClosed("the debug adapter closed the connection")
            self._buffer += chunk

    def has_buffered_message(self) -> bool:
        """Whether a message is waiting in the buffer, so that select() on
        the socket would miss it."""
        end = self._buffer.find(_HEADER_END)
        if end < 0:
            return False
        return len(self._buffer) >= end + len(_HEADER_END) + self._content_length(end)

    def _content_length(self, header_end: int) -> int:
        for line in self._buffer[:header_end].split(b"\r\n"):
            if line.lower().startswith(_LENGTH_FIELD):
                try:
                    return int(line[len(_LENGTH_FIELD):].strip())
                except ValueError:
                    break
        raise DapProtocolError(
            f"a DAP header without a valid Content-Length: {self._buffer[:header_end]!r}"
        )

    def _take_message(self) -> Message | None:
        end = self._buffer.find(_HEADER_END)
        if end < 0:
            if len(self._buffer) > _MAX_HEADER:
                raise DapProtocolError(f"no DAP header in {self._buffer[:80]!r}...")
            return None
        start = end + len(_HEADER_END)
        stop = start + self._content_length(end)
        if len(self._buffer) < stop:
            return None
        body, self._buffer = self._buffer[start:stop], self._buffer[stop:]
        message = json.loads(body)
        if not isinstance(message, dict):
            raise DapProtocolError(f"a DAP message that is no object: {body[:80]!r}")
        return message
