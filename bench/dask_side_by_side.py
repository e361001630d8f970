"""ClusterPool against plain dask, side by side, on one machine: the dask
section of ./dev bench (issue 13), alone.

    ./dev run -- python3 bench/dask_side_by_side.py [--quick] [--processes 2] [--items 8]
                                                    [--n 200000] [--tiny 2000] [--rounds 5]

Prints the section's markdown: CPU work (ClusterPool, dask processes, dask
threads), tiny items (ClusterPool.map, client.map, dask.bag), the per-task
cost that chunking saves, and issue 13's ordering as verdicts. What each
number means: harness/dask_section.py. Run it on a quiet machine.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import dask_section


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="./dev bench --quick's sizes; the options below override them")
    parser.add_argument("--processes", type=int, help=f"default {dask_section.FULL.processes}")
    parser.add_argument("--items", type=int, help=f"default {dask_section.FULL.items}")
    parser.add_argument("--n", type=int, dest="prime_limit",
                        help=f"count_primes(N) per item (default {dask_section.FULL.prime_limit})")
    parser.add_argument("--tiny", type=int, help=f"default {dask_section.FULL.tiny}")
    parser.add_argument("--rounds", type=int, help=f"default {dask_section.FULL.rounds}")
    args = parser.parse_args()
    base = dask_section.QUICK if args.quick else dask_section.FULL
    given = {name: value for name, value in vars(args).items()
             if name != "quick" and value is not None}
    print(dask_section.measure(dataclasses.replace(base, **given)).markdown(), end="", flush=True)


if __name__ == "__main__":
    main()
