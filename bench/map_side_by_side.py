"""Map throughput against another checkout of interp-rpc, side by side.

Issue 14 asks that the benchmark's map rows do not regress. One process's
rate of a 20,000-item map moves by a third from one process to the next on
this 2-core VM, so one run of each checkout proves nothing: this runs the
two in alternating pairs of processes, each reporting the median of several
maps (default chunking, then ``chunksize=1``) and its CPU time per map.

    python3 bench/map_side_by_side.py ../old-checkout [--pairs 5] [--maps 15]

Run it on the host, where ``./dev`` runs: each side measures inside its own
checkout's ``./dev run`` (built first), with the measuring code below on its
standard input, so the other checkout needs no copy of this file. The map
target is ``workloads.identity`` from each checkout's bench/.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ITEMS = 20_000

MEASURE = """
import json, statistics, sys, time
sys.path.insert(0, "bench")
import workloads
from interp_rpc import InterpreterPool

items = list(range({items}))
out = {{}}
with InterpreterPool(workers=2) as pool:
    for name, chunksize in (("default", None), ("chunksize=1", 1)):
        for _ in range(3):
            list(pool.map(workloads.identity, items, chunksize=chunksize))
        rates, cpus = [], []
        for _ in range({maps}):
            wall, cpu = time.perf_counter(), time.process_time()
            results = list(pool.map(workloads.identity, items, chunksize=chunksize))
            rates.append(len(items) / (time.perf_counter() - wall))
            cpus.append(time.process_time() - cpu)
            assert results == items
        out[name] = {{"items_per_s": statistics.median(rates),
                      "cpu_ms_per_map": statistics.median(cpus) * 1e3}}
print("RESULT " + json.dumps(out))
"""


def measure(checkout: Path, maps: int) -> dict[str, dict[str, float]]:
    """One process of ``checkout``: the median rate and CPU of each map kind."""
    done = subprocess.run([str(checkout / "dev"), "run", "--", "python3", "-"],
                          input=MEASURE.format(items=ITEMS, maps=maps), text=True,
                          capture_output=True, cwd=checkout, check=False)
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    if done.returncode != 0 or not lines:
        raise SystemExit(f"{checkout}: exit {done.returncode}\n{done.stderr[-3000:]}")
    result: dict[str, dict[str, float]] = json.loads(lines[-1].removeprefix("RESULT "))
    return result


def describe(checkout: Path) -> str:
    done = subprocess.run(["git", "-C", str(checkout), "log", "-1", "--format=%h %s"],
                          capture_output=True, text=True, check=False)
    return done.stdout.strip() or str(checkout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("other", type=Path, help="the other checkout (with its own ./dev)")
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument("--maps", type=int, default=15, help="maps per kind per process")
    args = parser.parse_args()
    sides = {"this": REPO, "other": args.other.resolve()}
    runs: dict[str, list[dict[str, dict[str, float]]]] = {side: [] for side in sides}
    print(f"load average before: {os.getloadavg()}", flush=True)
    for pair in range(1, args.pairs + 1):
        for side in ("other", "this"):  # the older first in every pair
            runs[side].append(measure(sides[side], args.maps))
        print(f"pair {pair}: " + "; ".join(
            f"{side} {runs[side][-1]['default']['items_per_s'] / 1e6:.2f} M/s, "
            f"{runs[side][-1]['chunksize=1']['items_per_s'] / 1e3:.0f} k/s"
            for side in ("other", "this")), flush=True)
    print(f"load average after: {os.getloadavg()}\n")
    print(f"| {ITEMS:,} `identity` items, W=2 | " + " | ".join(
        f"{side}: {describe(sides[side])}" for side in ("this", "other")) + " |")
    print("|---|---|---|")
    for kind, unit, scale in (("default", "M items/s", 1e6), ("chunksize=1", "k items/s", 1e3)):
        for metric, label in (("items_per_s", unit), ("cpu_ms_per_map", "CPU ms per map")):
            cells = []
            for side in ("this", "other"):
                values = [run[kind][metric] / (scale if metric == "items_per_s" else 1)
                          for run in runs[side]]
                cells.append(f"{statistics.median(values):.3g} ({min(values):.3g} to "
                             f"{max(values):.3g})")
            print(f"| {kind}, {label} | {cells[0]} | {cells[1]} |")
    print(f"\n(medians over {args.pairs} processes of each, the lowest and highest in parentheses; "
          f"each process's value is the median of {args.maps} maps)")


if __name__ == "__main__":
    sys.exit(main())
