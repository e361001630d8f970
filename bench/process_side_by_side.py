"""interp-rpc's ProcessPool against multiprocessing.Pool and joblib, and
against InterpreterPool, side by side.

The measures of the process pools' acceptance, in one process, in
interleaved rounds (each round measures every contender once, in turn, so
that a slow moment of the machine falls on all of them), on W=2 workers:

- ready: the pool created and its first result back (a new pool per round);
- call p50: one tiny call at a time, the median of many;
- a 64 MiB float64 array as an argument, and as a result; and as an
  argument that is a new array each call (joblib sends an array it has sent
  before without writing it again: it keeps arrays by identity, and does not
  look whether their contents changed, so a change made in place does not
  reach its workers: the report says, for each contender, whether that
  array arrives changed);
- a map of 10^5 tiny items with each contender's default chunking; and
  again with every contender's pool open at once, one map each in turn
  (rotating who goes first), which the machine's load moves less: a round
  measures each contender minutes apart, a turn within milliseconds.

Each cell is the median over the rounds; each ratio is interp-rpc's time
over the contender's, per round, then the median (below 1: interp-rpc is
faster). joblib (its default loky backend) is measured when it is installed.

A second table compares interp-rpc's two pools, for choosing between them:
ready time, call latency, the memory each worker adds (PSS, so shared
library pages count once), and 64 MiB of ``bytes`` both ways (bytes, not an
array: numpy does not load in a subinterpreter).

    ./dev run -- python3 bench/process_side_by_side.py [--rounds 5] [--out FILE.md]

multiprocessing uses forkserver, Python 3.14's default on Linux.

``--chunking`` measures instead the default chunking of maps on both of
interp-rpc's pools, with the chunk sizer's rules as they are and as they
were before chunks too short to measure stopped counting (the same rounds,
interleaved): tiny-item maps, the time to a map's first result when each
item takes 2 ms, and a map of uneven items (one in eight takes 20 ms).
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
ARRAY_ITEMS = 8 * 1024 * 1024  # 64 MiB of float64
MAP_ITEMS = 100_000
CALLS = 2_000
#: Repeats of the array measures within a round (their median).
ARRAY_REPEATS = 3
#: Turns of the alternating map measure, per round.
MAP_TURNS = 5

Runner = dict[str, Callable[..., Any]]


@contextlib.contextmanager
def interp_rpc_pool() -> Iterator[Runner]:
    from interp_rpc import ProcessPool

    with ProcessPool(workers=WORKERS) as pool:
        yield {"call": lambda fn, *args: pool.call(fn, *args),
               "map": lambda fn, items: list(pool.map(fn, items))}


@contextlib.contextmanager
def mp_pool() -> Iterator[Runner]:
    with multiprocessing.get_context("forkserver").Pool(WORKERS) as pool:
        yield {"call": lambda fn, *args: pool.apply(fn, args),
               "map": lambda fn, items: pool.map(fn, items)}


@contextlib.contextmanager
def joblib_pool() -> Iterator[Runner]:
    import joblib

    with joblib.Parallel(n_jobs=WORKERS) as parallel:
        yield {"call": lambda fn, *args: parallel([joblib.delayed(fn)(*args)])[0],
               "map": lambda fn, items: parallel(joblib.delayed(fn)(x) for x in items)}


def contenders() -> dict[str, Callable[[], contextlib.AbstractContextManager[Runner]]]:
    found: dict[str, Callable[[], contextlib.AbstractContextManager[Runner]]] = {
        "interp-rpc ProcessPool": interp_rpc_pool,
        "multiprocessing.Pool (forkserver)": mp_pool,
    }
    try:
        import joblib
    except ImportError:
        return found
    found[f"joblib {joblib.__version__} (loky)"] = joblib_pool
    return found


def _median_time(action: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        action()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def measure(make: Callable[[], contextlib.AbstractContextManager[Runner]],
            array: Any) -> dict[str, float]:
    """One round of one contender: seconds for each measure."""
    started = time.perf_counter()
    with make() as run:
        assert run["call"](workloads.identity, 1) == 1
        ready = time.perf_counter() - started
        for i in range(100):  # warm: the first calls import the targets
            run["call"](workloads.identity, i)
        latencies = []
        for i in range(CALLS):
            t = time.perf_counter()
            run["call"](workloads.identity, i)
            latencies.append(time.perf_counter() - t)
        assert run["call"](workloads.array_nbytes, array) == array.nbytes
        argument = _median_time(lambda: run["call"](workloads.array_nbytes, array),
                                ARRAY_REPEATS)
        # joblib sends an array object it has sent before as the file it
        # wrote then, unread (it keeps them by identity, and does not look
        # whether the array changed): a new array each call is what it costs
        # to send data. Made before the timed calls, every page written.
        new_arrays = [array + i for i in range(ARRAY_REPEATS)]
        times = []
        while new_arrays:
            new_array = new_arrays.pop()
            started = time.perf_counter()
            run["call"](workloads.array_nbytes, new_array)
            times.append(time.perf_counter() - started)
            del new_array
        new_argument = statistics.median(times)
        # Correct answers first: the array sent above, changed in place.
        array[0] += 1.0
        sees_change = run["call"](workloads.first_value, array) == array[0]
        array[0] -= 1.0
        assert run["call"](workloads.ones, ARRAY_ITEMS).nbytes == array.nbytes
        result = _median_time(lambda: run["call"](workloads.ones, ARRAY_ITEMS), ARRAY_REPEATS)
        items = list(range(MAP_ITEMS))
        assert run["map"](workloads.identity, items) == items
        mapped = _median_time(lambda: run["map"](workloads.identity, items), ARRAY_REPEATS)
    return {"ready": ready, "call": statistics.median(latencies), "argument": argument,
            "new_argument": new_argument, "result": result, "map": mapped,
            "sees_change": float(sees_change)}


MEASURES = (("ready", "pool ready and first result", 1e3, "ms"),
            ("call", "one call, p50", 1e6, "µs"),
            ("argument", "64 MiB float64 array as argument", 1e3, "ms"),
            ("new_argument", "64 MiB float64 array as argument, a new array each call", 1e3,
             "ms"),
            ("result", "64 MiB float64 array as result", 1e3, "ms"),
            ("map", f"map of {MAP_ITEMS:,} tiny items, defaults", 1e3, "ms"))


def report(rounds: list[dict[str, dict[str, float]]]) -> str:
    names = list(rounds[0])
    ours = names[0]
    lines = [f"## ProcessPool against the process pools, {datetime.date.today()}", "",
             f"- Machine: {os.cpu_count()} cores; Python {platform.python_version()}; "
             f"W={WORKERS}; {len(rounds)} interleaved rounds, each cell their median",
             "- ratio: interp-rpc's time over the contender's in the same round, median "
             "over rounds (below 1: interp-rpc is faster)", "",
             "| measure | " + " | ".join(names)
             + "".join(f" | ratio to {n.split(' ')[0]}" for n in names[1:]) + " |",
             "|---" * (len(names) * 2) + "|"]
    for key, label, scale, unit in MEASURES:
        cells = [f"{statistics.median(r[n][key] for r in rounds) * scale:,.1f} {unit}"
                 for n in names]
        ratios = [f"{statistics.median(r[ours][key] / r[n][key] for r in rounds):.2f}x"
                  for n in names[1:]]
        lines.append(f"| {label} | " + " | ".join(cells + ratios) + " |")
    seen = ["yes" if all(r[n]["sees_change"] for r in rounds) else "**no**: the old values"
            for n in names]
    lines.append("| the array of the argument row, changed in place, then sent again | "
                 + " | ".join(seen + [""] * (len(names) - 1)) + " |")
    return "\n".join(lines) + "\n"


def alternating_maps(found: dict[str, Callable[[], contextlib.AbstractContextManager[Runner]]],
                     turns: int) -> str:
    """The map row measured in turns: every pool open, one map each per turn."""
    items = list(range(MAP_ITEMS))
    with contextlib.ExitStack() as stack:
        runs = {name: stack.enter_context(make()) for name, make in found.items()}
        for run in runs.values():
            assert run["map"](workloads.identity, items) == items
        times: dict[str, list[float]] = {name: [] for name in runs}
        names = list(runs)
        for turn in range(turns):
            for name in names[turn % len(names):] + names[:turn % len(names)]:
                started = time.perf_counter()
                runs[name]["map"](workloads.identity, items)
                times[name].append(time.perf_counter() - started)
    ours = names[0]
    lines = ["", f"## Map of {MAP_ITEMS:,} tiny items, in turns", "",
             f"Every pool open at once; {turns} turns of one map each, each cell their median; "
             "ratio: interp-rpc's time over the contender's in the same turn, median over turns",
             "", "| measure | " + " | ".join(names)
             + "".join(f" | ratio to {n.split(' ')[0]}" for n in names[1:]) + " |",
             "|---" * (len(names) * 2) + "|"]
    cells = [f"{statistics.median(times[n]) * 1e3:,.1f} ms" for n in names]
    ratios = [f"{statistics.median(a / b for a, b in zip(times[ours], times[n], strict=True)):.2f}x"
              for n in names[1:]]
    lines.append(f"| map of {MAP_ITEMS:,} tiny items, defaults | " + " | ".join(cells + ratios)
                 + " |")
    return "\n".join(lines) + "\n"


def pss_kib(pid: int | str = "self") -> int:
    """Process ``pid``'s proportional set size, in KiB."""
    with open(f"/proc/{pid}/smaps_rollup") as rollup:
        for line in rollup:
            if line.startswith("Pss:"):
                return int(line.split()[1])
    raise RuntimeError(f"no Pss in /proc/{pid}/smaps_rollup")


