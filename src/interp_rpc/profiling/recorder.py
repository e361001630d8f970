"""pool.profile(): record what the pool runs, item by item, into a Profile.

While a session is on, map chunks ask their worker for the end times of
their items (``profiling.ITEM_TIMES``), and with ``functions=True``
every worker runs its targets under cProfile and sends its stats back once,
when the session ends. The engine's call log gives the request-level times.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from typing import TYPE_CHECKING, Any

from interp_rpc._pool.engine import _core
from interp_rpc._worker import profiling, wire
from interp_rpc.errors import InterpRpcError
from interp_rpc.profiling import model
from interp_rpc.records import EngineRecord

if TYPE_CHECKING:
    from interp_rpc._pool.engine_face import EngineCall
    from interp_rpc._pool.engine_pool import EnginePool

#: The pinned call that turns a worker's function profiler on and off.
_PROFILE_FUNCTIONS = "_interp_rpc_worker.profile_functions"

#: How long starting or stopping the workers' function profilers may wait for
#: a worker still busy with an earlier call.
CONTROL_TIMEOUT = 30.0

#: The same wait when the profiled block ended with an error or Ctrl-C.
AFTER_ERROR_TIMEOUT = 1.0

_OUTCOMES = {"worker_died": model.WORKER_DIED, "cancelled": model.CANCELLED,
             "pool_broken": model.NOT_RUN}


def chunk_mode(mode: str, items: int, *, profiled: bool) -> str:
    """A chunk request's mode ("chunk" or "starchunk" as given): with item
    times while a profile is on (a chunk of one item needs none: its
    request's times are the item's)."""
    return mode + profiling.ITEM_TIMES if profiled and items > 1 else mode


class ProfileRecorder:
    """The pool's side: which sessions are on, and the item times of their chunks."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sessions: list[ProfileSession] = []
        self.functions_session: ProfileSession | None = None

    @property
    def on(self) -> bool:
        return bool(self._sessions)

    def chunk_mode(self, mode: str, items: int) -> str:
        """A chunk request's mode while this pool's sessions are as they are now."""
        return chunk_mode(mode, items, profiled=bool(self._sessions))

    def item_marks(self, call_id: int, marks: bytes | None, failed: int) -> None:
        """A map chunk's reply: its items' times (None: a chunk of one item,
        not timed), and which item failed (or -1)."""
        for session in self._sessions:
            session.marks[call_id] = (marks, failed)

    def gave_up(self, call_id: int) -> None:
        """The caller stopped waiting for this call (its timeout passed)."""
        now = time.monotonic_ns()
        for session in self._sessions:
            session.timed_out.setdefault(call_id, now)

    def abandoned(self, handle: EngineCall, first: int, count: int) -> None:
        """A map chunk whose reply the caller will not read (its map timed
        out or was closed) and that its worker may still run: the session
        reads its items' times from the reply, if it came by the end."""
        for session in self._sessions:
            session.abandoned.setdefault(handle.id, (handle, first, count))

    def add(self, session: ProfileSession) -> None:
        with self._lock:
            if session.functions:
                if self.functions_session is not None:
                    raise InterpRpcError("a function profile is already running on this pool: "
                                         "one pool.profile(functions=True) at a time")
                self.functions_session = session
            self._sessions = [*self._sessions, session]

    def remove(self, session: ProfileSession) -> None:
        with self._lock:
            self._sessions = [s for s in self._sessions if s is not session]
            if self.functions_session is session:
                self.functions_session = None


