"""What profiling costs: the 20,000 tiny-item map of measure 3, side by side
without profiling, inside ``pool.profile()`` (per-item timing), each map in
a ``pool.profile()`` of its own (adds the session's fixed cost: reading the
call log), and inside ``pool.profile(functions=True)`` (cProfile in every
worker).

The modes run in turns, round after round, on one warm pool, so a slow
moment of the machine hits all of them; each round's time is the best of a
few maps. The overhead is the median over rounds of (mode / plain - 1), with
the middle half of the rounds' ratios beside it. Two clocks: wall time, and
the process's CPU time (caller and workers: they are threads of this
process), which other processes on a shared machine disturb much less. The
load average is printed before and after. Issue 12 asks per-item timing to
stay under 2 %.

    ./dev run -- python3 bench/profile_bench.py [--rounds N] [--items N] [--workers W]

Wall and CPU time move by several points from run to run on a shared VM.
``--instructions "valgrind --tool=callgrind --callgrind-out-file=/dev/null"``
adds a count that does not: instructions, from callgrind (which this VM's
perf cannot give: it has no hardware counters). Each count is a process of
its own under that command; a count is the difference of two processes that
differ only in what is measured (their start-up cancels, to within about
0.1 M instructions). Under callgrind everything is about 50 times slower, so
what depends on time is pinned to this run's native values: the worker's
groups keep the size they had here (its clock advances by one group's time
per read), and the plain map (the denominator) uses this run's largest chunk
as its chunksize.
"""

from __future__ import annotations

import argparse
import functools
import itertools
import json
import os
import re
import shlex
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

sys.path.insert(0, str(Path(__file__).resolve().parent))

from interp_rpc import InterpreterPool

ITEM_TIMING_BUDGET = 0.02


def timed(run: Callable[[], object], repeats: int) -> tuple[float, float]:
    """The best of ``repeats`` runs: (wall seconds, process CPU seconds)."""
    wall = cpu = float("inf")
    for _ in range(repeats):
        start, start_cpu = time.perf_counter(), time.process_time()
        run()
        wall = min(wall, time.perf_counter() - start)
        cpu = min(cpu, time.process_time() - start_cpu)
    return wall, cpu


def ratios(values: list[float], baseline: list[float]) -> list[float]:
    return [v / b - 1 for v, b in zip(values, baseline, strict=True)]


def spread(values: list[float]) -> str:
    """The median and the middle half, as percentages."""
    q1, median, q3 = statistics.quantiles(values, n=4)
    return f"{median:+.1%} ({q1:+.1%} to {q3:+.1%})"


def best_ns(run: Callable[[], object], repeats: int = 300) -> int:
    best = 1 << 62
    for _ in range(repeats):
        start = time.perf_counter_ns()
        run()
        best = min(best, time.perf_counter_ns() - start)
    return best


def worker_code() -> ModuleType:
    """The code every worker runs, here in the caller, with what the engine
    gives a worker: stoppable_items, which its chunk loop reads the map's
    stop flag through (core/stoppable_items.hpp)."""
    from interp_rpc import _core
    from interp_rpc._worker import main as _worker

    _worker._stoppable_items = _core.stoppable_items
    return _worker


def parts_ns(chunk_sizes: list[int]) -> dict[str, int]:
    """What per-item timing adds to one map with these chunks, from its parts,
    each timed alone in this thread (best of many runs: a busy machine only
    adds): the worker's loop over a chunk, pickling and unpickling the reply,
    and the caller keeping the items' times. The sums, in ns per map."""
    import workloads

    from interp_rpc._worker import profiling as _worker_profiling
    from interp_rpc.profiling import recorder as _profiling

    _worker = worker_code()

    class Session:  # what ProfileRecorder.item_marks writes to
        def __init__(self) -> None:
            self.marks: dict[int, object] = {}

    recorder = _profiling.ProfileRecorder()
    recorder._sessions = [Session()]  # type: ignore[list-item]
    fn = workloads.identity
    stop = memoryview(bytearray(1))  # a chunk of several items reads its map's flag
    out = {"worker loop": 0, "reply pickling": 0, "caller": 0}
    for n in chunk_sizes:
        if n < 2:  # a chunk of one item is not timed (ProfileRecorder.chunk_mode)
            continue
        chunk = list(range(n))
        run_plain = functools.partial(_worker._run_chunk, fn, chunk, False, 1, stop)
        run_timed = functools.partial(_worker_profiling.run_chunk_timed, fn, chunk, False,
                                      "bench", _worker.MapStopped, stop)
        plain, timed = run_plain(), run_timed()
        out["worker loop"] += best_ns(run_timed) - best_ns(run_plain)
        out["reply pickling"] += (
            best_ns(functools.partial(round_trip, timed))
            - best_ns(functools.partial(round_trip, plain)))
        out["caller"] += best_ns(functools.partial(recorder.item_marks, 1, timed[3], -1))
    return out