def measure_kind(kind: str) -> dict[str, float]:
    """One round of one of interp-rpc's pools: seconds, and KiB per worker."""
    from interp_rpc import InterpreterPool, ProcessPool

    payload = workloads.filled_bytes(ARRAY_ITEMS * 8)
    before = pss_kib()
    started = time.perf_counter()
    with (InterpreterPool if kind == "InterpreterPool" else ProcessPool)(
            workers=WORKERS) as pool:
        assert pool.call(workloads.identity, 1) == 1
        ready = time.perf_counter() - started
        for i in range(100):
            pool.call(workloads.identity, i)
        pids = pool.worker_pids() if isinstance(pool, ProcessPool) else []
        added = pss_kib() - before + sum(pss_kib(pid) for pid in pids)
        latencies = []
        for i in range(CALLS):
            t = time.perf_counter()
            pool.call(workloads.identity, i)
            latencies.append(time.perf_counter() - t)
        argument = _median_time(lambda: pool.call(workloads.payload_len, payload),
                                ARRAY_REPEATS)
        result = _median_time(lambda: pool.call(workloads.filled_bytes, len(payload)),
                              ARRAY_REPEATS)
        items = list(range(MAP_ITEMS))
        assert list(pool.map(workloads.identity, items)) == items
        mapped = _median_time(lambda: list(pool.map(workloads.identity, items)), ARRAY_REPEATS)
    return {"ready": ready, "call": statistics.median(latencies),
            "memory": added / WORKERS, "argument": argument, "result": result, "map": mapped}


