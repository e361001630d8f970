"""The five measures, each contender in turn, into one Run.

Every result a contender returns is checked before its time counts, so a fast
wrong answer cannot pass for a fast right one. An exception from a contender
becomes an "error" note for that measure and the run goes on; only the
payload measure treats a refused argument as an outcome ("fails"), because
refusing an argument type is something a contender does, not a harness bug.
"""

from __future__ import annotations

import faulthandler
import functools
import os
import statistics
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import workloads

from harness.config import Config, MiB
from harness.contenders import CallLost, Contender, InterpRpcSession, Sequential, Session
from harness.interference import metered
from harness.results import INTERFERENCE, Run, percentile
from harness.sampling import Sampling, sample_blocking

PROBE = Path(__file__).resolve().parents[1] / "ready_probe.py"
PAYLOAD_KINDS = ("bytes", "bytearray", "memoryview")
SESSION_MEASURES = ("latency", "map", "payload")
HUNG_EXIT_CODE = 3

Payload = bytes | bytearray | memoryview


def log(message: str) -> None:
    """Progress goes to stderr: stdout carries only the markdown report."""
    print(f"[bench] {message}", file=sys.stderr, flush=True)


def workers_case(workers: int) -> str:
    return f"W={workers}"


def payload_case(kind: str, size: int) -> str:
    return f"{kind} {size // MiB} MiB"


@contextmanager
def watchdog(what: str, seconds: float) -> Iterator[None]:
    """Ends the process, every thread's stack on stderr, if the block hangs.

    A contender that never returns (a lost wake-up, a deadlock) would
    otherwise hang the benchmark, and ./dev test with it, for good. A blocked
    call cannot be interrupted, and a hung run has no result worth keeping.
    """
    def expire() -> None:
        log(f"HUNG: {what} took more than {seconds:g} s; the stack of every thread follows")
        faulthandler.dump_traceback(all_threads=True)
        os._exit(HUNG_EXIT_CODE)

    timer = threading.Timer(seconds, expire)
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()


def _note_error(run: Run, measure: str, case: str, contender: str) -> None:
    exc = sys.exception()
    log(f"ERROR in {measure} ({case}) for {contender}:\n{traceback.format_exc()}")
    run.note((measure, case, contender, "error"), "error", f"{type(exc).__name__}: {exc}")


@contextmanager
def _errors_noted(run: Run, measure: str, case: str, contender: str) -> Iterator[None]:
    try:
        yield
    except Exception:
        _note_error(run, measure, case, contender)


def _not_applicable(run: Run, contender: Contender, measure: str, case: str,
                    metric: str) -> bool:
    """Notes why, and returns True, when ``metric`` does not apply to ``contender``."""
    reason = contender.na_reason(measure, metric)
    if reason is not None:
        run.note((measure, case, contender.key, metric), "n/a", reason)
    return reason is not None


def _expect(got: object, expected: object, what: str) -> None:
    if got != expected:
        raise AssertionError(f"{what} returned a wrong result: {got!r:.80} != {expected!r:.80}")


def _timed(action: Callable[[], object]) -> tuple[float, object]:
    started = time.perf_counter()
    result = action()
    return time.perf_counter() - started, result


def _warm(session: Session, workers: int, cfg: Config) -> None:
    """Gets every worker started, with workloads imported, before any timing.

    Two rounds, because a lazily started worker may still be booting when
    the first round ends, and then a faster worker takes its task.
    """
    for _ in range(2):
        session.run_all(workloads.warm, [(cfg.warm_seconds,)] * workers)


# ------------------------------------------------------------------ 1. CPU speedup


