"""The numbers of one run, and their median and spread over several runs.

A number is addressed by a Key: (measure, case, contender, metric), e.g.
("latency", "W=2", "interp-rpc", "call_p50_us"). Where a contender has no
number, a Note says why: the metric does not apply to it ("n/a"), the
contender refused the input ("fails", e.g. it cannot pickle a memoryview), or
the harness itself broke ("error", which makes the run exit non-zero).

Besides the five measures, the "interference" keys hold how much CPU other
processes used while each contender was measured.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field
from typing import Any, Literal

Key = tuple[str, str, str, str]
NoteKind = Literal["n/a", "fails", "error"]

# Not a measure of the contenders: how much CPU others took while they ran.
INTERFERENCE = "interference"

UNITS = {
    "speedup": "x",
    "seconds": "s",
    "submit_p50_us": "us",
    "submit_p99_us": "us",
    "call_p50_us": "us",
    "call_p99_us": "us",
    "submit_samples": "calls",
    "call_samples": "calls",
    "items_per_s": "items/s",
    "items_per_s_chunksize1": "items/s",
    "items_per_s_maps": "maps",
    "items_per_s_chunksize1_maps": "maps",
    "ms": "ms",
    "others_cpu_pct": "%",
}


@dataclass(frozen=True)
class Note:
    kind: NoteKind
    reason: str


@dataclass
class Run:
    """Everything one run measured, in the order it was measured."""

    values: dict[Key, float] = field(default_factory=dict)
    notes: dict[Key, Note] = field(default_factory=dict)

    def put(self, key: Key, value: float) -> None:
        self.values[key] = value

    def note(self, key: Key, kind: NoteKind, reason: str) -> None:
        self.notes[key] = Note(kind, reason)


@dataclass(frozen=True)
class Summary:
    """One number over K runs."""

    median: float
    low: float
    high: float
    runs: tuple[float, ...]


@dataclass
class Results:
    """Every key's summary (when some run measured it) or note."""

    keys: list[Key]
    summaries: dict[Key, Summary]
    notes: dict[Key, Note]
    run_count: int

    def get(self, key: Key) -> Summary | None:
        return self.summaries.get(key)

    def median(self, key: Key) -> float | None:
        summary = self.summaries.get(key)
        return None if summary is None else summary.median

    def note(self, key: Key) -> Note | None:
        return self.notes.get(key)

    def errors(self) -> list[tuple[Key, str]]:
        return [(key, note.reason) for key, note in self.notes.items() if note.kind == "error"]

    def error_for(self, measure: str, contender: str) -> Note | None:
        """The error, in any case, of ``contender`` in ``measure``."""
        return next((note for (m, _, c, _), note in self.notes.items()
                     if note.kind == "error" and (m, c) == (measure, contender)), None)

    def records(self) -> list[dict[str, Any]]:
        """One flat JSON record per key."""
        out = []
        for key in self.keys:
            measure, case, contender, metric = key
            record: dict[str, Any] = {"measure": measure, "case": case,
                                      "contender": contender, "metric": metric,
                                      "unit": UNITS.get(metric, "")}
            summary = self.summaries.get(key)
            if summary is not None:
                record |= {"median": summary.median, "min": summary.low, "max": summary.high,
                           "runs": list(summary.runs)}
            note = self.notes.get(key)
            if note is not None:
                record[note.kind] = note.reason
            out.append(record)
        return out


def combine(runs: list[Run]) -> Results:
    """Median and min-max of each number over the runs that measured it.

    A note is kept only for a key no run measured, except errors, which are
    always kept: a number from another run does not excuse a broken one.
    """
    keys = list(dict.fromkeys(key for run in runs for key in (*run.values, *run.notes)))
    summaries: dict[Key, Summary] = {}
    notes: dict[Key, Note] = {}
    for key in keys:
        values = tuple(run.values[key] for run in runs if key in run.values)
        if values:
            summaries[key] = Summary(statistics.median(values), min(values), max(values), values)
        for run in runs:
            note = run.notes.get(key)
            if note is not None and (not values or note.kind == "error"):
                notes.setdefault(key, note)
    return Results(keys, summaries, notes, len(runs))


def percentile(sorted_values: list[float], fraction: float) -> float:
    """Nearest-rank percentile of already sorted values."""
    rank = max(1, math.ceil(fraction * len(sorted_values)))
    return sorted_values[rank - 1]
