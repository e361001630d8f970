"""The program's own exit status, for the rare exit that must skip finalization.

When a worker is still stuck in a call at interpreter exit, interp-rpc has to
end the process with os._exit (see exit_policy), and CPython keeps the exit
status it was about to use in a C variable. It is read here without touching
``sys.exit``: a ``sys.monitoring`` tool watches for the exception that unwinds
the outermost frame of the main thread. That exception (SystemExit from
``sys.exit(n)``, ``raise SystemExit(n)`` or ``exit(n)``, KeyboardInterrupt,
or any uncaught error) is what CPython turns into the exit status.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from types import CodeType, FrameType
from typing import Any, NoReturn

_TOOL_NAME = "interp-rpc exit status"
_lock = threading.Lock()
_watching = False
_outermost: CodeType | None = None
_ending: BaseException | None = None  # what unwound the outermost frame


def watch() -> None:
    """Start watching how the program ends (idempotent)."""
    global _watching
    with _lock:
        if _watching:
            return
        _watching = True
        _watch_outermost_frame()


def _main_thread_outermost_frame() -> FrameType | None:
    if threading.current_thread() is threading.main_thread():
        frame: FrameType | None = sys._getframe()
    else:
        frame = sys._current_frames().get(threading.main_thread().ident or 0)
    while frame is not None and frame.f_back is not None:
        frame = frame.f_back
    return frame


def _on_unwind(code: CodeType, offset: int, exc: BaseException) -> object:
    global _ending
    if code is _outermost:
        _ending = exc
    return None


def _watch_outermost_frame() -> None:
    """Record the exception that leaves the main thread's outermost frame.

    PY_UNWIND cannot be set on one code object (CPython 3.14 refuses it as
    a local event), so the callback runs whenever an exception unwinds a
    frame, and returns at once for any other code: a cost on exceptions
    that propagate, nothing on the normal path. Without a free
    sys.monitoring tool id, the status falls back to ``sys.last_exc``
    (uncaught errors only; SystemExit then reads as 0)."""
    global _outermost
    frame = _main_thread_outermost_frame()
    if frame is None:
        return
    monitoring = sys.monitoring
    free = [tool for tool in (4, 3) if monitoring.get_tool(tool) is None]
    if not free:
        return
    tool = free[0]
    monitoring.use_tool_id(tool, _TOOL_NAME)
    monitoring.register_callback(tool, monitoring.events.PY_UNWIND, _on_unwind)
    _outermost = frame.f_code
    monitoring.set_events(tool, monitoring.get_events(tool) | monitoring.events.PY_UNWIND)


def _uncaught(exc: BaseException) -> bool:
    """Whether ``exc`` ended the main script: its traceback starts in the
    __main__ module's top-level code (not, say, in IPython's cell runner)."""
    tb = exc.__traceback__
    main = sys.modules.get("__main__")
    return (tb is not None and tb.tb_frame.f_code.co_name == "<module>"
            and main is not None and tb.tb_frame.f_globals is vars(main))


def _system_exit_code(code: object) -> int:
    """What CPython makes of SystemExit(code). (CPython has already printed
    a non-integer code, before the exit routine ran.)"""
    if code is None:
        return 0
    if isinstance(code, int) and not isinstance(code, bool):
        return code & 0xFF
    if isinstance(code, bool):
        return int(code)
    return 1


def program_exit_code() -> int:
    """The exit code the program is ending with (-1: by KeyboardInterrupt)."""
    ending: BaseException | None = _ending
    if ending is None:
        last: Any = getattr(sys, "last_exc", None)
        if isinstance(last, BaseException) and _uncaught(last):
            ending = last
    if ending is None:
        return 0
    if isinstance(ending, SystemExit):
        return _system_exit_code(ending.code)
    if isinstance(ending, KeyboardInterrupt):
        return -1
    return 1


def end_process(code: int) -> NoReturn:
    """Flush what the program wrote, then end the process without finalization."""
    logging = sys.modules.get("logging")
    if logging is not None:
        logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):  # a closed or broken stream must not stop the exit
            stream.flush()
    if code == -1:  # as CPython does after an uncaught KeyboardInterrupt
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    os._exit(code)
