"""A map on a ProcessPool: the local pool's MapRun, but for what its timeout
says and does.

Its CallTimeoutError says whether the calls were stopped, as a call's does
(ProcessPool._timed_out). With ``kill_on_timeout=True`` they are: the chunks
not started are withdrawn (as always) and the workers running the others
are killed and replaced, so no worker stays busy with a map its caller gave
up on.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from interp_rpc._pool.map import MapRun

if TYPE_CHECKING:
    from interp_rpc._pool.engine_face import EngineCall
    from interp_rpc.errors import CallTimeoutError
    from interp_rpc.process.handle import ProcessCallHandle
    from interp_rpc.process.pool import ProcessPool

#: What a map's running chunks are told when their workers are killed.
STOPPED_MAP = "its map ran past its timeout, so it was stopped"


class ProcessMapRun(MapRun):
    """A map whose timeout error says whether its calls were stopped."""

    @property
    def process_pool(self) -> ProcessPool:
        return cast("ProcessPool", self._pool)

    def _timeout_error(self, handle: EngineCall) -> CallTimeoutError:
        assert self._spec.timeout is not None
        return self.process_pool._timed_out(cast("ProcessCallHandle", handle),
                                            self._spec.timeout, completed=self._done,
                                            total=self.total)


class StoppingMapRun(ProcessMapRun):
    """A map whose timeout stops its running chunks."""

    def _timeout_error(self, handle: EngineCall) -> CallTimeoutError:
        engine = self.process_pool._engine
        for _, _, queued in self._pending:
            pending = cast("ProcessCallHandle", queued)
            if pending is not handle and not engine.cancel(pending):
                engine.stop_call(pending, STOPPED_MAP)
        return super()._timeout_error(handle)
