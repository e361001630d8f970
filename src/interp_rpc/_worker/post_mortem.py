"""A worker's last failure, kept alive for post-mortem debugging, and the
pdb session that debugs it on its own frames.

A worker loads it by path beside main.py, on its first failure; it uses the
standard library only. The caller's side, interp_rpc/_pool/post_mortem.py,
imports it too, for the session's message kinds and outcomes.

What keeping costs: a kept exception holds its traceback, whose frames hold
every local variable of the failing call (and of the worker's own frames
above it, which hold the chunk's items), until the worker's next failure
replaces it, ``%parallel_debug --clear`` (clear_failures on the caller's
side) releases it, or the pool closes. One failure per worker, never more.
"""

from __future__ import annotations

import contextlib
import os

TYPE_CHECKING = False  # as in main.py: a worker starts without typing
if TYPE_CHECKING:
    from typing import Any

#: What a session's reader is handed in place of a command when the caller
#: ends the session (Ctrl-C): pdb reads it as end of input and quits.
END_OF_INPUT = None

#: What a session's messages to the caller start with (see debug()).
OUTPUT, READ, ENDED = "output", "read", "ended"

#: How a session ended (debug()'s result): it ran, or why it could not start.
DEBUGGED, NOTHING_KEPT, REPLACED, NOT_KEPT = "debugged", "nothing kept", "replaced", "not kept: "


class KeptFailure:
    """One failure: the exception (its traceback still alive), its number
    in this worker, and the target that raised it."""

    def __init__(self, exc: BaseException, number: int, target: str) -> None:
        self.exc = exc
        self.number = number
        self.target = target


_kept: KeptFailure | None = None
_count = 0
#: Why the last failure was not kept, when it was not (said by the session).
_not_kept: str | None = None

#: Why a failure whose call had views of the caller's memory is not kept.
BUFFERS_NOT_KEPT = (
    "its arguments included large buffers passed without copying (views of the caller's "
    "memory), which a worker may not keep after the call returns")


#: The largest pickled arguments of a failing call sent back to the caller,
#: to re-run it there; larger ones are left out. A map with errors="collect"
#: sends one per failing item, so this bounds what its failures add.
RERUN_LIMIT = 64 * 1024


def keep(exc: BaseException, target_spec: tuple[Any, ...], with_buffers: bool,
         call: tuple[tuple[Any, ...], dict[str, Any]] | None = None,
         frames_not_kept: str | None = None) -> dict[str, Any]:
    """Keep ``exc``, raised by the request for ``target_spec``, as this
    worker's last failure in place of the one before; what the caller needs
    to find it again: this process, this interpreter and the failure's
    number, and the failing ``call``'s arguments, pickled (when they are
    small), to re-run it in the caller. A call whose arguments were views of
    the caller's memory (``with_buffers``) is not kept, since its frames may
    hold such views, nor is any where no session reaches (``frames_not_kept``
    says why); either still replaces the one before, which is no longer the last."""
    global _kept, _count, _not_kept
    _count += 1
    found: dict[str, Any] = {**_here(), "failure": _count}
    if call is not None and not with_buffers:
        found["call"] = _pickled(call)
    if with_buffers or frames_not_kept is not None:
        _kept, _not_kept = None, BUFFERS_NOT_KEPT if with_buffers else frames_not_kept
        return {**found, "not_kept": _not_kept}
    _kept, _not_kept = KeptFailure(exc, _count, _target_name(target_spec)), None
    return found


def _pickled(call: tuple[tuple[Any, ...], dict[str, Any]]) -> bytes | None:
    """The call's arguments as the caller can load them, or None when they
    do not pickle (the target changed them) or are too large to send."""
    import pickle

    try:
        data = pickle.dumps(call, protocol=5)
    except Exception:
        return None
    return data if len(data) <= RERUN_LIMIT else None


