"""ClusterPool against plain dask, side by side, on one machine.

The dask section of ./dev bench (issue 13), alone:

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
    full = dask_section.FULL
    parser.add_argument("--processes", type=int, metavar="P",
                        help="P processes x 1 thread, and 1 process x P threads "
                             f"(default {full.processes})")
    parser.add_argument("--items", type=int, metavar="K",
                        help=f"CPU items per round, one task each (default {full.items})")
    parser.add_argument("--n", type=int, dest="prime_limit", metavar="N",
                        help=f"each CPU item is count_primes(N) (default {full.prime_limit})")
    parser.add_argument("--tiny", type=int, metavar="T",
                        help=f"tiny items per map (default {full.tiny})")
    parser.add_argument("--rounds", type=int, metavar="R", help=f"default {full.rounds}")
    args = parser.parse_args()
    base = dask_section.QUICK if args.quick else full
    given = {name: value for name, value in vars(args).items()
             if name != "quick" and value is not None}
    print(dask_section.measure(dataclasses.replace(base, **given)).markdown(), end="", flush=True)


if __name__ == "__main__":
    main()
