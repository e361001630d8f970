"""Chaos soak: many threads mixing every pool operation and fault at random.

Several threads pick, at random: call, submit, map, calls that time out,
kill_worker (interp_rpc.testing), Ctrl-C delivered to the main thread while
it waits on the pool, close() (sometimes from two threads at once), new pools
(the old one closed or simply dropped), and arguments or results that cannot
cross. Invariants checked at the end:

- every future settles;
- when close() without a timeout returns, no call of that pool is still
  waiting, and with a timeout, none waits for more than a minute;
- RSS and ``concurrent.interpreters.list_all()`` return to their baseline;
- the process exits with the code the program asked for, even with a call
  still running at exit.

The pytest test runs a short soak in a subprocess. Run it longer directly:

    ./dev run -- python3 tests/interp_rpc/pool/test_chaos.py --minutes 30
"""

from __future__ import annotations

import _thread
import argparse
import concurrent.futures
import concurrent.interpreters
import contextlib
import gc
import os
import random
import signal
import subprocess
import sys
import threading
import time
import warnings
from collections import Counter
from concurrent.futures import CancelledError, Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).parents[1] / "fixtures"
if str(FIXTURES) not in sys.path:
    sys.path.insert(0, str(FIXTURES))

from interp_rpc import (  # noqa: E402 - workers need FIXTURES on sys.path first
    CallTimeoutError,
    InterpreterPool,
    PoolBrokenError,
    PoolClosedError,
    ShareabilityError,
    WorkerDiedError,
)
from interp_rpc.testing import kill_worker  # noqa: E402

#: Errors the pool may raise under chaos; anything else is a failure.
EXPECTED = (PoolClosedError, PoolBrokenError, WorkerDiedError, CallTimeoutError,
            CancelledError, ShareabilityError)
WORKERS = 2
#: Allowed RSS growth over the soak (allocator arenas are not all returned).
RSS_SLACK = 96 * 1024 * 1024


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@dataclass
class Report:
    """What happened. The main thread, which receives Ctrl-C at any moment,
    never takes a lock here (a KeyboardInterrupt raised right after acquiring
    one would leak it): counters are per thread, lists are appended to."""

    operations: Counter[str] = field(default_factory=Counter)
    faults: Counter[str] = field(default_factory=Counter)
    failures: list[str] = field(default_factory=list)
    close_seconds: list[float] = field(default_factory=list)
    per_thread: list[Report] = field(default_factory=list)

    def count(self, table: Counter[str], name: str) -> None:
        table[name] += 1  # each thread counts into its own Report

    def fail(self, message: str) -> None:
        self.failures.append(message)

    def merged(self) -> Report:
        total = Report(failures=self.failures, close_seconds=self.close_seconds)
        for part in [self, *self.per_thread]:
            total.operations.update(part.operations)
            total.faults.update(part.faults)
        return total


