# mypy: disallow-untyped-calls=False
# (distributed's Client and LocalCluster methods carry no annotations, as in
# pyproject's override for interp_rpc.dask.)
"""The dask section of ./dev bench (issue 13): ClusterPool against plain dask,
side by side on LocalClusters of this machine, in the same run as the rest.

1. Pure-Python CPU work (count_primes), one task per item: ClusterPool on P
   processes x 1 subinterpreter, dask's client.map on the same P processes x
   1 thread, and dask on 1 process x P threads (which share one GIL). Each
   contender's map is timed right after the same items run serially in the
   caller; its speed-up is the ratio of the two, median over the rounds.
   Issue 13 asks for ClusterPool >= dask processes >= dask threads.
2. Tiny items (identity) on the P processes: ClusterPool.map (a few chunks
   per subinterpreter), client.map (one dask task per item) and
   dask.bag.from_sequence(items).map (the partitions dask picks), computed
   with client.compute. The dask tasks of every map are counted on the
   workers, so the per-task cost that chunking saves can be read off.

Every result is checked before its time counts. ./dev bench runs it once,
whatever --runs: its rounds give the spread. bench/dask_side_by_side.py runs
it alone.
"""

from __future__ import annotations

import functools
import os
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import distributed
import workloads

# dask.bag's own from_sequence: the package re-exports it without saying so (mypy).
from dask.bag.core import from_sequence

from harness.measures import log
from harness.report import TIMES, Target, fmt, target_rows, targets_json
from interp_rpc.dask import ClusterPool

BENCH = str(Path(__file__).resolve().parents[1])
# The subinterpreters import workloads from bench/, as the dask workers do.
INIT = f"import sys; sys.path.insert(0, {BENCH!r}); import workloads"
ISSUE = 13
# Warm-up items: count_primes(1000) returns at once.
WARM_LIMIT = 1_000
# Any free port: nothing reads the dashboard, and a fixed one clashes with
# other clusters on the machine.
DASHBOARD = ":0"

CLUSTERPOOL, DASK_PROCESSES, DASK_THREADS = "clusterpool", "dask-processes", "dask-threads"
CLUSTERPOOL_MAP, CLIENT_MAP, BAG_MAP = "clusterpool-map", "client-map", "bag-map"


@dataclass(frozen=True)
class Sizes:
    processes: int  # P
    items: int  # CPU items per round, one task each
    prime_limit: int  # each CPU item is count_primes(prime_limit)
    tiny: int  # identity items per tiny-item map
    rounds: int


FULL = Sizes(processes=2, items=8, prime_limit=200_000, tiny=2_000, rounds=5)
QUICK = Sizes(processes=2, items=4, prime_limit=20_000, tiny=200, rounds=1)


@dataclass(frozen=True)
class Speedups:
    label: str
    short: str  # its name in the targets
    rounds: list[float]  # serial time / the contender's time, one per round

    @property
    def median(self) -> float:
        return statistics.median(self.rounds)


@dataclass(frozen=True)
class TinyMaps:
    label: str
    items: int
    tasks: int  # dask tasks one map ran, counted on the workers
    seconds: list[float]  # one map of every item, per round

    @property
    def us_per_item(self) -> float:
        return statistics.median(self.seconds) / self.items * 1e6

    @property
    def us_per_task(self) -> float:
        return statistics.median(self.seconds) / self.tasks * 1e6


def _loadavg() -> tuple[float, ...]:
    return tuple(round(x, 2) for x in os.getloadavg())


def _shown(loadavg: tuple[float, ...]) -> str:
    return " ".join(f"{v:.2f}" for v in loadavg)


