"""The markdown report: one table per measure, then the issues' targets.

With several runs each cell is "median (min-max)". Cells without a number say
why in a footnote under their table: n/a (does not apply), fails (the
contender refused the argument) or error (the harness broke: see stderr).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from harness.config import Config
from harness.contenders import ANYIO_KEY, Contender
from harness.measures import PAYLOAD_KINDS, payload_case, workers_case
from harness.results import INTERFERENCE, Key, Results, Summary

# Written as names: ruff (RUF001) flags the bare characters as look-alikes.
TIMES = "\N{MULTIPLICATION SIGN}"
DASH = "\N{EN DASH}"


def fmt(value: float) -> str:
    """Three significant digits, without exponents; thousands separated."""
    if abs(value) >= 100:
        return f"{value:,.0f}"
    return f"{value:.3g}" if abs(value) >= 0.001 else f"{value:.6f}"


class _Table:
    """A markdown table whose cells come from Results, collecting footnotes.

    A cell without a number shows why (n/a, fails or error); the footnotes
    give the reason once per contender and reason, with the cases it covers
    when the contender refused some inputs only.
    """

    def __init__(self, results: Results, header: list[str]) -> None:
        self._results = results
        self._lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        self._footnotes: dict[tuple[str, str, str], list[str]] = {}

    def cell(self, key: Key, suffix: str = "") -> str:
        summary = self._results.get(key)
        if summary is not None:
            return _with_spread(summary, suffix, self._results.run_count)
        measure, case, contender, _ = key
        note = self._results.note(key) or self._results.error_for(measure, contender)
        if note is None:
            return "—"
        cases = self._footnotes.setdefault((note.kind, contender, note.reason), [])
        if case not in cases:
            cases.append(case)
        return note.kind

    def row(self, cells: list[str]) -> None:
        self._lines.append("| " + " | ".join(cells) + " |")

    def render(self, title: str, caption: str) -> str:
        notes = [f"- {kind}, {contender}" + (f" ({', '.join(cases)})" if kind != "n/a" else "")
                 + f": {reason}" for (kind, contender, reason), cases in self._footnotes.items()]
        return "\n".join([f"### {title}", "", caption, "", *self._lines,
                          *(["", *notes] if notes else [])]) + "\n"


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}" + ("s" if count != 1 else "")


def _with_spread(summary: Summary, suffix: str, runs: int) -> str:
    text = fmt(summary.median) + suffix
    if runs > 1:
        text += f" ({fmt(summary.low)}{DASH}{fmt(summary.high)})"
    return text


def _anyio_note(contenders: list[Contender], note: str) -> str:
    """How anyio was driven, when it is in the table: it has no pool API."""
    return note if any(c.key == ANYIO_KEY for c in contenders) else ""


def _cpu_table(results: Results, cfg: Config, contenders: list[Contender]) -> str:
    cases = [workers_case(w) for w in cfg.cpu_workers]
    table = _Table(results, ["contender", *cases])
    rows = [c for c in contenders if c.key != "sequential"]
    table.row(["sequential (baseline)", *(
        table.cell(("cpu", case, "sequential", "seconds"), " s") for case in cases)])
    for contender in rows:
        table.row([contender.label, *(
            table.cell(("cpu", case, contender.key, "speedup"), TIMES) for case in cases)])
    return table.render(
        "1. CPU-bound speedup (higher is better)",
        f"Count the primes below {cfg.prime_limit:,}, W times over, one task per worker, on a "
        "warm pool. Speedup = sequential time of the W tasks / the contender's time, median "
        f"of {_plural(cfg.cpu_repeats, 'round')} per run, each round paired with a sequential "
        "one (the baseline row: the median of those).")


def _latency_table(results: Results, cfg: Config, contenders: list[Contender]) -> str:
    case = workers_case(cfg.workers)
    metrics = ["submit_p50_us", "submit_p99_us", "call_p50_us", "call_p99_us"]
    table = _Table(results, ["contender", "submit→result p50 (µs)", "p99 (µs)",
                             "call p50 (µs)", "p99 (µs)"])
    for contender in contenders:
        table.row([contender.label, *(
            table.cell(("latency", case, contender.key, metric)) for metric in metrics)])
    return table.render(
        "2. Tiny-call latency (lower is better)",
        f"`identity(i)` one call at a time on a warm pool of W={cfg.workers}: up to "
        f"{cfg.latency_calls:,} calls after {cfg.latency_warmup} warm-up calls."
        + _anyio_note(contenders, " anyio: `await run_sync(identity, i)` timed inside its "
                      "event loop, as async code calls it."))


def _map_table(results: Results, cfg: Config, contenders: list[Contender]) -> str:
    case = workers_case(cfg.workers)
    table = _Table(results, ["contender", "items/s, default chunking", "items/s, chunksize=1"])
    for contender in contenders:
        table.row([contender.label, *(table.cell(("map", case, contender.key, metric))
                                      for metric in ("items_per_s", "items_per_s_chunksize1"))])
    return table.render(
        "3. Tiny-task map throughput (higher is better)",
        f"{cfg.map_items:,} `identity` calls through each contender's own map on W={cfg.workers};"
        f" the median of up to {cfg.map_repeats} maps, fewer once {cfg.map_budget_s:g} s is spent"
        " (interp-rpc: `list(pool.map(...))`, lazy like Executor.map; executors: "
        "`list(ex.map(...))`; mp.Pool: `pool.map`)."
        + _anyio_note(contenders, " anyio has no map: a task group of W tasks, sharing a "
                      "`CapacityLimiter(W)`, awaits one `run_sync` per item (one task per item "
                      "would make anyio create an interpreter per item)."))


def _payload_table(results: Results, cfg: Config, contenders: list[Contender]) -> str:
    rows = [c for c in contenders if c.key != "sequential"]
    table = _Table(results, ["argument", *(c.short for c in rows)])
    for size in cfg.payload_sizes:
        for kind in PAYLOAD_KINDS:
            case = payload_case(kind, size)
            table.row([case, *(table.cell(("payload", case, c.key, "ms")) for c in rows)])
    return table.render(
        "4. Large-payload round trip, ms per call (lower is better)",
        f"`payload_len(arg)` returns `len(arg)`, so the payload crosses one way; "
        f"W={cfg.workers}, median of {_plural(cfg.payload_repeats, 'call')} after one warm-up "
        "call. The memoryview is a view of the bytes object."
        + _anyio_note(contenders, " anyio: one `run_sync` per call, sent from the caller's "
                      "thread through a blocking portal into its event loop."))


def _ready_table(results: Results, cfg: Config, contenders: list[Contender]) -> str:
    case = workers_case(cfg.workers)
    table = _Table(results, ["contender", "ms to first result"])
    for contender in contenders:
        if contender.key != "sequential":
            table.row([contender.label, table.cell(("ready", case, contender.key, "ms"))])
    return table.render(
        "5. Pool ready with init (lower is better)",
        f"Constructor with init `import json, decimal` (a callable initializer for executors) "
        f"+ first result, W={cfg.workers}, each in a fresh process; median of "
        f"{_plural(cfg.ready_repeats, 'start')}"
        + (" (ipyparallel: 1)" if any(c.slow for c in contenders) else "")
        + ". Executors start workers lazily, so their first result needs one ready worker; "
        "interp-rpc's constructor waits for all W.")


def _interference_table(results: Results, cfg: Config, contenders: list[Contender]) -> str:
    cases = [f"cpu {workers_case(w)}" for w in cfg.cpu_workers]
    cases.append(f"session {workers_case(cfg.workers)}")
    table = _Table(results, ["contender", *(f"during {c}" for c in cases)])
    for contender in contenders:
        if contender.key != "sequential":
            table.row([contender.label, *(
                table.cell((INTERFERENCE, case, contender.key, "others_cpu_pct"), "%")
                for case in cases)])
    return table.render(
        "Interference: other processes' CPU use (lower is quieter)",
        "CPU time other processes on this machine took while each contender was measured, as "
        "a percentage of all cores (\"session\": measures 2-4). Where it is high, that "
        "contender's numbers were taken on a busier machine than the others'.")


def tables(results: Results, cfg: Config, contenders: list[Contender]) -> str:
    parts = [_cpu_table, _latency_table, _map_table, _payload_table, _ready_table,
             _interference_table]
    return "\n".join(part(results, cfg, contenders) for part in parts)


# ------------------------------------------------------------------ targets

# The CPU speedup issue 10 asks for, per worker (on a quiet machine).
CPU_EFFICIENCY = 0.95


@dataclass(frozen=True)
class Target:
    measure: str
    target: str
    issue: int  # the issue that set it
    observed: str
    verdict: str  # "PASS", "MISS" or "n/a"


def _ratio(results: Results, name: str, goal: str, issue: int, ours: Key, theirs: Key,
           unit: str, passes: Callable[[float], bool]) -> Target:
    mine, peer = results.median(ours), results.median(theirs)
    if mine is None or peer is None:
        missing = ours if mine is None else theirs
        return Target(name, goal, issue,
                      f"{missing[2]} not measured ({missing[0]}, {missing[1]})", "n/a")
    ratio = mine / peer
    observed = f"{fmt(mine)} {unit} vs {fmt(peer)} {unit}: ratio {ratio:.3g}"
    return Target(name, goal, issue, observed, "PASS" if passes(ratio) else "MISS")


def _cpu_targets(results: Results, cfg: Config, contenders: list[Contender]) -> list[Target]:
    case = workers_case(cfg.workers)
    name = f"CPU speedup, {case}"
    least = CPU_EFFICIENCY * cfg.workers
    at_least = f"≥ {CPU_EFFICIENCY:g} {TIMES} workers = {least:.2f}{TIMES}"
    ours = results.median(("cpu", case, "interp-rpc", "speedup"))
    if ours is None:
        return [Target(name, at_least, 10, "not measured", "n/a"),
                Target(name, "≥ every peer", 4, "not measured", "n/a")]
    absolute = Target(name, at_least, 10, f"{ours:.2f}{TIMES}",
                      "PASS" if ours >= least else "MISS")
    peers = {c.short: results.median(("cpu", case, c.key, "speedup")) for c in contenders
             if c.key not in ("interp-rpc", "sequential")}
    measured = {name: value for name, value in peers.items() if value is not None}
    if not measured:
        return [absolute, Target(name, "≥ every peer", 4, "no peer measured", "n/a")]
    best = max(measured, key=lambda name: measured[name])
    relative = Target(name, "≥ every peer", 4,
                      f"{ours:.2f}{TIMES} vs best peer {best} {measured[best]:.2f}{TIMES}",
                      "PASS" if ours >= measured[best] else "MISS")
    return [absolute, relative]


def targets(results: Results, cfg: Config, contenders: list[Contender]) -> list[Target]:
    """Issues 10's targets, and those of issue 4 it did not replace, as ratios
    of this run's medians at W = cfg.workers."""
    case = workers_case(cfg.workers)
    ipe_submit = ("latency", case, "ipe", "submit_p50_us")
    our_map = ("map", case, "interp-rpc", "items_per_s")
    map_name = f"map of {cfg.map_items:,} tiny items"
    big = payload_case("bytes", 16 << 20)
    return [
        _ratio(results, "call p50", "≤ 1/20 of InterpreterPoolExecutor submit→result", 10,
               ("latency", case, "interp-rpc", "call_p50_us"), ipe_submit, "µs",
               lambda r: r <= 1 / 20),
        _ratio(results, "submit→result p50", "≤ 1/5 of InterpreterPoolExecutor", 4,
               ("latency", case, "interp-rpc", "submit_p50_us"), ipe_submit, "µs",
               lambda r: r <= 1 / 5),
        _ratio(results, map_name, "≥ multiprocessing.Pool.map, default chunking", 10,
               our_map, ("map", case, "mp-pool", "items_per_s"), "items/s", lambda r: r >= 1),
        _ratio(results, map_name, f"≥ 1000{TIMES} InterpreterPoolExecutor", 10,
               our_map, ("map", case, "ipe", "items_per_s"), "items/s", lambda r: r >= 1000),
        *_cpu_targets(results, cfg, contenders),
        _ratio(results, "16 MiB bytes argument", "≤ 1/10 of InterpreterPoolExecutor", 4,
               ("payload", big, "interp-rpc", "ms"), ("payload", big, "ipe", "ms"), "ms",
               lambda r: r <= 1 / 10),
        _ratio(results, "pool ready with init", "≤ InterpreterPoolExecutor", 10,
               ("ready", case, "interp-rpc", "ms"), ("ready", case, "ipe", "ms"), "ms",
               lambda r: r <= 1),
    ]


def target_rows(found: list[Target]) -> list[str]:
    """The lines of a table of targets, its header first (the dask section has one too)."""
    return ["| measure | target | issue | this run | verdict |", "|---|---|---|---|---|",
            *(f"| {t.measure} | {t.target} | {t.issue} | {t.observed} | **{t.verdict}** |"
              for t in found)]


def targets_table(found: list[Target], runs: int) -> str:
    basis = f"medians over {runs} runs" if runs > 1 else "one run"
    return "\n".join([
        "### Targets (issues 10 and 4)", "",
        f"interp-rpc against its peers on the same machine, as ratios of {basis}.", "",
        *target_rows(found)]) + "\n"


def targets_json(found: list[Target]) -> list[dict[str, Any]]:
    return [asdict(t) for t in found]