class Chaos:
    def __init__(self, seconds: float, seed: int) -> None:
        self.deadline = time.monotonic() + seconds
        self.seed = seed
        self.report = Report()
        self.lock = threading.Lock()
        self.pool = self.new_pool()
        self.futures: list[Future[Any]] = []
        self.main_waiting = threading.Event()  # the main thread waits on the pool

    def new_pool(self) -> InterpreterPool:
        return InterpreterPool(workers=WORKERS, init="import pooltasks")

    def current(self) -> InterpreterPool:
        with self.lock:
            return self.pool

    def replace(self, old: InterpreterPool, close: bool, counts: Report) -> None:
        with self.lock:
            if self.pool is not old:
                return
            self.pool = self.new_pool()
        counts.count(counts.operations, "pool created")
        if close:
            self.close(old, None)
        else:
            counts.count(counts.faults, "pool dropped unclosed")

    def close(self, pool: InterpreterPool, timeout: float | None) -> None:
        with self.lock:
            pending = [f for f in self.futures if getattr(f, "_pool", None) is pool]
        started = time.monotonic()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # a stuck worker is named
            pool.close(timeout=timeout)
        self.report.close_seconds.append(time.monotonic() - started)
        # close() with no timeout saw every call end. With one, it may return
        # first: then it cancelled the queued calls, and the running ones end
        # on their own; none may wait forever.
        waiting = ([f for f in pending if not f.done()] if timeout is None
                   else concurrent.futures.wait(pending, timeout=60).not_done)
        if waiting:
            self.report.fail(f"{len(waiting)} call(s) still waiting after close("
                             f"timeout={timeout}) returned")

    def main_step(self, rng: random.Random, counts: Report) -> None:
        """The main thread only waits on the pool (where Ctrl-C reaches it),
        and takes no lock: see Report."""
        pool = self.pool
        if pool.closed or pool.broken:
            time.sleep(0.005)  # another thread is replacing it: do not spin on refusals
            return
        action = rng.choice(["call", "map", "timeout"])
        counts.count(counts.operations, f"main {action}")
        self.main_waiting.set()
        try:
            if action == "call":
                pool.call("pooltasks.sleep_then", rng.choice([0, 0.01, 0.05]), 1)
            elif action == "map":
                list(pool.map("pooltasks.square", range(rng.randrange(0, 300))))
            else:
                pool.call("time.sleep", 0.1, timeout=0.02)
        finally:
            self.main_waiting.clear()

    # One random operation on the current pool.
    def step(self, rng: random.Random, counts: Report) -> None:
        pool = self.current()
        action = rng.choices(
            ["call", "submit", "map", "timeout", "kill", "close", "close twice", "new pool",
             "drop pool", "unpicklable argument", "unpicklable result", "interrupt"],
            weights=[30, 25, 10, 8, 3, 2, 1, 1, 1, 4, 4, 3])[0]
        counts.count(counts.operations, action)
        if action == "call":
            value = rng.randrange(1000)
            if pool.call("pooltasks.square", value) != value * value:
                self.report.fail("a call returned a wrong result")
        elif action == "submit":
            futures = [pool.submit("pooltasks.sleep_then", rng.choice([0, 0, 0.01]), i)
                       for i in range(rng.randrange(1, 8))]
            with self.lock:
                self.futures.extend(futures)
            if rng.random() < 0.5:
                futures[0].add_done_callback(lambda _f: None)
        elif action == "map":
            items = list(range(rng.randrange(0, 300)))
            if list(pool.map("pooltasks.square", items)) != [i * i for i in items]:
                self.report.fail("a map returned wrong results")
        elif action == "timeout":
            pool.call("time.sleep", rng.choice([0.02, 0.1]), timeout=rng.choice([0, 0.005, 0.05]))
        elif action == "kill":
            counts.count(counts.faults, "kill_worker")
            with contextlib.suppress(ValueError):  # already dead
                kill_worker(pool, rng.randrange(WORKERS), during_next_call=rng.random() < 0.5)
            if pool.broken:
                self.replace(pool, close=rng.random() < 0.5, counts=counts)
        elif action == "close":
            self.close(pool, rng.choice([None, 0.0, 0.05]))
            self.replace(pool, close=False, counts=counts)
        elif action == "close twice":
            counts.count(counts.faults, "close from two threads")
            other = threading.Thread(target=self.close, args=(pool, None))
            other.start()
            self.close(pool, None)
            other.join()
            self.replace(pool, close=False, counts=counts)
        elif action == "new pool":
            self.replace(pool, close=True, counts=counts)
        elif action == "drop pool":
            self.replace(pool, close=False, counts=counts)
        elif action == "unpicklable argument":
            try:
                pool.call("pooltasks.identity", threading.Lock())
                self.report.fail("an unpicklable argument crossed")
            except ShareabilityError:
                pass
        elif action == "unpicklable result":
            try:
                pool.call("pooltasks.return_unpicklable")
                self.report.fail("an unpicklable result crossed")
            except ShareabilityError:
                pass
        elif action == "interrupt":
            if self.main_waiting.is_set():
                counts.count(counts.faults, "Ctrl-C")
                _thread.interrupt_main()

    def actor(self, seed: int, on_main: bool) -> None:
        rng = random.Random(seed)
        counts = Report()
        self.report.per_thread.append(counts)
        while time.monotonic() < self.deadline:
            try:
                if on_main:
                    self.main_step(rng, counts)
                else:
                    self.step(rng, counts)
            except KeyboardInterrupt:
                if not on_main:
                    raise
                counts.count(counts.operations, "interrupted")
            except EXPECTED as exc:
                counts.count(counts.operations, f"raised {type(exc).__name__}")
            except BaseException as exc:
                self.report.fail(f"{type(exc).__name__}: {exc}")

    def run(self, threads: int) -> Report:
        actors = [threading.Thread(target=self.actor, args=(self.seed + i, False))
                  for i in range(1, threads)]
        for actor in actors:
            actor.start()
        self.actor(self.seed, True)
        for actor in actors:
            actor.join()
        # A Ctrl-C sent just as the main thread stopped waiting lands here.
        try:
            time.sleep(0.2)
        except KeyboardInterrupt:
            self.report.count(self.report.operations, "interrupted")
        with self.lock:
            futures = list(self.futures)
        _, not_done = concurrent.futures.wait(futures, timeout=120)
        if not_done:
            self.report.fail(f"{len(not_done)} future(s) never settled")
        self.close(self.pool, 60)
        return self.report.merged()