def count_part(part: str, chunk_sizes: list[int], group: int, maps: int) -> None:
    """What ``--instructions`` counts, in a process of its own: ``maps`` times
    the parts of a map with these chunks (``part`` "plain": the plain loop and
    its reply; "timed": the timed loop, its reply and the caller keeping the
    times; "none": nothing), or ``maps`` whole plain maps ("map")."""
    import workloads

    from interp_rpc._worker import profiling as _worker_profiling
    from interp_rpc.profiling import recorder as _profiling

    _worker = worker_code()
    if part == "map":
        items = list(range(sum(chunk_sizes)))
        with InterpreterPool(workers=2, init="import workloads") as pool:
            list(pool.map("workloads.identity", items[:1000], chunksize=max(chunk_sizes)))
            for _ in range(maps):
                list(pool.map("workloads.identity", items, chunksize=max(chunk_sizes)))
        return

    class PinnedClock:  # one group's time per read: every group keeps its size
        monotonic_ns = itertools.count(0, _worker_profiling.MIN_GROUP_NS).__next__

    _worker_profiling.time = PinnedClock  # type: ignore[assignment]

    class Session:
        def __init__(self) -> None:
            self.marks: dict[int, object] = {}

    recorder = _profiling.ProfileRecorder()
    recorder._sessions = [Session()]  # type: ignore[list-item]
    fn = workloads.identity
    stop = memoryview(bytearray(1))
    chunks = [list(range(n)) for n in chunk_sizes if n > 1]
    for _ in range(maps):
        for chunk in chunks:
            _worker_profiling._group_sizes["bench"] = group
            if part == "plain":
                round_trip(_worker._run_chunk(fn, chunk, False, 1, stop))
            elif part == "timed":
                reply = _worker_profiling.run_chunk_timed(fn, chunk, False, "bench",
                                                          _worker.MapStopped, stop)
                recorder.item_marks(1, round_trip(reply)[3], -1)  # type: ignore[index]


def instructions(command: list[str], part: str, chunk_sizes: list[int], group: int,
                 maps: int) -> int:
    """The instructions one count_part process runs, under ``command``."""
    done = subprocess.run(
        [*command, sys.executable, __file__, "--count-part", part, "--maps", str(maps),
         "--group", str(group), "--chunks", json.dumps(chunk_sizes)],
        capture_output=True, text=True, check=False, env={**os.environ, "PYTHONHASHSEED": "0"})
    found = re.search(r"Collected : (\d+)", done.stderr)
    if done.returncode != 0 or found is None:
        raise SystemExit(f"--instructions: {shlex.join(command)} failed "
                         f"(exit {done.returncode}):\n{done.stderr[-2000:]}")
    return int(found.group(1))


@dataclass(frozen=True)
class InstructionCounts:
    """What the --instructions processes counted (see count_part)."""

    none: int
    plain: int
    timed: int
    no_map: int
    whole: int
    maps: int

    @property
    def loops_and_replies(self) -> float:
        """A plain map's worker loops and replies, per map: counted in one
        thread, so the same from run to run."""
        return (self.plain - self.none) / self.maps

    @property
    def whole_map(self) -> float:
        """A whole plain map, per map: the difference of two processes'
        counts. Idle threads spin for a while before they sleep
        (core/spin.hpp), so under load that difference moves by more than a
        small map costs, even below zero."""
        return (self.whole - self.no_map) / self.maps

    @property
    def plain_map(self) -> float:
        """A plain map, per map: never less than its loops and replies,
        which are part of it, so the ratio below can only err high."""
        return max(self.whole_map, self.loops_and_replies)

    @property
    def timing_added(self) -> float:
        return (self.timed - self.plain) / self.maps


def instructions_line(counts: InstructionCounts, chunksize: int, group: int) -> str:
    """The report's line, with its verdict on the per-item timing budget."""
    added, plain_map = counts.timing_added, counts.plain_map
    bounded = "" if plain_map == counts.whole_map else (
        f" (at least its loops and replies: the two processes' difference, "
        f"{counts.whole_map / 1e6:.2f} M, was lost in the noise of spinning threads)")
    return (f"Instructions (callgrind), per map: a plain map {plain_map / 1e6:.2f} M "
            f"(chunksize={chunksize}){bounded}; its worker loops and replies "
            f"{counts.loops_and_replies / 1e6:.2f} M; per-item timing adds "
            f"{added / 1e3:+.0f} k to them (groups of {group} items), "
            f"{added / plain_map:+.2%} of the plain map: "
            f"**{'PASS' if added / plain_map < ITEM_TIMING_BUDGET else 'MISS'}**")


def report_instructions(command: list[str], chunk_sizes: list[int], group: int,
                        maps: int) -> None:
    count = functools.partial(instructions, command, chunk_sizes=chunk_sizes, group=group)
    none, plain, timed = (count(part, maps=maps) for part in ("none", "plain", "timed"))
    counts = InstructionCounts(none, plain, timed, count("map", maps=0), count("map", maps=maps),
                               maps)
    print("\n" + instructions_line(counts, max(chunk_sizes), group))


