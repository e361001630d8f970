"""How each cost grows with the work: interp-rpc's InterpreterPool against
InterpreterPoolExecutor and multiprocessing.Pool, side by side in one run.

Axes (each row one size, every contender measured once per round, rounds
interleaved so that a slow moment of the machine falls on all of them):

- ``map``: ``list(map(square, range(n)))`` with each contender's defaults,
  n = 10^3 to 10^7 (InterpreterPoolExecutor, at about 10^4 items a second,
  only up to 10^4);
- ``bytes argument`` / ``bytes result``: 1 KiB to 256 MiB crossing one way,
  plus a ``memoryview`` argument, and ``str`` and ``bytearray`` results. A
  pool in use: each round times a few calls in a row (8, and fewer from
  16 MiB up, so that a sample moves no more than 64 MiB; one call from 64
  MiB up) and keeps their mean. A single call finds its worker asleep, and
  waking an idle vCPU costs this VM hundreds of microseconds, more than a
  zero-copy call of any size takes;
- ``float list`` / ``int list``, as argument and as result: 10^3 to 10^7
  numbers (2^20 is the acceptance row). The argument's list is made once in
  the caller, the result's once in each worker (which returns it again):
  both time the crossing, not the making;
- ``Ctrl-C``: interp-rpc alone, Ctrl-C a third of the way into a map of 10^7 items:
  the time until KeyboardInterrupt, and until the pool answers again;
- ``workers``: W = 1 to 64, each sample in a fresh process: the time until
  W calls that each sleep 20 ms have all answered (minus those 20 ms), and
  the memory of the process and its children then.

Every cell is the median over the rounds, and every ratio is interp-rpc's
time over the contender's, per round, then the median (below 1: interp-rpc
is faster). W = 2 for all but the workers axis; multiprocessing uses
forkserver, Python 3.14's default on Linux.

    ./dev run -- python3 bench/scaling.py [--rounds 5] [--quick] [--axes map,workers]

It writes bench/results/scaling.{json,md,svg} (``--out-dir`` elsewhere).
"""

from __future__ import annotations

import _thread
import argparse
import concurrent.futures
import contextlib
import datetime
import functools
import json
import multiprocessing
import os
import platform
import signal
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import workloads
from harness.scaling_chart import draw

BENCH = Path(__file__).resolve().parent

WORKERS = 2
KiB, MiB = 1 << 10, 1 << 20
OURS, IPE, MP = "interp-rpc", "InterpreterPoolExecutor", "multiprocessing.Pool"
CONTENDERS = (OURS, IPE, MP)
#: The largest map InterpreterPoolExecutor is given (it maps ~10^4 items a second).
IPE_MAP_LIMIT = 10**4
#: Rounds for a row whose samples take a second or more.
FEW_ROUNDS = 3
#: Calls in a row in one sample of a payload row, and the most data they move.
IN_USE_CALLS = 8
IN_USE_BYTES = 64 * MiB
SLEEP_S = 0.02  # what each call of the workers axis sleeps


@dataclass
class Row:
    """One size of one axis: seconds per contender, one per round."""

    axis: str
    label: str
    size: int
    seconds: dict[str, list[float]] = field(default_factory=dict)
    memory: dict[str, list[int]] = field(default_factory=dict)

    def median(self, name: str) -> float | None:
        values = self.seconds.get(name)
        return statistics.median(values) if values else None

    def ratio(self, name: str) -> float | None:
        """interp-rpc's time over ``name``'s: the median of per-round ratios."""
        ours, theirs = self.seconds.get(OURS), self.seconds.get(name)
        if not ours or not theirs:
            return None
        return statistics.median(a / b for a, b in zip(ours, theirs, strict=False))


# --------------------------------------------------------------------- running

Run = Callable[[Callable[..., Any], tuple[Any, ...]], Any]
Map = Callable[[Callable[[Any], Any], Any], list[Any]]


@contextlib.contextmanager
def pools() -> Iterator[tuple[dict[str, Run], dict[str, Map]]]:
    from concurrent.futures import InterpreterPoolExecutor

    from interp_rpc import InterpreterPool

    context = multiprocessing.get_context("forkserver")
    with (InterpreterPool(workers=WORKERS, init="import workloads") as pool,
          InterpreterPoolExecutor(WORKERS) as ipe, context.Pool(WORKERS) as mp):
        calls: dict[str, Run] = {
            OURS: lambda fn, args: pool.call(fn, *args),
            IPE: lambda fn, args: ipe.submit(fn, *args).result(),
            MP: lambda fn, args: mp.apply(fn, args),
        }
        maps: dict[str, Map] = {
            OURS: lambda fn, items: list(pool.map(fn, items)),
            IPE: lambda fn, items: list(ipe.map(fn, items)),
            MP: lambda fn, items: mp.map(fn, items),
        }
        for run in calls.values():  # warm: workers started, workloads imported
            run(workloads.warm, (0.05,))
        yield calls, maps


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    started = time.perf_counter()
    value = fn()
    return time.perf_counter() - started, value


