"""The event loop of each kernel subshell's thread.

As in ipykernel 7, each subshell runs its requests on an asyncio loop of its
own thread: a cell there may ``await`` (top-level await runs on that loop),
and ``asyncio.get_running_loop()`` works in it, while the main shell's loop
(``event_loop.KernelEventLoop``) goes on with the main shell's cell.

The C++ subshell thread calls ``run_cell`` for each execute request and
``call_on_loop`` for each comm request, holding the GIL.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable

from IPython.core.interactiveshell import ExecutionResult, InteractiveShell

from interp_rpc_kernel.event_loop import run_cell_on_loop


class _ThreadLoop(threading.local):
    loop: asyncio.AbstractEventLoop | None = None


_thread_loop = _ThreadLoop()


def _loop() -> asyncio.AbstractEventLoop:
    """The calling thread's loop, made on its first use and set as the
    thread's current loop."""
    loop = _thread_loop.loop
    if loop is None or loop.is_closed():
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        _thread_loop.loop = loop
    return loop


def run_cell(
    shell: InteractiveShell,
    code: str,
    *,
    store_history: bool,
    silent: bool,
    cell_id: str | None = None,
) -> ExecutionResult:
    """Runs a cell as a task of this thread's loop, to its end."""
    return _loop().run_until_complete(
        run_cell_on_loop(shell, code, store_history, silent, cell_id)
    )


def call_on_loop(function: Callable[[], object]) -> None:
    """Calls function inside this thread's running loop, and returns once it
    has returned."""

    async def call() -> None:
        function()

    _loop().run_until_complete(call())
