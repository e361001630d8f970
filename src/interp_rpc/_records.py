"""What a pool reports about itself: worker status, call records, totals."""

from __future__ import annotations

from dataclasses import dataclass


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