def _target_name(spec: tuple[Any, ...]) -> str:
    if spec == ("path", "_interp_rpc_worker.run_cell"):
        return "%%parallel"
    if spec[0] == "path":
        return str(spec[1])
    if spec[0] in ("code", "partial"):  # sent by value: its name
        return str(spec[2])
    return "a bound method"


def clear() -> bool:
    """Release the kept failure (its frames and their locals); whether one was kept."""
    global _kept, _not_kept
    had = _kept is not None
    _kept = None
    _not_kept = None
    return had


def describe() -> dict[str, Any] | None:
    """What is kept, for the caller to name it: None when nothing is."""
    if _kept is None:
        return None
    exc = _kept.exc
    return {"failure": _kept.number, "target": _kept.target,
            "error": f"{type(exc).__name__}: {exc}"}


# This process and interpreter, as every failure's reply names them.
_where: dict[str, int] | None = None


def _here() -> dict[str, int]:
    global _where
    if _where is None:
        from concurrent import interpreters

        _where = {"pid": os.getpid(), "interpreter": int(interpreters.get_current().id)}
    return _where


class _QueueOutput:
    """pdb's stdout (and the worker's, during a session): text goes to the
    caller line by line, and whatever is pending when pdb waits for input
    (its prompt) goes before the request to read."""

    def __init__(self, queue: Any) -> None:
        self._queue = queue
        self._pending: list[str] = []

    def write(self, text: str) -> int:
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        self._pending.append(text)
        if "\n" in text:
            self.flush()
        return len(text)

    def flush(self) -> None:
        if self._pending:
            text = "".join(self._pending)
            self._pending.clear()
            self._queue.put((OUTPUT, text))

    def isatty(self) -> bool:
        return False

    def writable(self) -> bool:
        return True


class _QueueInput:
    """pdb's stdin: each line it reads is asked of the caller, who answers
    with what the person typed (or END_OF_INPUT)."""

    def __init__(self, commands: Any, output: _QueueOutput, queue: Any) -> None:
        self._commands = commands
        self._output = output
        self._queue = queue

    def readline(self) -> str:
        self._output.flush()
        self._queue.put((READ,))
        line = self._commands.get()
        if line is END_OF_INPUT:
            return ""
        return str(line) + "\n"

    def readable(self) -> bool:
        return True


def debug(expected: int | None, commands_id: int, output_id: int) -> str:
    """Run pdb's post-mortem on the kept failure, reading commands from the
    caller's queue ``commands_id`` and sending its output (and each request
    to read) into ``output_id``; ends with (ENDED, how) there.

    ``expected``: the failure number the caller wants (a RemoteError's);
    None takes whatever is kept. Returns how the session went: DEBUGGED, or
    why it could not start (NOTHING_KEPT, REPLACED, or NOT_KEPT and the
    reason)."""
    from concurrent import interpreters

    commands = interpreters.Queue(commands_id)
    queue = interpreters.Queue(output_id)
    how = DEBUGGED
    try:
        kept = _kept
        if kept is None:
            how = (NOT_KEPT + _not_kept if _not_kept is not None
                   and expected in (None, _count) else NOTHING_KEPT)
        elif expected is not None and kept.number != expected:
            how = REPLACED
        else:
            _session(kept, commands, queue)
    finally:
        queue.put((ENDED, how))
    return how


def _session(kept: KeptFailure, commands: Any, queue: Any) -> None:
    import pdb

    output = _QueueOutput(queue)
    reader = _QueueInput(commands, output, queue)
    # No ~/.pdbrc: a worker's session must behave the same wherever it runs,
    # and no SIGINT handler: only the main thread of the main interpreter may set one.
    debugger = pdb.Pdb(stdin=reader, stdout=output,  # type: ignore[arg-type]
                       nosigint=True, readrc=False)
    try:
        with contextlib.redirect_stdout(output), contextlib.redirect_stderr(output):
            debugger.reset()
            debugger.interaction(None, kept.exc)
    finally:
        output.flush()
