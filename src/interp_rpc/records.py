"""What a pool reports about itself: worker status, call records, totals."""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from interp_rpc._pool.engine import _core


@dataclass(frozen=True)
class WorkerStatus:
    """One worker, as the engine's status board saw it (read without any GIL)."""

    index: int
    state: str  # "starting", "idle", "busy", "dead" or "stopped"
    target: str | None  # the running call's target
    item_index: int | None  # the running map item (first of its chunk)
    busy_seconds: float  # how long the running call has taken so far
    calls_done: int
    busy_seconds_total: float
    detail: str | None  # why a dead worker died
    call_id: int | None = None  # the running call's id (CallRecord.id once it finished)

    def displayed_state(self, stuck_after: float) -> str:
        """``state`` as a person should read it: "debugging" for a worker in
        a post-mortem session, "stuck" for a busy worker whose call has run
        ``stuck_after`` seconds or longer. The engine's rules, which the
        local pool's live table applies too."""
        return _core.displayed_state(self.state, self.busy_seconds, stuck_after,
                                     self.target or "")


@dataclass(frozen=True)
class CallRecord:
    """One finished request (a call, or a chunk of a map), for profiling.

    Times are ``time.monotonic_ns()`` values; costs are in nanoseconds.
    ``seq`` is the record's position in the log (the order calls finished);
    ``id`` the call's, in the order calls were submitted.
    """

    seq: int
    id: int
    worker: int
    target: str
    item_index: int | None
    item_count: int
    outcome: str
    submitted_ns: int
    enqueued_ns: int
    started_ns: int
    finished_ns: int
    serialize_ns: int
    deserialize_ns: int
    result_serialize_ns: int


class EngineRecord(NamedTuple):
    """A call record as the engine hands it over: a plain tuple whose fields
    are in ``_core.RECORD_FIELDS`` order (cheap to build for a whole log).
    CallRecord is its public form; the profiler also reads ``reply_kind``."""

    seq: int
    id: int
    worker: int
    target: str
    item_index: int | None
    item_count: int
    outcome: str
    reply_kind: int
    submitted_ns: int
    enqueued_ns: int
    started_ns: int
    finished_ns: int
    serialize_ns: int
    deserialize_ns: int
    result_serialize_ns: int

    def public(self) -> CallRecord:
        return CallRecord(
            seq=self.seq, id=self.id, worker=self.worker, target=self.target,
            item_index=self.item_index, item_count=self.item_count, outcome=self.outcome,
            submitted_ns=self.submitted_ns, enqueued_ns=self.enqueued_ns,
            started_ns=self.started_ns, finished_ns=self.finished_ns,
            serialize_ns=self.serialize_ns, deserialize_ns=self.deserialize_ns,
            result_serialize_ns=self.result_serialize_ns)


@dataclass(frozen=True)
class PoolStats:
    """Totals since the pool started."""

    calls: int  # requests finished (a map chunk is one request)
    items: int  # items in them
    replied: int
    failed: int  # died, cancelled or broken
    queue_wait_seconds: float
    run_seconds: float
    serialize_seconds: float
    deserialize_seconds: float
    result_serialize_seconds: float
