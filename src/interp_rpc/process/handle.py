"""One call of a ProcessPool, from submission to its reply.

It has the face of the engine's ``CallHandle`` (wait, claim, release, take,
status, reply...), so the pool contract's shared parts (map, futures,
run_everywhere, profiling) drive a process pool's calls as they drive a
local pool's.
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING, Any

from interp_rpc._pool.engine import _core

if TYPE_CHECKING:
    from interp_rpc.process.worker_process import WorkerProcess


class ProcessCallHandle:
    """A call: its request, then its outcome once a worker replied (or
    died, or the call was cancelled)."""

    __slots__ = ("_claimed", "_finished", "_latch", "_lock", "_signalled", "buffers", "data",
                 "deserialize_ns", "enqueued_ns", "finished_ns", "id", "item_count", "item_index",
                 "owner", "pinned", "read_by", "reply", "reply_kind", "result_serialize_ns",
                 "serialize_ns", "started_ns", "status", "submitted_ns", "target", "worker")

    def __init__(self, call_id: int, target: str, data: bytes, buffers: list[Any], *,
                 item_index: int, item_count: int, owner: object, submitted_ns: int,
                 serialize_ns: int, pinned: int) -> None:
        self.id = call_id
        self.target = target
        self.data: bytes | None = data
        self.buffers: list[Any] = buffers
        self.item_index = item_index
        self.item_count = item_count
        self.owner = owner  # a future to settle when nobody waits on the call
        self.pinned = pinned  # the worker it must run on, or -1
        # The worker process whose reply pipe its caller reads (engine.py).
        self.read_by: WorkerProcess | None = None
        self.submitted_ns = submitted_ns
        self.serialize_ns = serialize_ns
        self.enqueued_ns = time.monotonic_ns()
        self.started_ns = 0
        self.finished_ns = 0
        self.deserialize_ns = 0
        self.result_serialize_ns = 0
        self.status = -1
        self.reply_kind = 0
        self.reply = b""
        self.worker = -1
        # A lock held until the call ends, not a threading.Event: waking
        # the caller is most of what a tiny call costs, and a bare lock
        # wakes it with less work on both sides.
        self._latch = threading.Lock()
        self._latch.acquire()
        self._finished = False
        self._signalled = False
        self._lock = threading.Lock()
        self._claimed = False

    # ------------------------------------------------ the engine's handle face

    def wait(self, timeout: float | None = None) -> bool:
        if self._finished and self._signalled:
            return True
        if self._latch.acquire(timeout=-1 if timeout is None else max(0.0, timeout)):
            self._latch.release()  # for the next waiter: it stays open from now on
            return True
        return self._finished  # finished, its waiters not woken yet

    @property
    def done(self) -> bool:
        return self._finished

    def claim(self) -> bool:
        """True once, for the one party that settles this call."""
        with self._lock:
            if self._claimed:
                return False
            self._claimed = True
            return True

    def release(self) -> bool:
        self.owner = None
        return True

    def take(self) -> tuple[int, int, bytes, int]:
        """The outcome, handed over: the handle lets go of the reply, whose
        buffers may be mappings that the result alone should keep alive."""
        self.claim()
        self.release()
        reply, self.reply = self.reply, b""
        return self.status, self.reply_kind, reply, self.worker

    @property
    def timing(self) -> dict[str, int]:
        return {"submitted_ns": self.submitted_ns, "enqueued_ns": self.enqueued_ns,
                "started_ns": self.started_ns, "finished_ns": self.finished_ns,
                "serialize_ns": self.serialize_ns, "deserialize_ns": self.deserialize_ns,
                "result_serialize_ns": self.result_serialize_ns}

    # ------------------------------------------------------- the pool's side

    def finish(self, status: int, kind: int, reply: bytes, worker: int, *,
               signal: bool = True) -> bool:
        """Record the outcome, once; the request is let go. Returns whether
        an owner future is left for the caller of finish() to settle.
        ``signal=False``: the waiters are woken later, by signal(), when the
        thread that finished the call has nothing else to do first."""
        self.status, self.reply_kind, self.reply, self.worker = status, kind, reply, worker
        if not self.finished_ns:
            self.finished_ns = time.monotonic_ns()
        self.data, self.buffers = None, []
        self._finished = True
        if signal:
            self.signal()
        return self.owner is not None

    def signal(self) -> None:
        """Wake the waiters of a finished call (once)."""
        with self._lock:
            if self._signalled:
                return
            self._signalled = True
        self._latch.release()

    def settle_owner(self) -> None:
        """Settle the owner future, if nobody else claimed the call."""
        owner = self.owner
        if owner is not None and self.claim():
            owner._settle()  # type: ignore[attr-defined]  # a CallFuture
            self.release()

    @property
    def replied(self) -> bool:
        return self.status == _core.STATUS_REPLIED
