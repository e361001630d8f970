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
    async def run_interruptible_code(code_obj: Any, result: Any = None, *,
                                     async_: bool = False) -> bool:
        try:
            # Inside the try: a KeyboardInterrupt raised as the window opens
            # must still close it, or IPython's report of it would run in an
            # open window, where the next interrupt reports a second error.
            # The interrupt stopped the cell between two statements.
            open_window()
            return await run_code(code_obj, result, async_=async_)
        finally:
            close_window()

    return run_interruptible_code