@dataclass(frozen=True)
class DaskSection:
    sizes: Sizes
    cpu: dict[str, Speedups]
    tiny: dict[str, TinyMaps]
    partitions: int  # those dask.bag.from_sequence picked for the tiny items
    load_before: tuple[float, ...]
    load_after: tuple[float, ...]

    @property
    def saved_us_per_item(self) -> float:
        """What one task per item costs beyond ClusterPool's chunks, per item."""
        return self.tiny[CLIENT_MAP].us_per_item - self.tiny[CLUSTERPOOL_MAP].us_per_item

    def targets(self) -> list[Target]:
        measure = (f"CPU speed-up, {self.sizes.processes} processes {TIMES} 1 core, "
                   f"{self.sizes.items} {TIMES} count_primes({self.sizes.prime_limit:,})")
        return [self._at_least(measure, CLUSTERPOOL, DASK_PROCESSES),
                self._at_least(measure, DASK_PROCESSES, DASK_THREADS)]

    def _at_least(self, measure: str, higher: str, lower: str) -> Target:
        mine, theirs = self.cpu[higher], self.cpu[lower]
        ratio = mine.median / theirs.median
        return Target(measure, f"{mine.short} ≥ {theirs.short}", ISSUE,
                      f"{mine.median:.2f}{TIMES} vs {theirs.median:.2f}{TIMES}: "
                      f"ratio {ratio:.3g}", "PASS" if ratio >= 1 else "MISS")

    def markdown(self) -> str:
        s = self.sizes
        cpu = ["| contender | speed-up (median) | rounds |", "|---|---|---|",
               *(f"| {c.label} | {c.median:.2f}{TIMES} | "
                 f"{', '.join(f'{v:.2f}' for v in c.rounds)} |" for c in self.cpu.values())]
        tiny = ["| contender | dask tasks per map | items per task | µs per item | µs per task "
                "| rounds, µs per item |", "|---|---|---|---|---|---|",
                *(f"| {t.label} | {t.tasks:,} | {fmt(t.items / t.tasks)} | {fmt(t.us_per_item)} "
                  f"| {fmt(t.us_per_task)} | "
                  f"{', '.join(fmt(v / t.items * 1e6) for v in t.seconds)} |"
                  for t in self.tiny.values())]
        ours, theirs = self.tiny[CLUSTERPOOL_MAP], self.tiny[CLIENT_MAP]
        return "\n".join([
            "### dask: ClusterPool against dask on one machine (issue 13)", "",
            f"LocalClusters of {s.processes} processes {TIMES} 1 thread and 1 process {TIMES} "
            f"{s.processes} threads on this machine; each number is the median of its "
            f"contender's rounds ({s.rounds}), measured once whatever `--runs`. Load average "
            f"(1, 5, 15 min): {_shown(self.load_before)} before, {_shown(self.load_after)} "
            "after.", "",
            f"{s.items} {TIMES} `count_primes({s.prime_limit:,})`, one task per item. Speed-up "
            "(higher is better) = the items' time run serially in the caller / the "
            "contender's time, each contender timed right after its own serial run, each "
            "round starting with the next contender.", "",
            *cpu, "",
            f"{s.tiny:,} tiny items (`identity`) on the {s.processes} processes (lower is "
            "better): a map's wall time per item and per dask task, the tasks counted on the "
            "workers.", "",
            *tiny, "",
            f"Chunking saves {fmt(self.saved_us_per_item)} µs per item: `client.map` pays "
            f"dask's cost per task on every item ({fmt(theirs.us_per_item)} µs), "
            f"`ClusterPool.map` once per chunk of {fmt(ours.items / ours.tasks)} items "
            f"({fmt(ours.us_per_item)} µs per item, "
            f"{theirs.us_per_item / ours.us_per_item:.3g} times less).", "",
            *target_rows(self.targets())]) + "\n"

    def as_json(self) -> dict[str, Any]:
        return {
            "sizes": asdict(self.sizes),
            "loadavg_before": list(self.load_before),
            "loadavg_after": list(self.load_after),
            "cpu": {key: {"label": c.label, "unit": "x", "median": c.median,
                          "min": min(c.rounds), "max": max(c.rounds), "rounds": c.rounds}
                    for key, c in self.cpu.items()},
            "tiny": {key: {"label": t.label, "tasks_per_map": t.tasks,
                           "us_per_item": t.us_per_item, "us_per_task": t.us_per_task,
                           "seconds": t.seconds}
                     for key, t in self.tiny.items()},
            "bag_partitions": self.partitions,
            "chunking_saves_us_per_item": self.saved_us_per_item,
            "targets": targets_json(self.targets()),
        }


def sizes(*, quick: bool, processes: int) -> Sizes:
    return replace(QUICK if quick else FULL, processes=processes)


def _in_turn(keys: list[str], index: int) -> list[str]:
    """Round ``index``'s order: each round starts with the next contender,
    so a slow moment of the machine favours no one."""
    start = index % len(keys)
    return keys[start:] + keys[:start]


def _timed_checked(run: Callable[[], object], expected: object, what: str) -> float:
    started = time.perf_counter()
    got = run()
    spent = time.perf_counter() - started
    if got != expected:
        raise AssertionError(f"{what} returned a wrong result: {got!r:.80} != {expected!r:.80}")
    return spent


def _tasks_run(client: distributed.Client) -> int:
    """Tasks every worker of the cluster has run so far. A lambda, which
    cloudpickle sends by value: the workers need not import this module."""
    counts: dict[str, int] = client.run(lambda dask_worker: dask_worker.state.executed_count)
    return sum(counts.values())


def _serial(items: list[int]) -> list[int]:
    return [workloads.count_primes(n) for n in items]


