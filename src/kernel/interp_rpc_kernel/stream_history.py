"""What each cell printed, recorded in the history (``%history -o``), with
cells running at once on several threads.

IPython records a cell's output (InteractiveShell._tee) by replacing
``sys.stdout.write`` and ``sys.stderr.write`` while the cell runs, and putting
back the write it found when the cell ends. With subshells, cells run at once
on several threads: a cell that starts while another runs finds the other's
replacement, and puts it back when it ends after it. Replacements then pile
up, one more each time cells overlap so: every later write goes through all
of them, is recorded in old cells' history, and once they are deeper than
the recursion limit, ``print`` raises RecursionError.

Here the kernel's two streams each get one recorder, installed once, never
replaced; a write is recorded for the cell running on the writing thread,
else (a thread that a cell started) for the latest cell that is running, as
IPython records any thread's writes during a cell.
"""

from __future__ import annotations

import itertools
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any, Literal

from IPython.core.history import HistoryOutput
from IPython.core.interactiveshell import InteractiveShell

Channel = Literal["stdout", "stderr"]

# The writes this module installed carry this attribute.
_MARK = "_interp_rpc_records_history"


class _Running(threading.local):
    """The execution counts of the cells running on this thread, innermost
    last (a cell may run another: get_ipython().run_cell)."""

    counts: list[int]

    def __init__(self) -> None:
        self.counts = []


_this_thread = _Running()
_lock = threading.Lock()
_order = itertools.count()
# Every running cell, by the order it started: its execution count.
_running: dict[int, int] = {}


def _count_for_this_write() -> int | None:
    if _this_thread.counts:
        return _this_thread.counts[-1]
    with _lock:
        return _running[max(_running)] if _running else None


def _record(shell: InteractiveShell, channel: Channel, count: int, data: str) -> None:
    """Adds ``data`` to cell ``count``'s recorded stream, as IPython does."""
    if shell.display_pub.is_publishing or shell.displayhook.is_active \
            or shell.showing_traceback:
        return  # recorded as display data, a result or an error instead
    manager = shell.history_manager
    if manager is None:
        return
    kind: Literal["out_stream", "err_stream"] = \
        "out_stream" if channel == "stdout" else "err_stream"
    outputs = manager.outputs[count]
    if not outputs or outputs[-1].output_type != kind:
        outputs.append(HistoryOutput(output_type=kind, bundle={"stream": []}))
    stream = outputs[-1].bundle["stream"]
    assert isinstance(stream, list)
    stream.append(data)


def _install(shell: InteractiveShell, stream: Any, channel: Channel) -> None:
    """Wraps the stream's write once; a later call finds the wrapper."""
    original: Callable[..., Any] = stream.write
    if getattr(original, _MARK, False):
        return

    def write(data: Any, *args: Any, **kwargs: Any) -> Any:
        result = original(data, *args, **kwargs)
        if data:
            count = _count_for_this_write()
            if count is not None:
                _record(shell, channel, count, data)
        return result

    setattr(write, _MARK, True)
    stream.write = write


@contextmanager
def _recording(shell: InteractiveShell, stream: Any, channel: Channel) -> Iterator[None]:
    _install(shell, stream, channel)
    count = shell.execution_count
    with _lock:
        order = next(_order)
        _running[order] = count
    _this_thread.counts.append(count)
    try:
        yield
    finally:
        _this_thread.counts.pop()
        with _lock:
            del _running[order]


def tee(shell: InteractiveShell, channel: Channel, stream_type: type,
        ipython_tee: Callable[[], AbstractContextManager[None]]) -> \
        AbstractContextManager[None]:
    """What the shell's _tee(channel) returns: the recorder for the kernel's
    own stream (a ``stream_type``), IPython's way for any other (a cell that
    redirected sys.stdout to a file of its own)."""
    stream = getattr(sys, channel)
    if isinstance(stream, stream_type):
        return _recording(shell, stream, channel)
    return ipython_tee()
