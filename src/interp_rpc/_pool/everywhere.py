"""A call run once in each of several workers: what a notebook cell that
defines things everywhere (%%parallel) needs, and the profiler's switch.

Both pools hand out a run with the same face: ``wait()`` for every worker's
outcome (its result, or the error it stands for), ``interrupt()`` on Ctrl-C,
which withdraws the calls that have not started and says which workers
finished, which still run it and which never will, and ``remember(label)``,
which keeps a successful run for workers that join the pool later (on a
local pool, none ever does).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from interp_rpc._pool import replies
from interp_rpc.errors import CallTimeoutError, InterpRpcError, PoolBrokenError, WorkerDiedError

if TYPE_CHECKING:
    from collections.abc import Collection

    from interp_rpc._pool.encoding import EncodedCall
    from interp_rpc._pool.engine_face import EngineCall
    from interp_rpc._pool.engine_pool import EnginePool

#: After Ctrl-C, how long to wait for the reply of a call that no worker runs
#: any more: it has just finished, and its reply is being handed over.
REPLY_GRACE_SECONDS = 5.0


@dataclass
class Interrupted:
    """Where a run stood when it was interrupted, by worker."""

    finished: dict[int, Any | BaseException] = field(default_factory=dict)
    running: list[int] = field(default_factory=list)  # it goes on there, to its end
    withdrawn: list[int] = field(default_factory=list)  # it never started there


class EverywhereRun:
    """A call, encoded once, sent to each of ``workers`` of a local pool;
    ``target`` is what was encoded, to name it; ``timeout`` is a deadline
    for all of them."""

    def __init__(self, pool: EnginePool[Any], encoded: EncodedCall, target: object,
                 timeout: float | None, workers: Collection[int]) -> None:
        self._pool = pool
        self._target = target
        self._name = encoded.name
        self._timeout = timeout
        self._deadline = None if timeout is None else time.monotonic() + timeout
        self._handles: dict[int, EngineCall] = {}
        self._outcomes: dict[int, Any | BaseException] = {}
        for index in workers:
            try:
                self._handles[index] = pool._submit(encoded, worker=index)
            except PoolBrokenError:  # the engine refuses a call pinned to a dead worker
                self._outcomes[index] = WorkerDiedError(self._name, f"worker {index} is dead")

    def wait(self) -> dict[int, Any | BaseException]:
        """Every worker's outcome, in worker order, once each has one; a
        worker still running it at the deadline counts as timed out."""
        for index, handle in self._handles.items():
            if index in self._outcomes:
                continue
            remaining = (None if self._deadline is None
                         else max(0.0, self._deadline - time.monotonic()))
            if handle.wait(remaining):
                self._outcomes[index] = self._settle(handle)
                continue
            assert self._timeout is not None
            busy, seconds = self._pool._busy_worker(handle.id)
            self._outcomes[index] = CallTimeoutError(self._name, self._timeout, worker=busy,
                                                     running_seconds=seconds)
        return dict(sorted(self._outcomes.items()))

    def interrupt(self) -> Interrupted:
        """Withdraw the calls that have not started; where it stood."""
        state = Interrupted()
        for index, handle in self._handles.items():
            if index in self._outcomes:
                continue
            if handle.wait(0):
                self._outcomes[index] = self._settle(handle)
            elif self._pool._engine.cancel(handle):
                state.withdrawn.append(index)
            elif (self._pool._busy_worker(handle.id)[0] is None
                  and handle.wait(REPLY_GRACE_SECONDS)):
                self._outcomes[index] = self._settle(handle)
            else:
                state.running.append(index)
        state.finished = dict(sorted(self._outcomes.items()))
        return state

    def remember(self, label: str) -> None:
        """Nothing to keep: a local pool's workers never join later."""

    def _settle(self, handle: EngineCall) -> Any | BaseException:
        handle.claim()
        handle.release()
        try:
            return replies.reply_value(handle.status, handle.reply_kind, handle.reply,
                                       handle.worker, self._target, (), {})
        except InterpRpcError as exc:
            return exc