def rounds_for(size_bytes: int, rounds: int) -> int:
    return FEW_ROUNDS if size_bytes >= 64 * MiB else rounds


def measure_rows(rows: list[Row], runs: dict[str, Callable[[Row], Any]], rounds: int,
                 check: Callable[[Row, Any], None], weight: Callable[[Row], int],
                 warm_every_worker: Callable[[Row], bool] = lambda row: False,
                 calls_in_a_row: Callable[[Row], int] = lambda row: 1) -> None:
    """``warm_every_worker(row)``: warm that row in every worker, not once.
    ``calls_in_a_row(row)``: a sample is the mean of that many runs in a row."""
    for row in rows:
        for name, run in runs.items():  # warm each size once: first pages, imports
            if run_allowed(row, name):
                for value in (on_every_worker(run, row) if warm_every_worker(row)
                              else [run(row)]):
                    check(row, value)
        repeats = calls_in_a_row(row)
        for _ in range(rounds_for(weight(row), rounds)):
            for name, run in runs.items():
                if run_allowed(row, name):
                    seconds, value = timed(
                        functools.partial(in_a_row, run, row, repeats, check))
                    row.seconds.setdefault(name, []).append(seconds / repeats)
                    del value
        print(f"  {row.axis}: {row.label}", file=sys.stderr, flush=True)


def in_a_row(run: Callable[[Row], Any], row: Row, repeats: int,
             check: Callable[[Row, Any], None]) -> Any:
    """``repeats`` runs, each checked. The last value is returned, so that
    freeing it falls outside the timing, as a single run's does."""
    value = None
    for _ in range(repeats):
        value = run(row)
        check(row, value)
    return value


def on_every_worker(run: Callable[[Row], Any], row: Row) -> list[Any]:
    """W runs at once, from W threads: each of the W workers takes one (a
    worker runs one call at a time, and each of these takes a while)."""
    with concurrent.futures.ThreadPoolExecutor(WORKERS) as threads:
        return list(threads.map(lambda _: run(row), range(WORKERS)))


def run_allowed(row: Row, name: str) -> bool:
    if row.axis == "map" and name == IPE:
        return row.size <= IPE_MAP_LIMIT
    return True


def map_rows(sizes: list[int], calls: dict[str, Run], maps: dict[str, Map],
             rounds: int) -> list[Row]:
    rows = [Row("map", f"map(square, range({n:,}))", n) for n in sizes]

    def check(row: Row, value: Any) -> None:
        assert len(value) == row.size and value[-1] == (row.size - 1) ** 2

    def mapping(run: Map) -> Callable[[Row], Any]:
        return lambda row: run(workloads.square, range(row.size))

    measure_rows(rows, {name: mapping(run) for name, run in maps.items()}, rounds, check,
                 lambda row: row.size * 8)
    return rows


def payload_rows(sizes: list[int], calls: dict[str, Run], rounds: int) -> list[Row]:
    arguments = [Row("bytes argument", f"{size_label(s)} bytes", s) for s in sizes]
    # Neither peer takes a memoryview (pickle and InterpreterPoolExecutor
    # refuse it): they send the same bytes, their fastest way.
    arguments += [Row("bytes argument", f"memoryview of {size_label(s)} (peers: bytes)", s)
                  for s in sizes if s >= MiB]
    results = [Row("bytes result", f"{size_label(s)} bytes", s) for s in sizes]
    results += [Row("bytes result", f"{size_label(s)}-character str", s)
                for s in sizes if s >= MiB]
    results += [Row("bytes result", f"{size_label(s)} bytearray", s) for s in sizes if s >= MiB]
    data: dict[int, bytes] = {}

    def argument(row: Row, call: Run) -> Any:
        if row.size not in data:  # made once, outside the timed calls
            data[row.size] = workloads.filled_bytes(row.size)
        value = data[row.size]
        zero_copy = row.label.startswith("memoryview") and call is calls[OURS]
        return call(workloads.payload_len, (memoryview(value) if zero_copy else value,))

    made = {"str": workloads.filled_str, "bytearray": workloads.filled_bytearray,
            "bytes": workloads.filled_bytes}

    def result(row: Row, call: Run) -> Any:
        return call(made[row.label.rsplit(" ", 1)[-1]], (row.size,))

    def check_argument(row: Row, value: Any) -> None:
        assert value == row.size

    def check_result(row: Row, value: Any) -> None:
        assert len(value) == row.size
        assert type(value).__name__ == row.label.rsplit(" ", 1)[-1]

    for rows, runner, check in ((arguments, argument, check_argument),
                                (results, result, check_result)):
        measure_rows(rows, {name: bind(runner, call) for name, call in calls.items()},
                     rounds, check, lambda row: row.size,
                     calls_in_a_row=lambda row: in_use_calls(row.size))
    data.clear()
    return arguments + results


