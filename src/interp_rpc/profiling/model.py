"""A profile of a pool's work: what ``pool.profile()`` gives back.

Plain data (one record per map item or call), with the summary numbers,
exports (Chrome Trace Event JSON, pstats) and the notebook rendering. It does
not hold the pool, so it can be kept, pickled and built from saved records.
"""

from __future__ import annotations

import io
import pstats
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

#: Outcomes of an item, as ItemRecord.outcome spells them.
OK = "ok"
FAILED = "failed"  # the target raised
CANCELLED = "cancelled"  # removed from the queue before it ran
TIMED_OUT = "timed out"  # running (or queued) when the caller stopped waiting for it
AFTER_TIMEOUT = "ran after timeout"  # its chunk's caller had given up: its result was dropped
WORKER_DIED = "worker died"
NOT_RUN = "not run"  # after a failed item of its chunk, or its pool broke
RUNNING = "running"  # still running when the profile ended
UNSHAREABLE = "unshareable result"

#: Outcomes drawn as a problem in every view.
PROBLEMS = (FAILED, CANCELLED, TIMED_OUT, WORKER_DIED, NOT_RUN, RUNNING, UNSHAREABLE)


@dataclass(frozen=True)
class ItemRecord:
    """One map item or one call. Times are ``time.monotonic_ns()`` values
    (``started_ns == 0``: it never ran); costs in nanoseconds.

    Items shorter than ``interp_rpc._worker.profiling.MIN_GROUP_NS`` are timed
    in groups: ``group`` items share the group's average time. A request whose
    items were not timed one by one (it timed out, or was sent before the
    profile began) is one record with ``count`` items.
    """

    call_id: int
    worker: int  # -1: never reached a worker
    target: str
    item: int | None  # position in its map; None for a call
    count: int
    outcome: str
    enqueued_ns: int
    started_ns: int
    finished_ns: int
    group: int  # items timed together with this one (1: timed alone)
    request_items: int  # items in its request (a map chunk)
    serialize_ns: int  # the request's: pickling it in the caller
    deserialize_ns: int  # unpickling it in the worker
    result_serialize_ns: int  # pickling the results in the worker
    request_started_ns: int  # when its worker took the request off the queue

    @property
    def ran(self) -> bool:
        return self.started_ns > 0 and self.finished_ns >= self.started_ns

    @property
    def run_ns(self) -> int:
        return self.finished_ns - self.started_ns if self.ran else 0

    @property
    def queue_wait_ns(self) -> int:
        """Enqueued to started: the request's wait in the queue plus the time
        its worker spent on earlier items of the same request."""
        return self.started_ns - self.enqueued_ns if self.ran and self.enqueued_ns else 0

    @property
    def label(self) -> str:
        if self.item is None:
            return self.target
        if self.count == 1:
            return f"{self.target} item {self.item}"
        return f"{self.target} items {self.item}-{self.item + self.count - 1}"


class _StatsData:
    """What pstats.Stats loads from: an object with create_stats() and stats."""

    def __init__(self, stats: dict[Any, Any]) -> None:
        self.stats = dict(stats)

    def create_stats(self) -> None:
        pass


