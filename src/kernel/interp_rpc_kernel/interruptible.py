"""The window in which an interrupt may reach the user's code.

IPython runs each top-level statement of a cell in its coroutine `run_code`;
the kernel replaces it with the wrapper below, whose window tells the
kernel's interrupter (src/kernel/interrupter.hpp) when a Ctrl-C may raise a
KeyboardInterrupt. Outside it, in IPython's bookkeeping between two
statements, an interrupt is kept and raised as the next window opens.

A module of the kernel's package: the debugger hides this package's frames,
so that the Call Stack starts at the cell, as ipykernel's does.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any

RunCode = Callable[..., Coroutine[Any, Any, bool]]


def interruptible(run_code: RunCode, open_window: Callable[[], None],
                  close_window: Callable[[], None]) -> RunCode:
    # open_window() raises the KeyboardInterrupt kept for this statement. It
    # is inside the try, which closes the window: IPython reports that
    # interrupt after this returns, and an interrupt in an open window would
    # stop the report and be reported as a second error. The report shows
    # the lines around open_window(), hence the comment there.
    async def run_interruptible_code(code_obj: Any, result: Any = None, *,
                                     async_: bool = False) -> bool:
        try:
            # Interrupted between two statements of the cell:
            open_window()
            return await run_code(code_obj, result, async_=async_)
        finally:
            close_window()

    return run_interruptible_code
