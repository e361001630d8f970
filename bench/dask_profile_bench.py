"""What profiling costs on a ClusterPool: the same tiny-item map (identity)
on a LocalCluster, side by side, plain and profiled.

    ./dev run -- python3 bench/dask_profile_bench.py [--processes 2] [--items 5000]
                                                     [--rounds 21] [--repeats 3]

Modes, each round's maps on one warm pool:

- plain;
- inside one ``pool.profile()`` that spans the round's maps (per-item timing
  in every process alone: starting and ending the session is not timed);
- each map in a ``pool.profile()`` of its own, as ``%parallel_map`` runs it
  (adds, per map, the requests that start and end profiling in every process,
  which fetch its request log);
- the same, and the profile's records read, as ``%parallel_profile`` reads
  them (builds one record per item);
- each map in a ``pool.profile(functions=True)`` of its own, as
  ``%parallel_map --profile`` runs it (cProfile in every subinterpreter).

The modes run in turns, round after round (each round starting with the
next mode), so a slow moment of the machine hits all of them; each round's
time is the best of a few maps. The overhead is the median over rounds of
(mode / plain - 1), with the middle half of the rounds' ratios beside it
(bench/profile_bench.py's method for the local pool), and the median extra
time per map. Wall time only: the work runs in other processes. The load
average is printed before and after: on a shared machine the figures are
noisy.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import distributed

from interp_rpc.dask import ClusterPool
from interp_rpc.profiling.model import Profile

#: What a mode's maps of one round run inside.
type Around = Callable[[], contextlib.AbstractContextManager[None]]

INIT = (f"import sys; sys.path.insert(0, {str(Path(__file__).resolve().parent)!r}); "
        "import workloads")


def best(run: Callable[[], object], repeats: int) -> float:
    """The best wall time of ``repeats`` runs, in seconds."""
    fastest = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        fastest = min(fastest, time.perf_counter() - start)
    return fastest


def spread(values: list[float]) -> str:
    """The median and the middle half, as percentages."""
    q1, median, q3 = statistics.quantiles(values, n=4)
    return f"{median:+.1%} ({q1:+.1%} to {q3:+.1%})"


def load() -> str:
    return " ".join(f"{v:.2f}" for v in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--items", type=int, default=5_000)
    parser.add_argument("--rounds", type=int, default=21)
    parser.add_argument("--repeats", type=int, default=3, help="maps per mode and round")
    args = parser.parse_args()
    items = list(range(args.items))
    print(f"load average before: {load()}")
    with distributed.LocalCluster(n_workers=args.processes, threads_per_worker=1,
                                  processes=True, dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client, ClusterPool(client, init=INIT) as pool:

        def plain() -> None:
            assert list(pool.map("workloads.identity", items)) == items

        last: list[Profile] = []  # the profiles whose records are not read in the timing

        def in_own_profile(functions: bool, read: bool) -> Callable[[], None]:
            def run() -> None:
                with pool.profile(functions=functions) as prof:
                    plain()
                if read:
                    assert len(prof.records) == args.items
                else:
                    last[:] = [prof]
            return run

        @contextlib.contextmanager
        def round_profile() -> Iterator[None]:
            with pool.profile() as prof:
                yield
            assert len(prof.records) == args.items * args.repeats

        # name: (one map, what the mode's maps of a round run inside)
        modes: dict[str, tuple[Callable[[], None], Around]] = {
            "plain": (plain, contextlib.nullcontext),
            "one pool.profile() per round": (plain, round_profile),
            "each map in its own pool.profile()":
                (in_own_profile(False, read=False), contextlib.nullcontext),
            "the same, and its records read":
                (in_own_profile(False, read=True), contextlib.nullcontext),
            "each map in its own pool.profile(functions=True)":
                (in_own_profile(True, read=False), contextlib.nullcontext),
        }
        for run, around in modes.values():  # warm: imports, first profile, every process
            with around():
                for _ in range(args.repeats):
                    run()
        times: dict[str, list[float]] = {name: [] for name in modes}
        names = list(modes)
        for round_number in range(args.rounds):
            # Each round starts with the next mode: none always follows the
            # same one (a profile's end leaves the processes work to finish).
            start = round_number % len(names)
            for name in names[start:] + names[:start]:
                run, around = modes[name]
                with around():
                    times[name].append(best(run, args.repeats))
                # Outside the timing: the unread profiles were whole.
                assert all(len(prof.records) == args.items for prof in last)
                last.clear()
        print(f"{args.items} tiny items (identity) per map on {args.processes} processes x "
              f"{pool.workers // args.processes} subinterpreter(s), {args.rounds} rounds, "
              f"best of {args.repeats} maps each:")
        base = times["plain"]
        print(f"  plain: {statistics.median(base) * 1e3:.1f} ms per map "
              f"({statistics.median(base) / args.items * 1e6:.1f} us per item)")
        for name, values in list(times.items())[1:]:
            overheads = [v / b - 1 for v, b in zip(values, base, strict=True)]
            extra = statistics.median([v - b for v, b in zip(values, base, strict=True)])
            print(f"  {name}: {spread(overheads)} wall time, "
                  f"{extra * 1e3:+.1f} ms per map")
    print(f"load average after: {load()}")


if __name__ == "__main__":
    main()