class ProfileSession:
    """The context manager ``pool.profile()`` returns; ``with`` gives the Profile."""

    def __init__(self, pool: EnginePool[Any], recorder: ProfileRecorder,
                 functions: bool) -> None:
        if not isinstance(functions, bool):
            raise TypeError(f"functions must be True or False, not {functions!r}")
        self._pool = pool
        self._recorder = recorder
        self.functions = functions
        #: Per map chunk: its items' times (None: not timed; read when the
        #: records are built), and its failed item or -1.
        self.marks: dict[int, tuple[bytes | None, int]] = {}
        #: Calls the caller gave up on: when (time.monotonic_ns()).
        self.timed_out: dict[int, int] = {}
        #: Map chunks whose replies the caller did not read: (handle, first item, items).
        self.abandoned: dict[int, tuple[EngineCall, int, int]] = {}
        self.profile = model.Profile(workers=pool.workers, functions=functions, recording=True)
        self._log_position = 0
        self._first_id = 0
        #: What the records are built from, once the session has ended.
        self.request_log: RequestLog | None = None

    def __enter__(self) -> model.Profile:
        self._recorder.add(self)
        try:
            if self.functions:
                self._control(True)
        except BaseException:
            self._recorder.remove(self)
            raise
        # The call log's seq counts every record ever added, as the totals'
        # call count does: this is the position of the last record now.
        self._log_position = self._pool.stats().calls
        self._first_id = int(self._pool._engine.last_call_id) + 1
        self.profile.start_ns = time.monotonic_ns()
        return self.profile

    def __exit__(self, *exc_info: object) -> None:
        end_ns = time.monotonic_ns()
        last_id = int(self._pool._engine.last_call_id)
        running = [w for w in self._pool.status()
                   if w.state == "busy" and w.call_id is not None
                   and self._first_id <= w.call_id <= last_id]
        self._recorder.remove(self)
        profile = self.profile
        if self.functions:
            # After an error or Ctrl-C, do not wait long on a worker still busy
            # with the abandoned work: its stats are then reported missing.
            wait = CONTROL_TIMEOUT if exc_info[0] is None else AFTER_ERROR_TIMEOUT
            for worker, outcome in enumerate(self._control(False, wait)):
                if isinstance(outcome, BaseException):
                    profile.notes.append(f"worker {worker}'s function stats are missing: "
                                         f"{outcome}")
                elif outcome is not None:
                    profile.worker_stats[worker] = outcome["stats"]
                    profile.function_overhead_ns += int(outcome["overhead_ns"])
        # The engine's records as they are: CallRecord leaves out the reply kind.
        logged = self._pool._engine.records(self._log_position)
        if logged and EngineRecord._make(logged[0]).seq > self._log_position + 1:
            profile.lost_records = EngineRecord._make(logged[0]).seq - self._log_position - 1
        mine = [record for r in logged
                if self._first_id <= (record := EngineRecord._make(r)).id <= last_id]
        self._read_abandoned()
        running_now = [self._running(w.call_id, w.index, w.target or "?", w.item_index,
                                     end_ns - int(w.busy_seconds * 1e9), end_ns)
                       for w in running if w.call_id is not None]
        self.request_log = RequestLog(mine, self.marks, self.timed_out, running_now)
        profile.pending = self.request_log.item_records
        groups = sum(profiling.group_count(m) for r in mine
                     if (m := self.marks.get(r.id, (None, -1))[0]) is not None)
        profile.item_timing_overhead_ns = int(groups * clock_read_ns())
        spans = self.request_log.spans()
        profile.stop_recording(spans, end_ns)

    def _read_abandoned(self) -> None:
        """The item times of abandoned chunks that finished: their replies
        carry them, as a read chunk's do."""
        for call_id, (handle, _, _) in self.abandoned.items():
            if call_id in self.marks or not handle.done:
                continue
            if handle.status != _core.STATUS_REPLIED or handle.reply_kind != wire.RETURNED:
                continue
            try:
                reply = wire.loads(handle.reply)
            except Exception as exc:  # results this process cannot load: times unknown
                self.profile.notes.append(f"request {call_id}'s item times are unknown: its "
                                          f"reply could not be loaded here ({exc})")
                continue
            self.marks[call_id] = (reply[3] if len(reply) == 4 else None, reply[1])

    def _running(self, call_id: int, worker: int, target: str, item: int | None, start: int,
                 end: int) -> model.ItemRecord:
        """A call still running when the profile ended: one record (a map
        chunk's items have no times of their own until its reply)."""
        count, outcome = 1, model.RUNNING
        if call_id in self.abandoned:
            _, item, count = self.abandoned[call_id]
        if call_id in self.timed_out:
            outcome = model.TIMED_OUT
            what = f"items {item}-{item + count - 1} show" if item is not None and count > 1 \
                else "it shows"
            self.profile.notes.append(
                f"request {call_id} ({target}) timed out and was still running when the "
                f"profile ended: {what} as one bar, without times of their own")
        return model.ItemRecord(call_id=call_id, worker=worker, target=target, item=item,
                                count=count, outcome=outcome, enqueued_ns=0, started_ns=start,
                                finished_ns=end, group=1, request_items=count, serialize_ns=0,
                                deserialize_ns=0, result_serialize_ns=0,
                                request_started_ns=start)

    def _control(self, on: bool, timeout: float = CONTROL_TIMEOUT) -> list[Any]:
        outcomes = list(self._pool.run_everywhere(_PROFILE_FUNCTIONS, (on,),
                                                  timeout=timeout).wait().values())
        if on:
            failed = [(i, o) for i, o in enumerate(outcomes) if isinstance(o, BaseException)]
            if failed:
                self._control(False, AFTER_ERROR_TIMEOUT)
                worker, error = failed[0]
                raise InterpRpcError(f"cannot start the function profiler in worker {worker}: "
                                     f"{error}")
        return outcomes