def round_trip(reply: object) -> object:
    from interp_rpc._worker import wire

    return wire.loads(wire.dumps_result(reply))


def load() -> str:
    return ", ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--items", type=int, default=20_000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--chunksize", type=int, default=None,
                        help="the maps' chunksize (default: adaptive, as measure 3)")
    parser.add_argument("--repeats", type=int, default=5, help="maps per mode per round")
    parser.add_argument("--instructions", metavar="COMMAND", default=None,
                        help="also count instructions, with this callgrind command line")
    parser.add_argument("--instruction-maps", type=int, default=10, metavar="N",
                        help="maps per --instructions count (the count is per map)")
    parser.add_argument("--count-part", help=argparse.SUPPRESS)  # one --instructions count
    parser.add_argument("--maps", type=int, default=1, help=argparse.SUPPRESS)
    parser.add_argument("--group", type=int, default=1, help=argparse.SUPPRESS)
    parser.add_argument("--chunks", default="[]", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.count_part is not None:
        count_part(args.count_part, json.loads(args.chunks), args.group, args.maps)
        return
    items = list(range(args.items))
    load_before = load()
    with InterpreterPool(workers=args.workers, init="import workloads") as pool:
        target = "workloads.identity"

        def one_map() -> None:
            list(pool.map(target, items, chunksize=args.chunksize))

        def plain() -> tuple[float, float]:
            return timed(one_map, args.repeats)

        def inside(functions: bool) -> Callable[[], tuple[float, float]]:
            # One session around the round's maps: what per-item timing (or
            # cProfile) adds to a map, without the session's fixed cost.
            def run() -> tuple[float, float]:
                with pool.profile(functions=functions):
                    return timed(one_map, args.repeats)
            return run

        def session_per_map() -> tuple[float, float]:
            def run() -> None:
                with pool.profile():
                    one_map()
            return timed(run, args.repeats)

        modes = {"plain": plain, "inside pool.profile()": inside(False),
                 "a pool.profile() per map": session_per_map,
                 "inside pool.profile(functions=True)": inside(True)}
        for run in modes.values():  # warm-up: imports, group sizes, caches
            run()
        before = pool.stats().calls
        one_map()
        chunk_sizes = [r.item_count for r in pool.call_records(before)]
        with pool.profile() as prof:
            one_map()
        # The middle item's group size (the first chunks' groups are smaller).
        group = statistics.median_low(r.group for r in prof.records)
        wall: dict[str, list[float]] = {name: [] for name in modes}
        cpu: dict[str, list[float]] = {name: [] for name in modes}
        for _ in range(args.rounds):
            for name, run in modes.items():
                w, c = run()
                wall[name].append(w)
                cpu[name].append(c)
    chunking = "adaptive chunks" if args.chunksize is None else f"chunksize={args.chunksize}"
    print(f"### Profiling overhead: map of {args.items:,} tiny items, {chunking}, "
          f"W={args.workers}, {args.rounds} rounds\n")
    print(f"Load average (1, 5, 15 min) before: {load_before}; after: {load()} "
          f"({os.process_cpu_count()} CPUs).\n")
    print("| mode | median wall ms | items/s | wall overhead vs plain | CPU overhead vs plain |")
    print("|---|---|---|---|---|")
    for name in modes:
        median = statistics.median(wall[name])
        if name == "plain":
            overhead = "baseline | baseline"
        else:
            overhead = (f"{spread(ratios(wall[name], wall['plain']))} | "
                        f"{spread(ratios(cpu[name], cpu['plain']))}")
        print(f"| {name} | {median * 1e3:.2f} | {args.items / median:,.0f} | {overhead} |")
    print("\n(overheads: median of the rounds' ratios, and the middle half of them)")
    parts = parts_ns(chunk_sizes)
    added = sum(parts.values())
    plain_cpu = statistics.median(cpu["plain"]) * 1e9
    print(f"\nFrom its parts, per map of {len(chunk_sizes)} chunks: "
          + ", ".join(f"{k} {v / 1e3:+.1f} µs" for k, v in parts.items())
          + f"; {added / 1e3:+.1f} µs in all, {added / plain_cpu:+.2%} of the plain map's "
          f"median CPU time ({plain_cpu / 1e6:.2f} ms).")
    mode = "inside pool.profile()"
    for clock, values in (("wall", wall), ("CPU", cpu)):
        ratio = statistics.median(ratios(values[mode], values["plain"]))
        verdict = "PASS" if ratio < ITEM_TIMING_BUDGET else "MISS"
        print(f"\nper-item timing overhead, {clock} time: {ratio:+.1%} "
              f"(target < {ITEM_TIMING_BUDGET:.0%}): **{verdict}**")
    if args.instructions is not None:
        report_instructions(shlex.split(args.instructions), chunk_sizes, group,
                            args.instruction_maps)


if __name__ == "__main__":
    main()
