"""Large results, returned by a worker, side by side: interp-rpc's
InterpreterPool against InterpreterPoolExecutor and multiprocessing.Pool.

A target returns a new bytes or str of each size; the caller times the call
until the value is in its hands. Rounds are interleaved (each round measures
every contender once, in turn, so that a slow moment of the machine falls
on all of them); each cell is the median over the rounds, and each ratio is
interp-rpc's time over the contender's, per round, then the median (below
1: interp-rpc is faster). W = 2 workers; multiprocessing uses forkserver,
Python 3.14's default on Linux.

    ./dev run -- python3 bench/results_side_by_side.py [--rounds 7] [--out FILE.md]
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import multiprocessing
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
import workloads

WORKERS = 2
MiB = 1 << 20
#: (label, target, size): what each round returns.
PAYLOADS = [
    ("16 MiB bytes", workloads.filled_bytes, 16 * MiB),
    ("256 MiB bytes", workloads.filled_bytes, 256 * MiB),
    ("16 Mi-character str", workloads.filled_str, 16 * MiB),
]

Call = Callable[[Callable[[int], Any], int], Any]


@contextlib.contextmanager
def contenders() -> Iterator[dict[str, Call]]:
    from concurrent.futures import InterpreterPoolExecutor

    from interp_rpc import InterpreterPool

    context = multiprocessing.get_context("forkserver")
    with (InterpreterPool(workers=WORKERS, init="import workloads") as pool,
          InterpreterPoolExecutor(WORKERS) as ipe,
          context.Pool(WORKERS) as mp):
        yield {
            "interp-rpc": lambda fn, size: pool.call(fn, size),
            "InterpreterPoolExecutor": lambda fn, size: ipe.submit(fn, size).result(),
            "multiprocessing.Pool": lambda fn, size: mp.apply(fn, (size,)),
        }


def measure(rounds: int) -> dict[str, dict[str, list[float]]]:
    """Seconds per (payload, contender), one per round."""
    times: dict[str, dict[str, list[float]]] = {label: {} for label, _, _ in PAYLOADS}
    with contenders() as runners:
        for label, target, size in PAYLOADS:
            expected = target(size)
            for name, run in runners.items():  # warm: imports, first pages
                assert run(target, size) == expected, (label, name)
            del expected
            for _ in range(rounds):
                for name, run in runners.items():
                    started = time.perf_counter()
                    value = run(target, size)
                    times[label].setdefault(name, []).append(time.perf_counter() - started)
                    assert type(value) is type(target(1)) and len(value) == size
                    del value
    return times


def report(times: dict[str, dict[str, list[float]]], rounds: int) -> str:
    names = list(next(iter(times.values())))
    others = [n for n in names if n != "interp-rpc"]
    lines = [
        f"# Large results side by side, {datetime.date.today()}",
        "",
        f"{platform.node()}, {os.cpu_count()} cores, load average "
        f"{os.getloadavg()[0]:.2f} at the end; Python {platform.python_version()}; "
        f"W = {WORKERS}; median of {rounds} interleaved rounds (ms).",
        "",
        "| returned | " + " | ".join(names) + " | " +
        " | ".join(f"ratio to {n}" for n in others) + " |",
        "|---|" + "---:|" * (len(names) + len(others)),
    ]
    for label, by_name in times.items():
        cells = [f"{statistics.median(by_name[n]) * 1000:.1f}" for n in names]
        ours = by_name["interp-rpc"]
        ratios = [f"{statistics.median(a / b for a, b in zip(ours, by_name[n], strict=True)):.2f}"
                  for n in others]
        lines.append(f"| {label} | " + " | ".join(cells + ratios) + " |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--out", type=Path, help="also write the table to this file")
    args = parser.parse_args()
    text = report(measure(args.rounds), args.rounds)
    print(text, end="")
    if args.out is not None:
        args.out.write_text(text)


if __name__ == "__main__":
    main()
