"""The Future that ProcessPool.submit() returns: the local pool's, with its
done-callbacks kept off the threads that read the workers' replies."""

from __future__ import annotations

from interp_rpc._pool import callbacks
from interp_rpc._pool.futures import CallFuture
from interp_rpc.process.engine import on_reader_thread


class ProcessCallFuture(CallFuture):
    """A submitted call's future. A reader thread settles it when nobody
    waits on it; a callback run there could stall that worker's replies or
    deadlock a close() it calls, so callbacks due there run elsewhere."""

    def _invoke_callbacks(self) -> None:
        invoke = super()._invoke_callbacks
        if on_reader_thread():
            callbacks.run_soon(invoke)
        else:
            invoke()