def in_use_calls(size: int) -> int:
    """Calls in a row per sample of a payload of ``size`` bytes."""
    return max(1, min(IN_USE_CALLS, IN_USE_BYTES // size))


def number_rows(sizes: list[int], calls: dict[str, Run], rounds: int) -> list[Row]:
    rows = [Row(f"{kind} list {way}", f"{n:,} {kind}s", n)
            for kind in ("float", "int") for way in ("argument", "result") for n in sizes]
    lists: dict[tuple[str, int], list[Any]] = {}

    def make(kind: str, n: int) -> list[Any]:
        return workloads.floats(n) if kind == "float" else workloads.ints(n)

    def run(row: Row, call: Run) -> Any:
        kind = row.axis.split()[0]
        if row.axis.endswith("argument"):
            if (kind, row.size) not in lists:  # made once, outside the timed calls
                lists[kind, row.size] = make(kind, row.size)
            return call(workloads.count, (lists[kind, row.size],))
        # A list the worker holds: the crossing, not the making (see held_floats).
        target = workloads.held_floats if kind == "float" else workloads.held_ints
        return call(target, (row.size,))

    def check(row: Row, value: Any) -> None:
        if row.axis.endswith("argument"):
            assert value == row.size
        else:
            assert len(value) == row.size and type(value[-1]) is (
                float if row.axis.startswith("float") else int)

    measure_rows(rows, {name: bind(run, call) for name, call in calls.items()},
                 rounds, check, lambda row: row.size * 8,
                 warm_every_worker=lambda row: row.axis.endswith("result"))
    return rows


def bind(runner: Callable[[Row, Run], Any], call: Run) -> Callable[[Row], Any]:
    """``runner`` calling through one contender."""
    return lambda row: runner(row, call)


def size_label(size: int) -> str:
    return f"{size // MiB} MiB" if size >= MiB else f"{size // KiB} KiB"


# ------------------------------------------------------------------ Ctrl-C

INTERRUPT_AXIS = "Ctrl-C during a map of 10^7 items"
#: When Ctrl-C comes, as a part of the map's own time (the quickest of three
#: uninterrupted maps, timed first): its chunks are running, on a quiet
#: machine as on a busy one.
INTERRUPT_AT = 1 / 3


@contextlib.contextmanager
def keyboard_interrupts(notes: list[str]) -> Iterator[None]:
    """Ctrl-C raises KeyboardInterrupt while the axis runs, as in a terminal.

    A process started in the background by a shell without job control (``cmd
    &`` in a script, a CI step) inherits SIGINT ignored, and Python then
    leaves it ignored: Ctrl-C, and ``_thread.interrupt_main()`` which stands
    in for it here, would do nothing at all. The axis measures what a user at
    a terminal sees, so it installs Python's own handler, says so in a note,
    and puts back what it found."""
    found = signal.getsignal(signal.SIGINT)
    if found is signal.default_int_handler:
        yield
        return
    notes.append(f"SIGINT's handler was {found!r} when this axis began (a process started in "
                 "the background by a shell without job control inherits SIGINT ignored); "
                 "the axis installed Python's default handler, as in a terminal.")
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, found)


def interrupt_rows(calls: dict[str, Run], maps: dict[str, Map],
                   rounds: int) -> tuple[list[Row], list[str]]:
    """interp-rpc only (the acceptance row): how long from Ctrl-C until the
    map raises KeyboardInterrupt, and until the pool answers the next call.
    With them, a note for each round whose Ctrl-C came during the map and
    was lost: the map ended normally, with no KeyboardInterrupt."""
    notes: list[str] = []
    with keyboard_interrupts(notes):
        rows = interrupt_rounds(calls, maps, rounds, notes)
    return rows, notes


def interrupt_rounds(calls: dict[str, Run], maps: dict[str, Map], rounds: int,
                     notes: list[str]) -> list[Row]:
    raised = Row(INTERRUPT_AXIS, "until KeyboardInterrupt", 10**7)
    served = Row(INTERRUPT_AXIS, "until the next call answers", 10**7)
    pressed: list[float] = []

    def press() -> None:
        pressed.append(time.perf_counter())
        _thread.interrupt_main()

    whole = min(timed(lambda: maps[OURS](workloads.square, range(10**7)))[0] for _ in range(3))
    for round_number in range(1, rounds + 1):
        pressed.clear()
        timer = threading.Timer(whole * INTERRUPT_AT, press)
        started = time.perf_counter()
        timer.start()
        try:
            maps[OURS](workloads.square, range(10**7))
        except KeyboardInterrupt:
            caught = time.perf_counter()
        else:
            took = time.perf_counter() - started
            timer.cancel()
            if not pressed:
                raise RuntimeError(f"the map of 10^7 items ended after {took:.3f} s, before "
                                   f"Ctrl-C, which was to come {whole * INTERRUPT_AT:.3f} s "
                                   "into it")
            notes.append(f"Round {round_number}: **Ctrl-C lost**. It came "
                        f"{pressed[0] - started:.3f} s into the map, which went on to end "
                        f"normally after {took:.3f} s, with no KeyboardInterrupt.")
            continue
        calls[OURS](workloads.identity, (1,))
        raised.seconds.setdefault(OURS, []).append(caught - pressed[0])
        served.seconds.setdefault(OURS, []).append(time.perf_counter() - pressed[0])
    print(f"  {INTERRUPT_AXIS}", file=sys.stderr, flush=True)
    return [raised, served]


# ------------------------------------------------------------- workers axis

PROBE = """
import os, sys, time
sys.path.insert(0, {bench!r})
import workloads
name, workers, sleep = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])

def rss_kib(pid):
    with open(f"/proc/{{pid}}/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmRSS"))

def tree_kib():
    seen, todo, total = set(), [os.getpid()], 0
    while todo:
        pid = todo.pop()
        if pid in seen:
            continue
        seen.add(pid)
        try:
            total += rss_kib(pid)
        except OSError:
            continue
        for entry in os.listdir("/proc"):
            if entry.isdigit() and int(entry) not in seen:
                try:
                    with open(f"/proc/{{entry}}/stat") as stat:
                        if int(stat.read().rsplit(")", 1)[1].split()[1]) == pid:
                            todo.append(int(entry))
                except OSError:
                    pass
    return total

if __name__ == "__main__":
    started = time.perf_counter()
    if name == {ours!r}:
        from interp_rpc import InterpreterPool
        pool = InterpreterPool(workers=workers, init="import workloads")
        futures = [pool.submit(workloads.warm, sleep) for _ in range(workers)]
        [f.result() for f in futures]
    elif name == {ipe!r}:
        from concurrent.futures import InterpreterPoolExecutor
        pool = InterpreterPoolExecutor(workers)
        [f.result() for f in [pool.submit(workloads.warm, sleep) for _ in range(workers)]]
    else:
        import multiprocessing
        pool = multiprocessing.get_context("forkserver").Pool(workers)
        [r.get() for r in [pool.apply_async(workloads.warm, (sleep,)) for _ in range(workers)]]
    ready = time.perf_counter() - started - sleep
    print("RESULT", ready, tree_kib() * 1024, flush=True)
    if name == {mp!r}:
        pool.terminate()
    elif name == {ipe!r}:
        pool.shutdown()
    else:
        pool.close()
"""


def workers_rows(sizes: list[int], rounds: int) -> list[Row]:
    rows = [Row("workers", f"W = {w}", w) for w in sizes]
    script = PROBE.format(bench=str(BENCH), ours=OURS, ipe=IPE, mp=MP)
    for row in rows:
        for _ in range(min(rounds, FEW_ROUNDS)):
            for name in CONTENDERS:
                done = subprocess.run([sys.executable, "-c", script, name, str(row.size),
                                       str(SLEEP_S)], capture_output=True, text=True,
                                      timeout=600, check=False, cwd=BENCH)
                line = next((ln for ln in done.stdout.splitlines() if ln.startswith("RESULT")),
                            None)
                if line is None:
                    raise RuntimeError(f"{name} with {row.size} workers failed:\n{done.stderr}")
                _, ready, memory = line.split()
                row.seconds.setdefault(name, []).append(float(ready))
                row.memory.setdefault(name, []).append(int(memory))
        print(f"  workers: {row.label}", file=sys.stderr, flush=True)
    return rows


# -------------------------------------------------------------------- report

def fmt_seconds(value: float | None) -> str:
    if value is None:
        return "—"
    if value >= 1:
        return f"{value:.2f} s"
    if value >= 1e-3:
        return f"{value * 1e3:.1f} ms"
    return f"{value * 1e6:.0f} µs"


def fmt_ratio(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}"


def report(rows: list[Row], rounds: int, took: float, notes: list[str]) -> str:
    lines = [
        f"# Scaling side by side, {datetime.date.today()}",
        "",
        f"{platform.node()}, {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f} at "
        f"the end; Python {platform.python_version()}; W = {WORKERS} but on the workers axis; "
        f"median of {rounds} interleaved rounds ({FEW_ROUNDS} for the largest rows and the "
        f"workers axis); the run took {took / 60:.1f} min. Ratios: interp-rpc's time over "
        "the contender's (below 1: interp-rpc is faster). The bytes rows time a pool in "
        f"use: a sample is {IN_USE_CALLS} calls in a row (as many as move "
        f"{IN_USE_BYTES // MiB} MiB from 16 MiB up; one from {IN_USE_BYTES // MiB} MiB up), "
        "and the time per call.",
    ]
    for axis in dict.fromkeys(row.axis for row in rows):
        mine = [row for row in rows if row.axis == axis]
        lines += ["", f"## {axis}", "",
                  "| | " + " | ".join(CONTENDERS) + f" | ratio to {IPE} | ratio to {MP} |",
                  "|---|" + "---:|" * (len(CONTENDERS) + 2)]
        for row in mine:
            cells = [fmt_seconds(row.median(name)) for name in CONTENDERS]
            lines.append(f"| {row.label} | " + " | ".join(cells) + f" | {fmt_ratio(row.ratio(IPE))}"
                         f" | {fmt_ratio(row.ratio(MP))} |")
        if axis == "workers":
            lines += ["", "Memory of the process and its children, once ready (MiB):", "",
                      "| | " + " | ".join(CONTENDERS) + " |", "|---|" + "---:|" * len(CONTENDERS)]
            for row in mine:
                lines.append(f"| {row.label} | " + " | ".join(
                    f"{statistics.median(row.memory[n]) / MiB:.0f}" if row.memory.get(n) else "—"
                    for n in CONTENDERS) + " |")
        if axis == INTERRUPT_AXIS and notes:
            lines += ["", *notes]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="small sizes only, 1 round")
    parser.add_argument("--axes", default="map,payload,numbers,interrupt,workers")
    parser.add_argument("--out-dir", type=Path, default=BENCH / "results")
    args = parser.parse_args()
    axes = set(args.axes.split(","))
    rounds = 1 if args.quick else args.rounds
    map_sizes = [10**3, 10**4, 10**5] if args.quick else [10**3, 10**4, 10**5, 10**6, 10**7]
    payload_sizes = ([KiB, MiB] if args.quick else [KiB, 64 * KiB, MiB, 16 * MiB, 256 * MiB])
    number_sizes = [10**3, 10**4] if args.quick else [10**3, 10**4, 10**5, 2**20, 10**7]
    worker_sizes = [1, 2] if args.quick else [1, 2, 4, 8, 16, 32, 64]
    started = time.perf_counter()
    rows: list[Row] = []
    notes: list[str] = []
    with pools() as (calls, maps):
        if "map" in axes:
            rows += map_rows(map_sizes, calls, maps, rounds)
        if "payload" in axes:
            rows += payload_rows(payload_sizes, calls, rounds)
        if "numbers" in axes:
            rows += number_rows(number_sizes, calls, rounds)
        if "interrupt" in axes:
            interrupted, notes = interrupt_rows(calls, maps, rounds)
            rows += interrupted
    if "workers" in axes:
        rows += workers_rows(worker_sizes, rounds)
    took = time.perf_counter() - started
    text = report(rows, rounds, took, notes)
    print(text, end="")
    args.out_dir.mkdir(parents=True, exist_ok=True)
    (args.out_dir / "scaling.md").write_text(text)
    (args.out_dir / "scaling.json").write_text(json.dumps({
        "date": str(datetime.date.today()), "machine": platform.node(),
        "cores": os.cpu_count(), "python": platform.python_version(), "workers": WORKERS,
        "rounds": rounds, "notes": notes, "rows": [
            {"axis": r.axis, "label": r.label, "size": r.size, "seconds": r.seconds,
             "memory_bytes": r.memory} for r in rows]}, indent=1) + "\n")
    (args.out_dir / "scaling.svg").write_text(draw(
        [(r.axis, r.size, {n: r.median(n) for n in CONTENDERS}) for r in rows
         if r.axis != INTERRUPT_AXIS
         and not r.label.startswith(("memoryview", f"{size_label(r.size)}-character"))
         and not r.label.endswith("bytearray")],
        CONTENDERS))


if __name__ == "__main__":
    main()