def soak(seconds: float, seed: int, threads: int, exit_code: int) -> None:
    # Main interpreter only (workers import this script, and these refuse
    # subinterpreters).
    import faulthandler

    from interp_rpc import _core

    signal.signal(signal.SIGINT, signal.default_int_handler)
    # A hang is a failure too: show where every thread is, and end.
    faulthandler.dump_traceback_later(seconds + 180, exit=True)
    faulthandler.register(signal.SIGUSR1, all_threads=True)  # kill -USR1: where is it?
    with InterpreterPool(workers=WORKERS, init="import pooltasks") as warm:
        list(warm.map("pooltasks.square", range(1000)))
    gc.collect()
    baseline_rss = rss_bytes()
    baseline_interpreters = len(concurrent.interpreters.list_all())
    started = time.monotonic()
    report = Chaos(seconds, seed).run(threads)
    gc.collect()
    for engine in _core.open_engines():  # pools dropped without close()
        engine.close(cancel_pending=True, timeout=60)
    deadline = time.monotonic() + 60
    while (len(concurrent.interpreters.list_all()) != baseline_interpreters
           and time.monotonic() < deadline):
        time.sleep(0.05)
    interpreters = len(concurrent.interpreters.list_all())
    if interpreters != baseline_interpreters:
        report.fail(f"{interpreters} interpreters left, {baseline_interpreters} at the start")
    gc.collect()
    grown = rss_bytes() - baseline_rss
    if grown > RSS_SLACK:
        report.fail(f"RSS grew by {grown / 2**20:.0f} MB")
    calls = sum(n for name, n in report.operations.items() if not name.startswith("raised"))
    print(f"chaos: {time.monotonic() - started:.0f} s, seed {seed}, {threads} threads, "
          f"{calls} operations, {sum(report.faults.values())} faults injected, "
          f"worst close {max(report.close_seconds, default=0):.3f} s, RSS {grown / 2**20:+.1f} MB")
    print(f"chaos: operations {dict(sorted(report.operations.items()))}")
    print(f"chaos: faults {dict(sorted(report.faults.items()))}", flush=True)
    for failure in report.failures:
        print(f"chaos FAILURE: {failure}", flush=True)
    if report.failures:
        sys.exit(99)
    # Exit with a call still running: the process must keep its status.
    stuck = InterpreterPool(workers=1)
    stuck.submit("time.sleep", 3)
    while stuck.status()[0].state != "busy":
        time.sleep(0.01)
    print("chaos: exiting with a call still running", flush=True)
    sys.exit(exit_code)


def test_chaos_soak() -> None:
    seconds = float(os.environ.get("INTERP_RPC_CHAOS_SECONDS", "8"))
    seed = random.randrange(1 << 30)
    result = subprocess.run(
        [sys.executable, __file__, "--seconds", str(seconds), "--seed", str(seed),
         "--exit-code", "7"],
        capture_output=True, text=True, timeout=seconds + 240)
    assert "chaos FAILURE" not in result.stdout, result.stdout + result.stderr
    for sign in ("Fatal Python error", "Segmentation", "Aborted", "terminate called"):
        assert sign not in result.stderr, result.stderr
    assert result.returncode == 7, result.stdout + result.stderr
    assert "exiting with a call still running" in result.stdout


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    length = parser.add_mutually_exclusive_group()
    length.add_argument("--minutes", type=float)
    length.add_argument("--seconds", type=float)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--exit-code", type=int, default=0)
    options = parser.parse_args()
    duration = (options.minutes * 60 if options.minutes is not None
                else options.seconds if options.seconds is not None else 10.0)
    soak(duration, options.seed if options.seed is not None else random.randrange(1 << 30),
         options.threads, options.exit_code)
