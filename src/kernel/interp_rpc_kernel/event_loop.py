"""The kernel's asyncio event loop, as ipykernel has one: cells run on it
(``asyncio.get_running_loop()`` and ``asyncio.ensure_future()`` work in a
plain cell, ``asyncio.run()`` fails as in any running loop), and it runs
while the kernel is idle, so that a task a cell started keeps going between
cells.

The C++ shell loop calls ``wait_while_idle`` with the descriptors that
signal a request, ``run_cell`` for each execute request and
``call_on_loop`` for each comm request, all on the main thread.
"""

from __future__ import annotations

import asyncio
import inspect
import sys
from collections.abc import Callable, Sequence
from types import TracebackType
from typing import Any

from IPython.core.async_helpers import _asyncio_runner
from IPython.core.interactiveshell import ExecutionResult, InteractiveShell

ExcInfo = tuple[type[BaseException], BaseException, TracebackType]


class KernelEventLoop:
    """The main thread's event loop, set as its current loop."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        asyncio.set_event_loop(self.loop)
        self.io_loop = KernelIOLoop(self.loop)

    def wait_while_idle(self, fds: Sequence[int]) -> None:
        """Runs the loop until one of ``fds`` is readable (or, rarely, a
        callback stops the loop: the caller then simply looks again)."""
        loop = self.loop
        woken: asyncio.Future[None] = loop.create_future()

        def wake() -> None:
            if not woken.done():
                woken.set_result(None)

        # Watched only while idle: the descriptors stay readable until the
        # request is read, and a cell awaiting on the loop would spin on them.
        for fd in fds:
            loop.add_reader(fd, wake)
        try:
            loop.run_until_complete(woken)
        except RuntimeError:
            # A task called loop.stop(): this wait ends early, and the next
            # one runs the loop again.
            pass
        finally:
            for fd in fds:
                loop.remove_reader(fd)

    def call_on_loop(self, function: Callable[[], object]) -> None:
        """Calls function inside the running loop (ipykernel handles every
        request there), and returns once it has returned."""

        async def call() -> None:
            function()

        self.loop.run_until_complete(call())

    def run_cell(
        self,
        shell: InteractiveShell,
        code: str,
        *,
        store_history: bool,
        silent: bool,
        cell_id: str | None = None,
    ) -> ExecutionResult:
        """Runs a cell as a task of the loop, and returns once it is over.

        An interrupt while the cell awaits raises KeyboardInterrupt in the
        loop (its select is what the signal wakes), outside the cell. As in
        ipykernel, the cell's task is then cancelled: the CancelledError
        raised at its ``await`` ends the cell there (its ``finally`` runs,
        IPython reports it), rather than leaving it suspended to resume in
        whatever runs the loop next.
        """
        task = self.loop.create_task(
            run_cell_on_loop(shell, code, store_history, silent, cell_id)
        )
        try:
            while True:
                try:
                    return self.loop.run_until_complete(task)
                except KeyboardInterrupt:
                    if task.done():
                        raise
                    task.cancel()
                except RuntimeError:
                    # Before the task is done, only a loop.stop() (the cell's,
                    # or a task's) ends run_until_complete this way: the cell
                    # goes on.
                    if task.done():
                        raise
        finally:
            debugger = sys.modules.get("interp_rpc_kernel.debugger")
            if debugger is not None:
                debugger.resume_threads_left_stopped()


async def run_cell_on_loop(
    shell: InteractiveShell,
    code: str,
    store_history: bool,
    silent: bool,
    cell_id: str | None,
) -> ExecutionResult:
    """ipykernel's way: a cell with top-level ``await`` is awaited here, on
    the running loop (IPython's run_cell would start a loop of its own, which
    asyncio refuses inside a running one); any other cell runs through
    run_cell, synchronously, inside this task."""
    preprocessing_exc_tuple: ExcInfo | None = None
    try:
        transformed_cell = shell.transform_cell(code)
    except Exception:
        transformed_cell = code
        preprocessing_exc_tuple = _exc_info()
    options: dict[str, Any] = {"store_history": store_history, "silent": silent}
    if cell_id is not None:
        options["cell_id"] = cell_id
    if shell.loop_runner is not _asyncio_runner or not shell.should_run_async(
        code,
        transformed_cell=transformed_cell,
        preprocessing_exc_tuple=preprocessing_exc_tuple,
    ):
        result: ExecutionResult = shell.run_cell(code, **options)
        return result
    result_or_none: ExecutionResult | None = None
    try:
        result_or_none = await shell.run_cell_async(
            code,
            transformed_cell=transformed_cell,
            preprocessing_exc_tuple=preprocessing_exc_tuple,
            **options,
        )
    finally:
        # What run_cell triggers around run_cell_async.
        shell.events.trigger("post_execute")
        if not silent:
            shell.events.trigger("post_run_cell", result_or_none)
    assert result_or_none is not None
    return result_or_none


def _exc_info() -> ExcInfo:
    kind, value, traceback = sys.exc_info()
    assert kind is not None and value is not None and traceback is not None
    return kind, value, traceback


class KernelIOLoop:
    """``get_ipython().kernel.io_loop``: what libraries use of ipykernel's
    (a tornado IOLoop on the main thread's asyncio loop), on this kernel's
    loop."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.asyncio_loop = loop

    def add_callback(self, callback: Callable[..., object], *args: Any, **kwargs: Any) -> None:
        """Any thread: calls ``callback(*args, **kwargs)`` on the loop soon;
        a coroutine it returns runs as a task, as tornado runs it."""
        self.asyncio_loop.call_soon_threadsafe(_call, callback, args, kwargs)

    spawn_callback = add_callback

    def call_later(
        self, delay: float, callback: Callable[..., object], *args: Any, **kwargs: Any
    ) -> asyncio.TimerHandle:
        """Main thread: calls it after ``delay`` seconds."""
        return self.asyncio_loop.call_later(delay, _call, callback, args, kwargs)

    def call_at(
        self, when: float, callback: Callable[..., object], *args: Any, **kwargs: Any
    ) -> asyncio.TimerHandle:
        """Main thread: calls it at ``when``, in the loop's ``time()``."""
        return self.asyncio_loop.call_at(when, _call, callback, args, kwargs)

    def remove_timeout(self, handle: asyncio.TimerHandle) -> None:
        handle.cancel()

    def time(self) -> float:
        return self.asyncio_loop.time()


# The tasks of coroutines that io_loop callbacks returned: the loop holds
# only weak references to tasks, and nothing else may hold these.
_callback_tasks: set[asyncio.Future[Any]] = set()


def _call(callback: Callable[..., object], args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    result = callback(*args, **kwargs)
    if inspect.isawaitable(result):
        task = asyncio.ensure_future(result)
        _callback_tasks.add(task)
        task.add_done_callback(_callback_tasks.discard)
