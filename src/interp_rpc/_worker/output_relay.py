"""What a worker's targets print, relayed to the caller as it is printed.

Loaded by main.py beside it (never imported as part of the interp_rpc
package), by the first request whose output goes to a notebook cell; it uses
the standard library only. The caller's side is interp_rpc/notebook/relay.py.
"""

from __future__ import annotations

import functools
import sys

TYPE_CHECKING = False  # as in main.py: a worker starts without typing
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any


class RelayedStream:
    """A worker's sys.stdout or sys.stderr while its output goes to the
    caller: text is sent line by line, labelled with the item printing it."""

    def __init__(self, relay: OutputRelay, name: str) -> None:
        self._relay = relay
        self.name = name
        self._pending: list[str] = []
        self._size = 0

    def write(self, text: str) -> int:
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        self._pending.append(text)
        self._size += len(text)
        if "\n" in text or self._size >= RELAY_LINE_LIMIT:
            self.flush()
        return len(text)

    def flush(self) -> None:
        if self._pending:
            text = "".join(self._pending)
            self._pending.clear()
            self._size = 0
            self._relay.send(self.name, text)

    def isatty(self) -> bool:
        return False

    def writable(self) -> bool:
        return True


#: A relayed stream sends what it holds once it has this many characters,
#: even without a newline.
RELAY_LINE_LIMIT = 8192


#: How a worker process sends relayed output to its pool: (queue id, item
#: or None, stream name, text). A subinterpreter has none: it puts its
#: output into the caller's queue itself.
type Transport = Callable[[int, int | None, str, str], None]


class OutputRelay:
    """What the targets of one chunk print goes, as it is printed, into the
    caller's cross-interpreter queue ``queue_id`` as (interpreter id, item or
    None, stream name, text); the caller shows it in the notebook cell. In a
    worker process, ``transport`` carries it to the pool, which puts it there
    labelled with the worker's index."""

    def __init__(self, queue_id: int, transport: Transport | None = None) -> None:
        if transport is None:
            from concurrent import interpreters

            queue = interpreters.Queue(queue_id)
            interpreter = interpreters.get_current().id

            def put(item: int | None, name: str, text: str) -> None:
                queue.put((interpreter, item, name, text))

            self._put = put
        else:
            self._put = functools.partial(transport, queue_id)
        self.item: int | None = None
        self.streams = (RelayedStream(self, "stdout"), RelayedStream(self, "stderr"))
        self._saved: tuple[Any, Any] | None = None

    def send(self, name: str, text: str) -> None:
        self._put(self.item, name, text)

    def at_item(self, index: int) -> None:
        self.flush()
        self.item = index

    def flush(self) -> None:
        for stream in self.streams:
            stream.flush()

    def tees(self, kept: tuple[Any, Any]) -> tuple[Tee, Tee]:
        """stdout and stderr that write both to ``kept`` and to the caller."""
        return Tee(kept[0], self.streams[0]), Tee(kept[1], self.streams[1])

    def __enter__(self) -> OutputRelay:
        self._saved = sys.stdout, sys.stderr
        sys.stdout, sys.stderr = self.streams
        return self

    def __exit__(self, *exc_info: object) -> None:
        try:
            self.flush()
        finally:
            assert self._saved is not None
            sys.stdout, sys.stderr = self._saved


class Tee:
    """Writes to a StringIO and to a relayed stream: a %%parallel cell's
    output is both streamed as it is printed and returned at the end."""

    def __init__(self, kept: Any, relayed: RelayedStream) -> None:
        self._kept = kept
        self._relayed = relayed

    def write(self, text: str) -> int:
        self._kept.write(text)
        return self._relayed.write(text)

    def flush(self) -> None:
        self._relayed.flush()

    def isatty(self) -> bool:
        return False

    def writable(self) -> bool:
        return True