@dataclass(eq=False)
class Profile:
    """What ran on the pool while ``pool.profile()`` was on.

    ``records`` has one ItemRecord per item (plain data); ``stats`` is the
    merged ``pstats.Stats`` of every worker when the profile was taken with
    ``functions=True``. In a notebook it shows as a timeline with a summary.
    """

    workers: int
    start_ns: int = 0
    end_ns: int = 0
    item_records: Sequence[ItemRecord] = ()
    functions: bool = False
    #: Per worker: pstats' dict of its function stats (functions=True).
    worker_stats: dict[int, dict[Any, Any]] = field(default_factory=dict)
    #: Records the engine's call log dropped before the profile read them.
    lost_records: int = 0
    item_timing_overhead_ns: int = 0  # estimated: reading the clock in workers
    function_overhead_ns: int = 0  # estimated: cProfile in workers
    notes: list[str] = field(default_factory=list)
    #: On a cluster: (process, first lane, lanes) of each process, whose
    #: lanes are its subinterpreters in order (empty: one local pool).
    lane_groups: list[tuple[str, int, int]] = field(default_factory=list)
    recording: bool = False
    #: Builds item_records when they are first read (a session's exit stays
    #: cheap: 20,000 records take tens of milliseconds to build).
    pending: Callable[[], list[ItemRecord]] | None = None

    def stop_recording(self, spans: list[tuple[int, int]], end_ns: int) -> None:
        """Ends the recording. The timeline spans the work, from the earliest
        start to the latest end of ``spans`` (each request's, in ns); with no
        work, it ends at ``end_ns``."""
        if spans:
            self.start_ns = min(start for start, _ in spans)
            self.end_ns = max(end for _, end in spans)
        else:
            self.end_ns = end_ns
        self.recording = False

    @property
    def records(self) -> Sequence[ItemRecord]:
        """One record per map item or call, in start order."""
        self._check_done()
        if self.pending is not None:
            self.item_records, self.pending = self.pending(), None
        return self.item_records

    # ----------------------------------------------------------------- data

    def _check_done(self) -> None:
        if self.recording:
            raise RuntimeError("the profile is still recording: read it after the with block")

    @property
    def stats(self) -> pstats.Stats | None:
        """Every worker's function stats merged (``pstats.Stats.add``), or
        None when no function was profiled."""
        self._check_done()
        per_worker = self.stats_per_worker()
        if not per_worker:
            return None
        first, *others = per_worker.values()
        merged = pstats.Stats(cast(Any, _StatsData(cast(Any, first).stats)))
        merged.add(*others)
        return merged

    def stats_listing(self, limit: int = 25, sort: str = "tottime") -> str:
        """The merged stats as pstats prints them (as %prun shows them)."""
        merged = self.stats
        if merged is None:
            return "No function stats: no worker ran a profiled call."
        out = io.StringIO()
        listing = pstats.Stats(cast(Any, _StatsData(cast(Any, merged).stats)), stream=out)
        listing.sort_stats(sort).print_stats(limit)
        return out.getvalue()

    def stats_per_worker(self) -> dict[int, pstats.Stats]:
        """Each worker's function stats (workers that ran nothing profiled are left out)."""
        return {worker: pstats.Stats(cast(Any, _StatsData(data)))
                for worker, data in sorted(self.worker_stats.items()) if data}

    def lane_labels(self) -> list[str]:
        """What each lane is called in the views."""
        labels = [f"worker {w}" for w in range(self.workers)]
        for process, first, lanes in self.lane_groups:
            for sub in range(lanes):
                if first + sub < self.workers:
                    labels[first + sub] = f"{first + sub}: {process} #{sub}"
        return labels

    def ran(self) -> list[ItemRecord]:
        return [r for r in self.records if r.ran]

    @property
    def items(self) -> int:
        return sum(r.count for r in self.records)

    @property
    def wall_ns(self) -> int:
        return max(0, self.end_ns - self.start_ns)

    def busy_ns(self) -> list[int]:
        """Per worker: time spent running items."""
        busy = [0] * self.workers
        for r in self.records:
            if r.ran and 0 <= r.worker < self.workers:
                busy[r.worker] += r.run_ns
        return busy

    @property
    def utilization(self) -> float:
        if self.wall_ns <= 0 or self.workers == 0:
            return 0.0
        return min(1.0, sum(self.busy_ns()) / (self.wall_ns * self.workers))

    def requests(self) -> list[ItemRecord]:
        """One record per request (the first of each), for request-level costs."""
        seen: dict[int, ItemRecord] = {}
        for r in self.records:
            seen.setdefault(r.call_id, r)
        return list(seen.values())

    def slowest(self, n: int = 5) -> list[ItemRecord]:
        return sorted(self.ran(), key=lambda r: r.run_ns / r.count, reverse=True)[:n]

    def outcomes(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for r in self.records:
            counts[r.outcome] = counts.get(r.outcome, 0) + r.count
        return counts

    @property
    def overhead_ns(self) -> int:
        return self.item_timing_overhead_ns + self.function_overhead_ns

    def warnings(self) -> list[str]:
        """What the views must say because the data is incomplete."""
        self._check_done()
        out = []
        if self.lost_records:
            out.append(f"{self.lost_records:,} request record(s) were lost: the engine's call "
                       "log wrapped before the profile read it, so some work is missing here")
        return out + list(self.notes)

    def summary(self) -> list[tuple[str, str]]:
        """(label, value) rows: what the notebook table and the text show."""
        self._check_done()
        requests = self.requests()
        ran = [r for r in requests if r.ran]
        waits = [r.request_started_ns - r.enqueued_ns for r in ran if r.enqueued_ns]
        serialize = sum(r.serialize_ns + r.deserialize_ns + r.result_serialize_ns for r in ran)
        busy = self.busy_ns()
        outcomes = ", ".join(f"{n:,} {o}" for o, n in sorted(self.outcomes().items()))
        overhead = (f"≈ {_ms(self.overhead_ns)} estimated ({_share(self.overhead_ns, sum(busy))}"
                    f" of busy time): item timing {_ms(self.item_timing_overhead_ns)}")
        if self.functions:
            overhead += f", function profiler {_ms(self.function_overhead_ns)}"
        rows = [
            ("items / requests", f"{self.items:,} / {len(requests):,} ({outcomes or 'none'})"),
            ("wall time", _ms(self.wall_ns)),
            ("utilization", f"{self.utilization:.0%} of {self.workers} workers"),
            ("busy per worker", ", ".join(_ms(b) for b in busy)),
            ("queue wait", f"total {_ms(sum(waits))}, max {_ms(max(waits, default=0))}"),
            ("serialization", f"{_ms(serialize)} ({_share(serialize, serialize + sum(busy))} "
                              "of busy + serialization: requests and results, both sides)"),
            ("profiling overhead", overhead),
        ]
        return rows + [("warning", w) for w in self.warnings()]

    def text(self) -> str:
        lines = [f"{k:20} {v}" for k, v in self.summary()]
        lines.append("slowest items:")
        lines += [f"  {_ms(r.run_ns // r.count):>10}  worker {r.worker}  {r.label}"
                  for r in self.slowest()]
        return "\n".join(lines)

    def __repr__(self) -> str:
        if self.recording:
            return f"<Profile of {self.workers} workers, recording>"
        return (f"<Profile: {self.items:,} items on {self.workers} workers, "
                f"{_ms(self.wall_ns)}, {self.utilization:.0%} utilization>")

    # -------------------------------------------------------------- outputs

    def export(self, path: str | Path) -> Path:
        """Write the profile: ``.json`` as Chrome Trace Event JSON (Perfetto,
        chrome://tracing), ``.pstats`` or ``.prof`` as the merged function
        stats (snakeviz, ``pstats.Stats(path)``)."""
        self._check_done()
        path = Path(path)
        suffix = path.suffix.lower()
        if suffix == ".json":
            from interp_rpc.profiling import trace as _profile_trace

            _profile_trace.write(self, path)
        elif suffix in (".pstats", ".prof"):
            stats = self.stats
            if stats is None:
                raise ValueError(f"cannot write {path}: this profile has no function stats; "
                                 "take it with pool.profile(functions=True)")
            stats.dump_stats(path)
        else:
            raise ValueError(f"cannot export a profile to {str(path)!r}: use a .json path "
                             "(Chrome trace) or a .pstats/.prof path (function stats)")
        return path

    def _repr_mimebundle_(self, include: Iterable[str] | None = None,
                          exclude: Iterable[str] | None = None) -> dict[str, Any]:
        from interp_rpc.display import profile as _profile_html

        return dict(_profile_html.bundle(self))

    def _repr_html_(self) -> str:
        from interp_rpc.display import profile as _profile_html

        return str(_profile_html.html(self))


def _ms(ns: float) -> str:
    ms = ns / 1e6
    if ms >= 1000:
        return f"{ms / 1000:.2f} s"
    if ms >= 10:
        return f"{ms:.1f} ms"
    if ms >= 0.1:
        return f"{ms:.2f} ms"
    return f"{ns / 1e3:.1f} µs"


def _share(part: float, whole: float) -> str:
    return f"{part / whole:.1%}" if whole > 0 else "0%"