def measure_cpu(cfg: Config, contenders: list[Contender], run: Run) -> None:
    """Speedup = sequential time of W tasks / the contender's time for them.

    The sequential baseline runs in rounds interleaved with the contender's,
    and each speedup is the median of per-round ratios: on a shared VM whose
    speed drifts by tens of percent within seconds, a baseline timed once and
    reused would skew every contender timed after it.
    """
    expected = workloads.count_primes(cfg.prime_limit)
    for workers in cfg.cpu_workers:
        case, calls = workers_case(workers), [(cfg.prime_limit,)] * workers
        baseline = Sequential().open(workers, cfg.call_timeout_s)
        baseline_times: list[float] = []
        for contender in contenders:
            if contender.key == Sequential.key:
                continue
            log(f"cpu {case}: {contender.key}, interleaved with the sequential baseline")
            with (watchdog(f"cpu {case} for {contender.key}", cfg.hang_timeout_s),
                  _errors_noted(run, "cpu", case, contender.key)):
                session = contender.open(workers, cfg.call_timeout_s)
                try:
                    _warm(session, workers, cfg)
                    with metered() as interference:
                        pairs = _paired_rounds(baseline, session, calls, expected, cfg)
                finally:
                    session.close()
                if interference.others_cpu_pct is not None:
                    run.put((INTERFERENCE, f"cpu {case}", contender.key, "others_cpu_pct"),
                            interference.others_cpu_pct)
                baseline_times += [alone for alone, _ in pairs]
                run.put(("cpu", case, contender.key, "seconds"),
                        statistics.median(pooled for _, pooled in pairs))
                run.put(("cpu", case, contender.key, "speedup"),
                        statistics.median(alone / pooled for alone, pooled in pairs))
        if not baseline_times:  # no pool selected: the baseline on its own
            log(f"cpu {case}: sequential")
            baseline_times = [_round_seconds(baseline, calls, expected)
                              for _ in range(cfg.cpu_repeats)]
        run.put(("cpu", case, "sequential", "seconds"), statistics.median(baseline_times))
        run.put(("cpu", case, "sequential", "speedup"), 1.0)


def _paired_rounds(baseline: Session, session: Session, calls: list[tuple[int]],
                   expected: int, cfg: Config) -> list[tuple[float, float]]:
    """(sequential, contender) seconds of each round.

    The order flips every round, so a machine that speeds up or slows down
    during the measure favours neither side.
    """
    pairs = []
    for index in range(cfg.cpu_repeats):
        if index % 2 == 0:
            alone = _round_seconds(baseline, calls, expected)
            pooled = _round_seconds(session, calls, expected)
        else:
            pooled = _round_seconds(session, calls, expected)
            alone = _round_seconds(baseline, calls, expected)
        pairs.append((alone, pooled))
    return pairs


def _round_seconds(session: Session, calls: list[tuple[int]], expected: int) -> float:
    """The time of running every call at once, results checked."""
    seconds, results = _timed(functools.partial(session.run_all, workloads.count_primes, calls))
    _expect(results, [expected] * len(calls), "count_primes")
    return seconds


# ------------------------------------------------------------------ 2-4. in one warm session


def measure_in_session(cfg: Config, contender: Contender, payloads: dict[str, Payload],
                       run: Run) -> None:
    """Latency, map throughput and payloads, on one warm pool of W workers."""
    case = workers_case(cfg.workers)
    log(f"latency, map, payload ({case}): {contender.key}")
    with watchdog(f"latency, map and payload for {contender.key}", cfg.hang_timeout_s):
        _session_measures(cfg, contender, case, payloads, run)


def _session_measures(cfg: Config, contender: Contender, case: str,
                      payloads: dict[str, Payload], run: Run) -> None:
    try:
        session = contender.open(cfg.workers, cfg.call_timeout_s)
        _warm(session, cfg.workers, cfg)
    except Exception:
        for measure in SESSION_MEASURES:
            _note_error(run, measure, case, contender.key)
        return
    try:
        with metered() as interference:
            with _errors_noted(run, "latency", case, contender.key):
                _measure_latency(cfg, contender, session, case, run)
            with _errors_noted(run, "map", case, contender.key):
                _measure_map(cfg, contender, session, case, run)
            with _errors_noted(run, "payload", case, contender.key):
                _measure_payloads(cfg, contender, session, payloads, run)
    finally:
        session.close()
    if interference.others_cpu_pct is not None:
        run.put((INTERFERENCE, f"session {case}", contender.key, "others_cpu_pct"),
                interference.others_cpu_pct)


def _measure_latency(cfg: Config, contender: Contender, session: Session, case: str,
                     run: Run) -> None:
    """p50 and p99 of one tiny call, submitted and waited for, one at a time."""
    plan = Sampling(cfg.latency_warmup, cfg.latency_calls, cfg.latency_budget_s)
    for way in ("submit", "call"):
        metrics = (f"{way}_p50_us", f"{way}_p99_us")
        if any([_not_applicable(run, contender, "latency", case, m) for m in metrics]):
            continue
        if way == "call":
            assert isinstance(session, InterpRpcSession)
            samples = sample_blocking(functools.partial(session.call, workloads.identity), plan)
        else:
            samples = session.submit_latency_us(workloads.identity, plan)
        run.put(("latency", case, contender.key, metrics[0]), percentile(samples, 0.50))
        run.put(("latency", case, contender.key, metrics[1]), percentile(samples, 0.99))
        run.put(("latency", case, contender.key, f"{way}_samples"), len(samples))