@dataclasses.dataclass(frozen=True)
class RequestLog:
    """What a profile's item records are built from, kept as it came: one
    engine record per request (a map chunk is one), each chunk's item times
    as the worker sent them, and the calls still running at the end.

    Building the records waits until they are read (20,000 of them take tens
    of milliseconds). Being small and plain (a few values per request, not
    per item), a RequestLog is also what a cluster's process sends its
    caller (interp_rpc.dask._profiling), which renumbers the requests and
    moves their times onto its own clock with ``shift_ns``.
    """

    requests: list[EngineRecord]
    #: Per map chunk: its items' times (None: not timed), and its failed item or -1.
    marks: dict[int, tuple[bytes | None, int]]
    #: Calls the caller gave up on: when, on this process's clock.
    timed_out: dict[int, int]
    running: list[model.ItemRecord]
    #: Added to every time of the records built (another host's clock).
    shift_ns: int = 0

    def spans(self) -> list[tuple[int, int]]:
        """Each request's span, from its pickling to its end (the profile's
        timeline spans them), ``shift_ns`` added."""
        shift = self.shift_ns
        spans = [((r.submitted_ns or r.started_ns) + shift, r.finished_ns + shift)
                 for r in self.requests if r.started_ns > 0]
        return spans + [(r.started_ns + shift, r.finished_ns + shift) for r in self.running]

    def item_records(self) -> list[model.ItemRecord]:
        """One record per map item or call, in start order."""
        records = [item for r in self.requests
                   for item in _items_of(r, self.marks.get(r.id), self.timed_out.get(r.id),
                                         self.shift_ns)]
        shift = self.shift_ns
        records += [dataclasses.replace(r, started_ns=r.started_ns + shift,
                                        finished_ns=r.finished_ns + shift,
                                        request_started_ns=r.request_started_ns + shift)
                    if shift else r for r in self.running]
        records.sort(key=lambda r: (r.started_ns or r.enqueued_ns, r.worker))
        return records


def _items_of(r: EngineRecord, marks: tuple[bytes | None, int] | None,
              gave_up_ns: int | None, shift_ns: int = 0) -> list[model.ItemRecord]:
    """The ItemRecords of one request, from the engine's record of it.
    ``gave_up_ns``: when the caller stopped waiting for it, if it did.
    ``shift_ns`` is added to the records' times (not to the inputs')."""
    first, count = r.item_index, r.item_count
    outcome = _OUTCOMES.get(r.outcome, model.OK)
    item_times, failed = marks if marks is not None else (None, -1)
    if outcome == model.OK:
        if gave_up_ns is not None and (item_times is None or r.item_index is None):
            outcome = model.TIMED_OUT
        elif failed >= 0 and count == 1:  # a chunk of one item, not timed: its item failed
            outcome = model.FAILED
        elif r.reply_kind == wire.RESULT_UNSHAREABLE:
            outcome = model.UNSHAREABLE
        elif r.reply_kind != wire.RETURNED:
            outcome = model.FAILED
    ran = r.started_ns > 0 and outcome not in (model.CANCELLED, model.NOT_RUN)

    def record(item: int | None, n: int, outcome: str, start: int, end: int,
               group: int) -> model.ItemRecord:
        return model.ItemRecord(
            call_id=r.id, worker=r.worker, target=r.target, item=item, count=n,
            outcome=outcome, enqueued_ns=r.enqueued_ns + shift_ns if r.enqueued_ns else 0,
            started_ns=start + shift_ns if start else 0,
            finished_ns=end + shift_ns if end else 0,
            group=group, request_items=count, serialize_ns=r.serialize_ns,
            deserialize_ns=r.deserialize_ns, result_serialize_ns=r.result_serialize_ns,
            request_started_ns=r.started_ns + shift_ns if r.started_ns else 0)

    if not ran:
        return [record(first, count, outcome, 0, 0, 1)]
    if first is None or item_times is None:
        return [record(first, count, outcome, r.started_ns, r.finished_ns, count)]
    spans = profiling.item_spans(item_times)
    groups = profiling.group_spans(item_times)

    def item_outcome(k: int) -> str:
        if k == failed:
            return model.FAILED
        if gave_up_ns is not None and outcome == model.OK:
            # The caller gave up while this item's group ran (which of a
            # group's items was running then is not known), or before it.
            start, end = groups[k]
            if start <= gave_up_ns < end:
                return model.TIMED_OUT
            if start >= gave_up_ns:
                return model.AFTER_TIMEOUT
        return outcome

    out = [record(first + k, 1, item_outcome(k), start, end, group)
           for k, (start, end, group) in enumerate(spans)]
    if len(spans) < count:  # the items after a failed one never ran
        out.append(record(first + len(spans), count - len(spans), model.NOT_RUN, 0, 0, 1))
    return out


_clock_cost: float | None = None


def clock_read_ns() -> float:
    """What reading the monotonic clock costs here (the best of a few tries):
    the estimate of item timing's overhead per group timed."""
    global _clock_cost
    if _clock_cost is None:
        best = float("inf")
        for _ in range(5):
            start = time.perf_counter_ns()
            for _ in range(200):
                time.monotonic_ns()
            best = min(best, (time.perf_counter_ns() - start) / 200)
        _clock_cost = best
    return _clock_cost