KIND_MEASURES = (("ready", "pool ready and first result", 1e3, "ms"),
                 ("call", "one call, p50", 1e6, "µs"),
                 ("memory", "memory each worker adds (PSS)", 1 / 1024, "MiB"),
                 ("argument", "64 MiB of bytes as argument", 1e3, "ms"),
                 ("result", "64 MiB of bytes as result", 1e3, "ms"),
                 ("map", f"map of {MAP_ITEMS:,} tiny items, defaults", 1e3, "ms"))


def kinds_report(rounds: list[dict[str, dict[str, float]]]) -> str:
    lines = ["", "## InterpreterPool or ProcessPool", "",
             "| measure | InterpreterPool | ProcessPool |", "|---|---|---|"]
    for key, label, scale, unit in KIND_MEASURES:
        cells = [f"{statistics.median(r[n][key] for r in rounds) * scale:,.1f} {unit}"
                 for n in ("InterpreterPool", "ProcessPool")]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


@contextlib.contextmanager
def sizer_rules(previous: bool) -> Iterator[None]:
    """The chunk sizer's rules as they are, or (``previous``) as they were:
    every chunk measured, one chunk enough."""
    from interp_rpc._pool import chunk_sizer

    kept = chunk_sizer.MEASURABLE_NS, chunk_sizer.MIN_MEASURED
    if previous:
        chunk_sizer.MEASURABLE_NS, chunk_sizer.MIN_MEASURED = 1, 1
    try:
        yield
    finally:
        chunk_sizer.MEASURABLE_NS, chunk_sizer.MIN_MEASURED = kept