def _measure_map(cfg: Config, contender: Contender, session: Session, case: str,
                 run: Run) -> None:
    """Items per second of a map of cfg.map_items identity calls: the median
    of up to cfg.map_repeats maps, fewer once cfg.map_budget_s is spent. One
    map of a fast contender lasts a few milliseconds, which one slow moment
    of the machine can halve; a slow contender's single map is already long
    enough to average those out."""
    items = list(range(cfg.map_items))
    for metric, chunksize in (("items_per_s", None), ("items_per_s_chunksize1", 1)):
        if _not_applicable(run, contender, "map", case, metric):
            continue
        rates: list[float] = []
        deadline = time.perf_counter() + cfg.map_budget_s
        while len(rates) < cfg.map_repeats and (not rates or time.perf_counter() < deadline):
            seconds, results = _timed(functools.partial(session.map, workloads.identity,
                                                        items, chunksize))
            _expect(results, items, "map")
            rates.append(len(items) / seconds)
        run.put(("map", case, contender.key, metric), statistics.median(rates))
        run.put(("map", case, contender.key, f"{metric}_maps"), len(rates))


def make_payloads(sizes: tuple[int, ...]) -> dict[str, Payload]:
    """Each size as bytes, bytearray and a memoryview of the bytes, by case name."""
    payloads: dict[str, Payload] = {}
    for size in sizes:
        data = b"\xa5" * size  # written, not calloc'ed: no page faults in the timed calls
        payloads[payload_case("bytes", size)] = data
        payloads[payload_case("bytearray", size)] = bytearray(data)
        payloads[payload_case("memoryview", size)] = memoryview(data)
    return payloads


def _measure_payloads(cfg: Config, contender: Contender, session: Session,
                      payloads: dict[str, Payload], run: Run) -> None:
    """Milliseconds per call of payload_len(arg): the payload crosses one way."""
    for case, data in payloads.items():
        key = ("payload", case, contender.key, "ms")
        if _not_applicable(run, contender, "payload", case, "ms"):
            continue
        try:
            first = session.submit_result(workloads.payload_len, data)
        except CallLost:
            raise  # not a refusal: the call was lost or hung
        except Exception as exc:
            run.note(key, "fails", f"{type(exc).__name__}: {str(exc).splitlines()[0]}")
            continue
        _expect(first, len(data), "payload_len")
        times = []
        for _ in range(cfg.payload_repeats):
            seconds, result = _timed(functools.partial(session.submit_result,
                                                       workloads.payload_len, data))
            _expect(result, len(data), "payload_len")
            times.append(seconds)
        run.put(key, statistics.median(times) * 1e3)


# ------------------------------------------------------------------ 5. pool ready


def measure_ready(cfg: Config, contenders: list[Contender], run: Run) -> None:
    """Milliseconds from the pool's constructor to its first result, with init.

    Each sample is a fresh process (ready_probe.py), so nothing this process
    has already imported or started (json, the forkserver) makes a pool look
    readier than it would be in a new program.
    """
    case = workers_case(cfg.workers)
    for contender in contenders:
        if _not_applicable(run, contender, "ready", case, "ms"):
            continue
        log(f"ready {case}: {contender.key}")
        repeats = 1 if contender.slow else cfg.ready_repeats
        with _errors_noted(run, "ready", case, contender.key):
            times = [_probe_ready(contender.key, cfg) for _ in range(repeats)]
            run.put(("ready", case, contender.key, "ms"), statistics.median(times) * 1e3)


def _probe_ready(key: str, cfg: Config) -> float:
    done = subprocess.run([sys.executable, str(PROBE), key, str(cfg.workers)],
                          capture_output=True, text=True, timeout=cfg.ready_timeout_s,
                          check=False)
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines or not lines[-1].startswith("ready_seconds "):
        raise RuntimeError(f"ready_probe.py {key} exited {done.returncode}: "
                           f"{done.stderr.strip()[-2000:]}")
    return float(lines[-1].split()[1])


# ------------------------------------------------------------------ one run


def run_once(cfg: Config, contenders: list[Contender]) -> Run:
    """Every measure, every contender: one run of the benchmark."""
    run = Run()
    measure_cpu(cfg, contenders, run)
    payloads = make_payloads(cfg.payload_sizes)
    for contender in contenders:
        measure_in_session(cfg, contender, payloads, run)
    del payloads  # up to 256 MiB; the ready probes need none of it
    measure_ready(cfg, contenders, run)
    return run
