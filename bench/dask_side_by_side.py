"""ClusterPool against plain dask, side by side, on one machine.

    ./dev run -- python3 bench/dask_side_by_side.py [--processes 2] [--items 16]

1. Pure-Python CPU work (count_primes), one item per task, on a LocalCluster
   of P processes x 1 thread: ClusterPool (one subinterpreter per process),
   dask's client.map on the same processes, and dask on one process with P
   threads (which share one GIL). Each against the same items run serially
   in the caller just before it.
2. Tiny items (identity): ClusterPool.map (a few chunks per subinterpreter)
   against client.map (one dask task per item) on the P processes.

Every result is checked before its time counts. Run it on a quiet machine.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import distributed
import workloads

from interp_rpc.dask import ClusterPool

INIT = f"import sys; sys.path.insert(0, {str(Path(__file__).parent)!r}); import workloads"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--items", type=int, default=8)
    parser.add_argument("--n", type=int, default=200_000, help="count_primes(N) per item")
    parser.add_argument("--tiny", type=int, default=2_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    here = str(Path(__file__).parent)
    items = [args.n] * args.items
    expected = [workloads.count_primes(args.n)] * args.items
    tiny = list(range(args.tiny))
    spread = {"n_workers": args.processes, "threads_per_worker": 1}
    shared = {"n_workers": 1, "threads_per_worker": args.processes}
    with distributed.LocalCluster(**spread, processes=True, dashboard_address=None) as c1, \
            distributed.LocalCluster(**shared, processes=True, dashboard_address=None) as c2, \
            distributed.Client(c1) as processes, distributed.Client(c2) as threads, \
            ClusterPool(processes, init=INIT) as pool:
        for client in (processes, threads):
            client.run(sys.path.insert, 0, here)

        def on_dask(client: distributed.Client, work: list[int]) -> list[object]:
            return list(client.gather(client.map(workloads.count_primes, work, pure=False)))

        contenders = {
            f"ClusterPool, {args.processes} processes x 1 subinterpreter":
                lambda work: list(pool.map("workloads.count_primes", work, chunksize=1)),
            f"dask, {args.processes} processes x 1 thread": lambda work: on_dask(processes, work),
            f"dask, 1 process x {args.processes} threads": lambda work: on_dask(threads, work),
        }
        for run in contenders.values():
            run([1000] * 8)  # warm: imports done, every process has run a task
        ratios: dict[str, list[float]] = {name: [] for name in contenders}
        for _ in range(args.rounds):
            # Each contender is timed right after its own serial baseline, so
            # a change of load on the machine hits both sides of a ratio.
            for name, run in contenders.items():
                start = time.perf_counter()
                serial_result = [workloads.count_primes(n) for n in items]
                serial = time.perf_counter() - start
                start = time.perf_counter()
                got = run(items)
                spent = time.perf_counter() - start
                assert got == expected == serial_result, name
                ratios[name].append(serial / spent)
        print(f"{args.items} x count_primes({args.n}), median of {args.rounds} rounds, "
              "speed-up over serial in the caller:")
        for name, values in ratios.items():
            print(f"  {name}: {statistics.median(values):.2f}x  "
                  f"({', '.join(f'{v:.2f}' for v in values)})")
        ours = theirs = 0.0
        for _ in range(args.rounds):
            start = time.perf_counter()
            assert list(pool.map("workloads.identity", tiny)) == tiny
            ours += time.perf_counter() - start
            start = time.perf_counter()
            assert processes.gather(processes.map(workloads.identity, tiny, pure=False)) == tiny
            theirs += time.perf_counter() - start
        per = args.tiny * args.rounds
        print(f"{args.tiny} tiny items (identity), {args.rounds} rounds: ClusterPool.map "
              f"{ours / per * 1e6:.0f} us/item, client.map {theirs / per * 1e6:.0f} us/item")


if __name__ == "__main__":
    main()
