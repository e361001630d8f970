"""Command line of bench/run.py: run the measures K times, then report.

Writes the markdown report to stdout (progress goes to stderr) and, next to
each other, PATH.json (every number and the machine facts), PATH.md (the
report) and PATH.svg (the chart), PATH being --out without its suffix.
The dask section (harness/dask_section.py) runs once, after the K runs.
Exits 1 when the harness itself failed somewhere (an "error" note, such as a
lost call, or a failed dask section), 3 when a contender or the dask section
hung (see measures.watchdog), else 0.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import os
import time
import traceback
from pathlib import Path
from typing import Any

from harness import chart, report
from harness.config import Config, default_workers, make_config
from harness.contenders import ALL_KEYS, DEFAULT_KEYS, START_METHOD, Contender, make_contender
from harness.machine import describe, machine_facts
from harness.measures import log, run_once, watchdog
from harness.results import INTERFERENCE, Results, combine

DEFAULT_OUT = Path(__file__).resolve().parents[1] / "results" / "latest.json"


def _parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="./dev bench", description="interp-rpc against its peers, side by side.")
    parser.add_argument("--quick", action="store_true",
                        help="a seconds-long version: small sizes, W=1..2, 1 MiB payloads")
    parser.add_argument("--runs", type=int, default=1, metavar="K",
                        help="repeat everything K times; report median and min-max")
    parser.add_argument("--only", metavar="NAME[,NAME]",
                        help=f"contenders to run, among {', '.join(ALL_KEYS)}")
    parser.add_argument("--with-ipyparallel", action="store_true",
                        help="add a local ipyparallel cluster to the default contenders")
    parser.add_argument("--workers", type=int, default=default_workers(), metavar="W",
                        help="W for latency, map, payload and ready, and the dask section's "
                             "processes (default: %(default)s)")
    parser.add_argument("--no-dask", dest="dask", action="store_false",
                        help="skip the dask section (ClusterPool against dask, issue 13), "
                             "which runs after the contenders, whatever --only, "
                             "when distributed is installed")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, metavar="PATH",
                        help="the JSON file; the .md and .svg go next to it "
                             "(default: bench/results/latest.json)")
    args = parser.parse_args(argv)
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    if args.workers < 1:
        parser.error("--workers must be at least 1")
    args.contenders = _contender_keys(parser, args.only, args.with_ipyparallel)
    return args


def _contender_keys(parser: argparse.ArgumentParser, only: str | None,
                    with_ipyparallel: bool) -> tuple[str, ...]:
    if only is None:
        return (*DEFAULT_KEYS, "ipyparallel") if with_ipyparallel else DEFAULT_KEYS
    names = [name.strip() for name in only.split(",") if name.strip()]
    unknown = [name for name in names if name not in ALL_KEYS]
    if unknown or not names:
        parser.error(f"--only takes names among {', '.join(ALL_KEYS)}; not {only!r}")
    return tuple(key for key in ALL_KEYS if key in names)  # the usual order


def _start_contenders(cfg: Config) -> tuple[list[Contender], dict[str, str]]:
    """The contenders that start, and why any did not (only ipyparallel may fail)."""
    most = max(*cfg.cpu_workers, cfg.workers)
    contenders, skipped = [], {}
    for key in cfg.contenders:
        contender = make_contender(key, most)
        if key == "ipyparallel":
            log("starting a local ipyparallel cluster")
            try:
                with watchdog("starting ipyparallel", cfg.hang_timeout_s):
                    contender.open(most, cfg.call_timeout_s).close()
            except Exception as exc:
                # Best effort: whatever part of the cluster did start must go,
                # but failing to stop it must not hide why it did not start.
                with contextlib.suppress(Exception):
                    contender.shutdown()
                skipped[key] = f"the local cluster did not start: {type(exc).__name__}: {exc}"
                log(f"ipyparallel SKIPPED: {skipped[key]}")
                continue
        contenders.append(contender)
    return contenders, skipped


def _others_cpu(results: Results) -> str:
    """The range of other processes' CPU use over every measured block."""
    shares = [s.median for key, s in results.summaries.items() if key[0] == INTERFERENCE]
    if not shares:
        return "not measured"
    return f"{min(shares):.0f}% to {max(shares):.0f}% of the machine (see Interference)"


