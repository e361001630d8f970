"""bench/before_after.py's comparison: which numbers it keeps, and when it
calls a difference a change. Building and running an earlier commit takes
minutes, so these tests feed it records as bench/run.py writes them."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import before_after


def record(metric: str, unit: str, median: float, contender: str = "interp-rpc",
           case: str = "W=2", measure: str = "latency") -> dict[str, Any]:
    return {"measure": measure, "case": case, "contender": contender, "metric": metric,
            "unit": unit, "median": median, "min": median, "max": median, "runs": [median]}


def test_only_the_contenders_speed_numbers_are_compared() -> None:
    runs = [[record("call_p50_us", "us", 12.0),
             record("call_samples", "calls", 3000),
             record("call_p50_us", "us", 40.0, contender="ipe"),
             record("others_cpu_pct", "%", 3.0, measure="interference"),
             {"measure": "payload", "case": "16 MiB", "contender": "interp-rpc",
              "metric": "ms", "unit": "ms", "fails": "refused"}]]
    rows = before_after.numbers(runs, runs)
    assert [(row.label, row.before, row.after) for row in rows] == [
        ("latency, W=2: call_p50_us", [12.0], [12.0])]


def test_a_change_counts_only_where_the_ranges_do_not_overlap() -> None:
    before = [[record("call_p50_us", "us", v)] for v in (10.0, 11.0, 12.0)]
    overlapping = [[record("call_p50_us", "us", v)] for v in (11.5, 13.0, 14.0)]
    slower = [[record("call_p50_us", "us", v)] for v in (12.5, 13.0, 14.0)]
    faster = [[record("call_p50_us", "us", v)] for v in (7.0, 8.0, 9.5)]
    assert before_after.numbers(before, overlapping)[0].verdict() == "within the spread"
    assert before_after.numbers(before, slower)[0].verdict() == "**worse after**"
    assert before_after.numbers(before, faster)[0].verdict() == "better after"


@pytest.mark.parametrize("unit", ["x", "items/s"])
def test_more_is_better_for_speed_ups_and_rates(unit: str) -> None:
    before = [[record("m", unit, v)] for v in (1.0, 1.1)]
    higher = [[record("m", unit, v)] for v in (1.5, 1.6)]
    assert before_after.numbers(before, higher)[0].verdict() == "better after"
    assert before_after.numbers(higher, before)[0].verdict() == "**worse after**"


def test_a_number_one_side_lacks_is_said_so() -> None:
    rows = before_after.numbers([[record("a", "ms", 1.0)]], [[record("b", "ms", 1.0)]])
    assert [row.verdict() for row in rows] == ["not measured on both sides"] * 2
    text = before_after.report("HEAD~1", "0" * 40, "1" * 40, 1, False, rows)
    assert "| latency, W=2: a | ms | 1 | — | — | not measured on both sides |" in text


def test_the_report_gives_medians_ranges_and_the_ratio() -> None:
    before = [[record("call_p50_us", "us", v)] for v in (10.0, 12.0, 11.0)]
    after = [[record("call_p50_us", "us", v)] for v in (5.0, 5.5, 6.0)]
    text = before_after.report("v0", "a" * 40, "b" * 40, 3, False,
                               before_after.numbers(before, after))
    assert "before = v0 (aaaaaaaaaaaa)" in text
    assert ("| latency, W=2: call_p50_us | us | 11 (10 to 12) | 5.5 (5 to 6) | 0.50 "
            "| better after |") in text


def test_a_revision_that_is_not_a_commit_is_named() -> None:
    with pytest.raises(SystemExit, match="'no-such-rev' is not a commit here"):
        before_after.commit_of("no-such-rev")
