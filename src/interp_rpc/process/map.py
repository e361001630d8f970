"""A map on a ProcessPool that stops at its timeout (``kill_on_timeout=True``).

Everything is the local pool's MapRun; only what a timeout does differs:
the chunks not started are withdrawn (as always) and the workers running
the others are killed and replaced, so no worker stays busy with a map its
caller gave up on.
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


class StoppingMapRun(MapRun):
    """A map whose timeout stops its running chunks."""

    process_pool: ProcessPool

    def _timeout_error(self, handle: EngineCall) -> CallTimeoutError:
        waited = cast("ProcessCallHandle", handle)
        engine = self.process_pool._engine
        for _, _, queued in self._pending:
            pending = cast("ProcessCallHandle", queued)
            if pending is not waited and not engine.cancel(pending):
                engine.stop_call(pending, STOPPED_MAP)
        assert self._spec.timeout is not None
        return self.process_pool._timed_out(waited, self._spec.timeout, completed=self._done,
                                            total=self.total)