UNEVEN = [0.02 if i % 8 == 0 else 0.001 for i in range(64)]
CHUNKING_MEASURES = (("tiny", f"map of {MAP_ITEMS:,} tiny items", 1e3, "ms"),
                     ("tiny20k", "map of 20,000 tiny items", 1e3, "ms"),
                     ("first", "first result of 100 items of 2 ms", 1e3, "ms"),
                     ("uneven", "map of 64 uneven items (8 of 20 ms, 56 of 1 ms)", 1e3, "ms"))


def measure_chunking(pool: Any) -> dict[str, float]:
    items = list(range(MAP_ITEMS))
    tiny = _median_time(lambda: list(pool.map(workloads.identity, items)), ARRAY_REPEATS)
    tiny20k = _median_time(lambda: list(pool.map(workloads.identity, items[:20_000])),
                           ARRAY_REPEATS)
    started = time.perf_counter()
    results = pool.map(workloads.warm, [0.002] * 100)
    next(results)
    first = time.perf_counter() - started
    list(results)
    uneven = _median_time(lambda: list(pool.map(workloads.warm, UNEVEN)), 1)
    return {"tiny": tiny, "tiny20k": tiny20k, "first": first, "uneven": uneven}


def chunking(rounds: int) -> str:
    from interp_rpc import InterpreterPool, ProcessPool

    measured: dict[str, list[dict[str, float]]] = {}
    with InterpreterPool(workers=WORKERS) as local, ProcessPool(workers=WORKERS) as processes:
        for pool in (local, processes):
            list(pool.map(workloads.warm, [0.0] * 4))  # every worker has the targets
        for number in range(rounds):
            for kind, pool in (("InterpreterPool", local), ("ProcessPool", processes)):
                for previous in (True, False):
                    with sizer_rules(previous):
                        label = f"{kind}, {'before' if previous else 'now'}"
                        measured.setdefault(label, []).append(measure_chunking(pool))
            print(f"round {number + 1} of {rounds} done", file=sys.stderr)
    names = list(measured)
    lines = [f"## Default chunking of maps, before and now, {datetime.date.today()}", "",
             f"W={WORKERS}; {rounds} interleaved rounds, each cell their median; load average "
             f"{_load()}", "", "| measure | " + " | ".join(names) + " |",
             "|---" * (len(names) + 1) + "|"]
    for key, label, scale, unit in CHUNKING_MEASURES:
        cells = [f"{statistics.median(r[key] for r in measured[n]) * scale:,.1f} {unit}"
                 for n in names]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _load() -> str:
    return " / ".join(f"{v:.2f}" for v in os.getloadavg()) + " (1, 5, 15 min)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--out", type=Path, help="also write the table to this file")
    parser.add_argument("--chunking", action="store_true",
                        help="measure the default chunking of maps, before and now")
    options = parser.parse_args()
    if options.chunking:
        table = chunking(options.rounds)
        print(table)
        if options.out is not None:
            options.out.write_text(table)
        return
    import numpy

    array = numpy.random.default_rng(0).random(ARRAY_ITEMS)
    found = contenders()
    load_at_start = _load()
    rounds = []
    kinds = []
    for number in range(options.rounds):
        rounds.append({name: measure(make, array) for name, make in found.items()})
        kinds.append({kind: measure_kind(kind) for kind in ("InterpreterPool", "ProcessPool")})
        print(f"round {number + 1} of {options.rounds} done", file=sys.stderr)
    turns = alternating_maps(found, options.rounds * MAP_TURNS)
    loads = f"\nLoad average at the start: {load_at_start}; at the end: {_load()}.\n"
    table = report(rounds) + turns + kinds_report(kinds) + loads
    print(table)
    if options.out is not None:
        options.out.write_text(table)


if __name__ == "__main__":
    main()
