"""The program's own exit code, for the rare exit that must skip finalization.

When a worker is still stuck in a call at interpreter exit, interp-rpc has to
end the process with os._exit (see _exit_policy._close_open_pools_at_exit), and
CPython keeps the exit code it was about to use in a C variable. So the
status passed to sys.exit() is recorded on the way through (the wrapper then
calls the real sys.exit: behaviour is unchanged), and an uncaught exception
is recognized from sys.last_exc.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from typing import Any, NoReturn

_real_exit = sys.exit
_requested: list[str | int | None] = []


def _recording_exit(status: str | int | None = None, /) -> NoReturn:
    _requested.append(status)
    _real_exit(status)


def watch() -> None:
    """Start recording sys.exit() statuses (idempotent)."""
    if sys.exit is not _recording_exit:
        sys.exit = _recording_exit


def _uncaught(exc: BaseException) -> bool:
    """Whether ``exc`` ended the main script: its traceback starts in the
    __main__ module's top-level code (not, say, in IPython's cell runner)."""
    tb = exc.__traceback__
    main = sys.modules.get("__main__")
    return (tb is not None and tb.tb_frame.f_code.co_name == "<module>"
            and main is not None and tb.tb_frame.f_globals is vars(main))


def _status_code(status: object) -> int:
    """What CPython makes of sys.exit(status)."""
    if status is None:
        return 0
    if isinstance(status, int):
        return status & 0xFF
    print(status, file=sys.stderr)
    return 1


def program_exit_code() -> int:
    """The exit code the program is ending with (-1: by KeyboardInterrupt)."""
    last: Any = getattr(sys, "last_exc", None)
    if isinstance(last, BaseException) and _uncaught(last):
        return -1 if isinstance(last, KeyboardInterrupt) else 1
    if _requested:
        return _status_code(_requested[-1])
    return 0


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