def _dask(cfg: Config, skipped: dict[str, str]) -> tuple[dict[str, Any], str]:
    """The dask section's JSON and markdown (issue 13). Without distributed
    it is skipped, saying so; if it fails, the JSON and the markdown say why
    (an "error", as a measure's)."""
    if importlib.util.find_spec("distributed") is None:
        skipped["dask section"] = "distributed is not installed"
        log(f"dask section SKIPPED: {skipped['dask section']}")
        return {}, ""
    from harness import dask_section  # imports distributed and dask.bag: only when it runs

    try:
        with watchdog("the dask section", cfg.hang_timeout_s):
            section = dask_section.measure(dask_section.sizes(quick=cfg.quick,
                                                              processes=cfg.workers))
    except Exception as exc:
        log(f"ERROR in the dask section:\n{traceback.format_exc()}")
        return {"error": f"{type(exc).__name__}: {exc}"}, ""
    return section.as_json(), section.markdown()


def _header(cfg: Config, facts: dict[str, Any], skipped: dict[str, str],
            results: Results, dask_error: str | None) -> str:
    mode = "quick (not representative)" if cfg.quick else "full"
    lines = [
        "## interp-rpc benchmark", "",
        f"- Machine: {describe(facts)}",
        f"- Python build: {facts['python']['configure_summary']}; "
        f"free-threading build: {facts['python']['free_threading_build']}",
        f"- Other processes' CPU use while contenders were measured: {_others_cpu(results)}",
        f"- {mode}, {cfg.runs} run(s)"
        + (", each cell the median (min-max) over the runs" if cfg.runs > 1 else "")
        + f"; process pools use {START_METHOD}",
        *(f"- Skipped {key}: {reason}" for key, reason in skipped.items()),
        *(f"- **Harness error** in {measure} ({case}) for {contender}: {reason}"
          for (measure, case, contender, _), reason in results.errors()),
        *([f"- **Harness error** in the dask section: {dask_error}"] if dask_error else []),
    ]
    return "\n".join(lines) + "\n"


def _write_outputs(out: Path, document: dict[str, Any], markdown: str, svg: str) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    for path, text in ((out, json.dumps(document, indent=1) + "\n"),
                       (out.with_suffix(".md"), markdown),
                       (out.with_suffix(".svg"), svg)):
        temporary = path.with_name(path.name + ".tmp")
        temporary.write_text(text, encoding="utf-8")
        os.replace(temporary, path)  # never a half-written result file
    log(f"wrote {out}, {out.with_suffix('.md').name} and {out.with_suffix('.svg').name}")


def _document(cfg: Config, facts: dict[str, Any], contenders: list[Contender],
              skipped: dict[str, str], results: Results,
              found: list[report.Target], dask: dict[str, Any],
              seconds: float) -> dict[str, Any]:
    return {
        "schema": 1,
        "machine": facts,
        "config": cfg.as_json() | {"contenders": [c.key for c in contenders],
                                   "process_start_method": START_METHOD},
        "contenders": {c.key: c.label for c in contenders},
        "skipped": skipped,
        "results": results.records(),
        "targets": report.targets_json(found),
        **({"dask": dask} if dask else {}),
        "wall_seconds": round(seconds, 1),
    }


def main(argv: list[str]) -> int:
    args = _parse_args(argv)
    cfg = make_config(quick=args.quick, runs=args.runs, contenders=args.contenders,
                      workers=args.workers)
    started = time.monotonic()
    facts = machine_facts()
    contenders, skipped = _start_contenders(cfg)
    runs = []
    try:
        for index in range(cfg.runs):
            log(f"run {index + 1} of {cfg.runs}")
            runs.append(run_once(cfg, contenders))
    finally:
        for contender in contenders:
            contender.shutdown()
    dask, dask_markdown = _dask(cfg, skipped) if args.dask else ({}, "")
    facts["loadavg_at_end"] = [round(x, 2) for x in os.getloadavg()]
    results = combine(runs)
    found = report.targets(results, cfg, contenders)
    markdown = "\n".join([_header(cfg, facts, skipped, results, dask.get("error")),
                          report.tables(results, cfg, contenders),
                          report.targets_table(found, cfg.runs),
                          *([dask_markdown] if dask_markdown else [])])
    print(markdown, flush=True)
    svg = chart.render(results, cfg, contenders, describe(facts))
    _write_outputs(args.out, _document(cfg, facts, contenders, skipped, results, found, dask,
                                       time.monotonic() - started), markdown, svg)
    if results.errors() or "error" in dask:
        log("the harness FAILED somewhere: see the 'error' notes above")
        return 1
    return 0
