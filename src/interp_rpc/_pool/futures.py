"""The Future that submit() returns, settled from the engine's reply."""

from __future__ import annotations

import threading
from concurrent.futures import CancelledError, Future
from typing import TYPE_CHECKING, Any

from interp_rpc._pool import callbacks as _callbacks
from interp_rpc._pool import replies
from interp_rpc._pool.engine import _core

if TYPE_CHECKING:
    from interp_rpc._pool.engine_face import EngineCall
    from interp_rpc._pool.engine_pool import EnginePool


class CallFuture(Future[Any]):
    """A Future for a submitted call.

    ``result()`` waits on the engine directly, with the GIL released; the
    engine's completion thread settles the future for callbacks, waiters in
    ``concurrent.futures.wait`` and asyncio.
    """

    def __init__(self, pool: EnginePool[Any], target: object, args: tuple[Any, ...],
                 kwargs: dict[str, Any]) -> None:
        super().__init__()
        self._pool = pool  # alive while its calls may be
        self._target = target
        self._args = args
        self._kwargs = kwargs
        self._handle: EngineCall | None = None
        # The engine can finish the call, and its completion thread call
        # _settle(), before submit() has attached the handle: _settle() then
        # leaves the work to _attach().
        self._attach_lock = threading.Lock()
        self._settle_deferred = False

    def _attach(self, handle: EngineCall) -> None:
        with self._attach_lock:
            self._handle = handle
            deferred = self._settle_deferred
        if deferred:
            self._settle()

    def _settle(self) -> None:
        """Turn the reply into the future's outcome; the caller has claimed it."""
        with self._attach_lock:
            handle = self._handle
            if handle is None:
                self._settle_deferred = True
                return
        try:
            value = replies.reply_value(handle.status, handle.reply_kind, handle.reply,
                                         handle.worker, self._target, self._args, self._kwargs)
        except CancelledError:
            self._cancel_and_notify()
        except BaseException as exc:
            self.set_exception(exc)
        else:
            self.set_result(value)
        finally:
            self._args, self._kwargs = (), {}

    def _wait_and_settle(self, timeout: float | None) -> None:
        handle = self._handle
        if handle is None or self.done():
            return
        if not handle.wait(timeout):
            raise TimeoutError()
        if handle.claim():
            self._settle()
            handle.release()

    def result(self, timeout: float | None = None) -> Any:
        self._wait_and_settle(timeout)
        return super().result(timeout)

    def exception(self, timeout: float | None = None) -> BaseException | None:
        self._wait_and_settle(timeout)
        return super().exception(timeout)

    def _invoke_callbacks(self) -> None:
        # Future calls this once the outcome is set. The engine's completion
        # thread settles every future: a callback run there could stall all
        # of them, or deadlock a close() it calls, so they run elsewhere.
        invoke = super()._invoke_callbacks  # type: ignore[misc]  # private in typeshed
        if _core.on_completion_thread():
            _callbacks.run_soon(invoke)
        else:
            invoke()

    def cancel(self) -> bool:
        handle = self._handle
        if handle is None or self.done():
            return super().cancel()
        if not self._pool._engine.cancel(handle):
            return False  # already running: a call cannot be stopped
        if handle.claim():
            self._cancel_and_notify()
            handle.release()
        return True

    def _cancel_and_notify(self) -> None:
        # The engine dropped the call: no executor will dequeue it later and
        # call set_running_or_notify_cancel(), as ThreadPoolExecutor's
        # workers do for a cancelled item. Without it, wait() and
        # as_completed() would never count this future as done.
        super().cancel()
        self.set_running_or_notify_cancel()