def _cpu(runs: dict[str, Callable[[list[int]], list[object]]], sizes: Sizes) -> dict[
        str, list[float]]:
    items = [sizes.prime_limit] * sizes.items
    expected = [workloads.count_primes(sizes.prime_limit)] * sizes.items
    warm = [WARM_LIMIT] * sizes.items  # at least one per process
    for key, run in runs.items():
        _timed_checked(functools.partial(run, warm),
                       [workloads.count_primes(WARM_LIMIT)] * len(warm), key)
    ratios: dict[str, list[float]] = {key: [] for key in runs}
    for index in range(sizes.rounds):
        log(f"dask: CPU round {index + 1} of {sizes.rounds}")
        for key in _in_turn(list(runs), index):
            # Right after its own serial baseline: a change of load on the
            # machine hits both sides of the ratio.
            serial = _timed_checked(functools.partial(_serial, items), expected,
                                    "the serial baseline")
            spent = _timed_checked(functools.partial(runs[key], items), expected, key)
            ratios[key].append(serial / spent)
    return ratios


def _tiny(maps: dict[str, Callable[[], object]], tiny: list[int], client: distributed.Client,
          rounds: int) -> tuple[dict[str, int], dict[str, list[float]]]:
    """Dask tasks per map and each round's seconds. The tasks are counted
    around every timed map, outside its time: a map that ran fewer than the
    others (results dask kept from an earlier one) does not count."""
    for key, run in maps.items():
        _timed_checked(run, tiny, key)  # warm: imports done, every process has run a task
    tasks: dict[str, set[int]] = {key: set() for key in maps}
    seconds: dict[str, list[float]] = {key: [] for key in maps}
    for index in range(rounds):
        log(f"dask: tiny-item round {index + 1} of {rounds}")
        for key in _in_turn(list(maps), index):
            before = _tasks_run(client)
            seconds[key].append(_timed_checked(maps[key], tiny, key))
            tasks[key].add(_tasks_run(client) - before)
    uneven = {key: sorted(counts) for key, counts in tasks.items() if len(counts) > 1}
    if uneven:
        raise AssertionError(f"maps of the same items ran different numbers of tasks: {uneven}")
    return {key: counts.pop() for key, counts in tasks.items()}, seconds


def measure(sizes: Sizes) -> DaskSection:
    """Starts the clusters, measures both parts, and closes them."""
    load_before = _loadavg()
    p = sizes.processes
    tiny = list(range(sizes.tiny))
    log(f"dask: starting LocalClusters of {p} processes x 1 thread and 1 process x {p} threads")
    with (distributed.LocalCluster(n_workers=p, threads_per_worker=1, processes=True,
                                   dashboard_address=DASHBOARD) as spread,
          distributed.LocalCluster(n_workers=1, threads_per_worker=p, processes=True,
                                   dashboard_address=DASHBOARD) as shared,
          distributed.Client(spread) as processes, distributed.Client(shared) as threads,
          ClusterPool(processes, init=INIT) as pool):
        for client in (processes, threads):
            client.run(sys.path.insert, 0, BENCH)

        def on_dask(client: distributed.Client, work: list[int]) -> list[object]:
            return list(client.gather(client.map(workloads.count_primes, work, pure=False)))

        cpu_labels = {
            CLUSTERPOOL: (f"ClusterPool, {p} processes {TIMES} 1 subinterpreter",
                          "ClusterPool"),
            DASK_PROCESSES: (f"dask `client.map`, {p} processes {TIMES} 1 thread",
                             "dask processes"),
            DASK_THREADS: (f"dask `client.map`, 1 process {TIMES} {p} threads", "dask threads"),
        }
        ratios = _cpu({
            CLUSTERPOOL: lambda work: list(pool.map("workloads.count_primes", work,
                                                    chunksize=1)),
            DASK_PROCESSES: lambda work: on_dask(processes, work),
            DASK_THREADS: lambda work: on_dask(threads, work),
        }, sizes)
        bag = from_sequence(tiny).map(workloads.identity)
        tiny_labels = {
            CLUSTERPOOL_MAP: "`ClusterPool.map` (default chunking)",
            CLIENT_MAP: "dask `client.map` (one task per item)",
            BAG_MAP: f"`dask.bag.from_sequence(items).map` ({bag.npartitions} partitions)",
        }
        tasks, seconds = _tiny({
            CLUSTERPOOL_MAP: lambda: list(pool.map("workloads.identity", tiny)),
            CLIENT_MAP: lambda: processes.gather(
                processes.map(workloads.identity, tiny, pure=False)),
            BAG_MAP: lambda: processes.compute(bag).result(),
        }, tiny, processes, sizes.rounds)
    return DaskSection(
        sizes=sizes,
        cpu={key: Speedups(label, short, ratios[key])
             for key, (label, short) in cpu_labels.items()},
        tiny={key: TinyMaps(label, sizes.tiny, tasks[key], seconds[key])
              for key, label in tiny_labels.items()},
        partitions=bag.npartitions, load_before=load_before, load_after=_loadavg())
