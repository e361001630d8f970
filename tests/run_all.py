"""Run every check of interp-rpc inside the ./dev environment.

Steps: the C++ tests (ctest), pytest, ``mypy --strict`` and ``ruff``. Each step
runs even when an earlier one failed, so one run shows every failure; the exit
code is non-zero if any step failed, and a step that ran no test counts as a
failure (pytest's exit code 5, ctest's ``--no-tests=error``).

The complete pytest run (no pytest arguments) goes as two pytest processes
side by side, each on whole directories (``PYTEST_HALVES``): most tests wait
(for kernels, browsers, clusters and sleeps) rather than compute, so the two
halves take little more than the longer one. A selection of whole
directories alone (``./dev test tests/kernel``) goes the same way, its test
files split in DIRECTORY_SHARDS parts; any other selection runs in one
pytest. Each half's
lines are shown as they come, prefixed with its name; a half that fails is
shown again in full at the end.

Options (anything else goes to pytest):

``--sanitize[=address|thread]``
    only the tests of the sanitizer build that ./dev made for it: the C++
    tests, then the pool's, the kernel's and the fault tests' Python suites
    against the sanitized extension and kernel (tests/sanitized_runs.py); a
    step fails on any sanitizer report, from any of its processes.
``--repeat N``
    only pytest, N times in a row, stopping at the first failing run: the way
    to show that a test is not flaky. With ``--sanitize``, the C++ tests once,
    then the sanitizer's Python steps N times.
``--load``
    run the steps next to a CPU hog, one busy process per usable core, as on a
    busy machine or a shared CI runner.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from sanitized_runs import (
    SanitizerSetupError,
    prepare,
    python_steps,
    reports_left,
)

PYTEST_NO_TESTS_COLLECTED = 5
#: How many failing tests the summary names; the rest are in the output.
FAILURES_LISTED = 12
LINTED = ("src", "tests", "bench")
#: A hog dies with the run that started it (PR_SET_PDEATHSIG), even one killed
#: without the chance to stop it: it would slow everything after. A run that
#: ended before the hog asked for that has already left it another parent:
#: then it does not start spinning. Its argument: the run's process id.
BUSY_LOOP = (
    "import ctypes, os, signal, sys\n"
    "ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)\n"
    "if os.getppid() == int(sys.argv[1]):\n"
    "    while True: pass\n"
)
TESTS = Path("tests")

#: The complete run's two halves, as directories under tests/: the first is
#: named here, the second is every other directory holding tests, so that a
#: new directory is never left out. Balanced by their measured times; the
#: kernel suite runs in a pytest of its own anyway (see sanitized_runs.py).
FIRST_HALF = ("browser", "kernel")
#: How many pytest processes share a selection of whole directories
#: (``./dev test tests/kernel``), side by side. Kernel tests mostly wait for
#: kernels to start and answer: on the 2-core VM under --load, the kernel
#: suite took 256 s in three, 374 s in two (2026-12-07).
DIRECTORY_SHARDS = 3
#: How many of its slowest tests each half names at its end: where the
#: complete run's time goes, in every CI log.
SLOWEST_LISTED = 15
@dataclass
class Options:
    sanitize: str | None = None
    repeat: int = 1
    load: bool = False
    pytest_args: list[str] = field(default_factory=list)


class UsageError(Exception):
    pass


def parse(args: list[str]) -> Options:
    options = Options()
    rest = iter(args)
    for arg in rest:
        if arg == "--sanitize" or arg.startswith("--sanitize="):
            kind = arg.partition("=")[2] or "address"
            if kind not in ("address", "thread"):
                raise UsageError(f"--sanitize takes address or thread, not {kind!r}")
            options.sanitize = kind
        elif arg == "--repeat" or arg.startswith("--repeat="):
            value = arg.partition("=")[2] if "=" in arg else next(rest, "")
            if not value.isdigit() or int(value) < 1:
                raise UsageError(f"--repeat takes a number of runs (1 or more), not {value!r}")
            options.repeat = int(value)
        elif arg == "--load":
            options.load = True
        else:
            options.pytest_args.append(arg)
    return options


@contextlib.contextmanager
def cpu_hog(enabled: bool) -> Iterator[None]:
    """One busy process per core this process may run on, for the duration."""
    if not enabled:
        yield
        return
    cores = os.process_cpu_count() or 1
    hogs = [subprocess.Popen([sys.executable, "-c", BUSY_LOOP, str(os.getpid())])
            for _ in range(cores)]
    print(f"=== load: {cores} busy process(es) running next to the tests", flush=True)
    try:
        yield
    finally:
        for hog in hogs:
            hog.send_signal(signal.SIGKILL)
            hog.wait()


#: A step: its name, its commands (one, or the pytest halves that run side
#: by side), its environment, and where its processes write sanitizer
#: reports (None: not a sanitized step).
type Step = tuple[str, list[list[str]], dict[str, str], Path | None]


def test_directories() -> list[str]:
    """Every directory right under tests/ that holds a test module."""
    return sorted(str(d) for d in TESTS.iterdir()
                  if d.is_dir() and any(d.rglob("test_*.py")))


def pytest_halves(pytest: list[str]) -> list[list[str]]:
    """The complete pytest run as two commands on disjoint directories,
    each with a cache of its own (two processes writing one would race),
    each naming its slowest tests."""
    first = [str(TESTS / name) for name in FIRST_HALF]
    missing = [d for d in first if not Path(d).is_dir()]
    if missing:
        raise UsageError(f"FIRST_HALF names directories that do not exist: {missing}")
    second = [d for d in test_directories() if d not in first]
    return [half_command(pytest, n, half) for n, half in enumerate((first, second), start=1)]


def half_command(pytest: list[str], n: int, paths: list[str]) -> list[str]:
    """Half ``n``'s pytest command on ``paths``."""
    return [*pytest, "-o", f"cache_dir=.pytest_cache/{n}", f"--durations={SLOWEST_LISTED}",
            *paths]


def directory_shards(pytest: list[str], paths: list[str]) -> list[list[str]] | None:
    """A selection of whole directories (``tests/kernel``, and nothing else)
    as DIRECTORY_SHARDS commands on disjoint parts of their test files,
    balanced by the files' sizes, side by side as the complete run's halves;
    None for any other selection, or one of fewer test files than shards."""
    if not paths or not all(Path(path).is_dir() for path in paths):
        return None
    files = sorted({file for path in paths for file in Path(path).rglob("test_*.py")},
                   key=lambda file: (-file.stat().st_size, str(file)))
    if len(files) < DIRECTORY_SHARDS:
        return None
    shards: list[list[str]] = [[] for _ in range(DIRECTORY_SHARDS)]
    sizes = [0] * DIRECTORY_SHARDS
    for file in files:
        lightest = sizes.index(min(sizes))
        shards[lightest].append(str(file))
        sizes[lightest] += file.stat().st_size
    return [half_command(pytest, n, sorted(shard)) for n, shard in enumerate(shards, start=1)]


def relay(stream: IO[str], prefix: str, kept: list[str], started: float) -> None:
    """Shows each line of a half's output as it comes, and keeps it; then
    when the half ended (its output ends as it exits)."""
    for line in stream:
        kept.append(line)
        sys.stdout.write(f"{prefix}{line}")
        sys.stdout.flush()
    sys.stdout.write(f"{prefix}=== this half ended after {time.monotonic() - started:.1f} s\n")
    sys.stdout.flush()


def failures_in(lines: list[str]) -> list[str]:
    """The tests that pytest's short summary (``-ra``) names as failed or in
    error, each once, without its message: a selenium message alone is
    twenty lines of addresses."""
    found: list[str] = []
    for line in lines:
        kind, _, rest = line.partition(" ")
        if kind in ("FAILED", "ERROR") and rest.startswith("tests/"):
            entry = f"{kind} {rest.split(' - ', 1)[0].strip()}"
            if entry not in found:
                found.append(entry)
    return found


@dataclass
class SideBySide:
    code: int  # the first non-zero exit code, or 0
    failures: list[str]  # failures_in() of the failing commands' output


def call_side_by_side(commands: list[list[str]], env: dict[str, str]) -> SideBySide:
    """Runs the commands at once. A failing command's whole output is shown
    again at the end, in one piece, since its lines came interleaved with the
    others'."""
    children = []
    started = time.monotonic()
    for n, argv in enumerate(commands, start=1):
        child = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE,
                                 stderr=subprocess.STDOUT, text=True, errors="replace")
        kept: list[str] = []
        assert child.stdout is not None
        reader = threading.Thread(target=relay, args=(child.stdout, f"[{n}] ", kept, started))
        reader.start()
        children.append((child, reader, kept))
    codes = []
    failures: list[str] = []
    for n, (child, reader, kept) in enumerate(children, start=1):
        try:
            codes.append(child.wait())
        except KeyboardInterrupt:
            for other, _, _ in children:
                other.send_signal(signal.SIGINT)
            raise
        reader.join()
        if codes[-1] != 0:
            print(f"\n=== half [{n}] exited with {codes[-1]}; its whole output:", flush=True)
            sys.stdout.write("".join(kept))
            failures.extend(failures_in(kept))
    return SideBySide(next((code for code in codes if code != 0), 0), failures)


@dataclass
class StepResult:
    name: str
    ok: bool
    failures: list[str] = field(default_factory=list)  # tests named, when known


def run_step(name: str, commands: list[list[str]], env: dict[str, str],
             reports: Path | None) -> StepResult:
    for n, argv in enumerate(commands, start=1):
        shown = " ".join([*(f"{k}={v}" for k, v in env.items()), *argv])
        print(f"\n=== {name}{f' [{n}]' if len(commands) > 1 else ''}: {shown}", flush=True)
    if reports is not None:
        prepare(reports)
    started = time.monotonic()
    failures: list[str] = []
    if len(commands) > 1:
        together = call_side_by_side(commands, {**os.environ, **env})
        code, failures = together.code, together.failures
    else:
        code = subprocess.call(commands[0], env={**os.environ, **env})
    seconds = time.monotonic() - started
    if name.startswith("pytest") and code == PYTEST_NO_TESTS_COLLECTED:
        print("=== pytest collected no tests: that is a failure", flush=True)
    reported = reports_left(reports) if reports is not None else []
    if reported:
        print(f"=== {name}: {len(reported)} process(es) wrote a sanitizer report", flush=True)
    verdict = "ok" if code == 0 and not reported else f"FAILED (exit {code})"
    print(f"=== {name}: {verdict} in {seconds:.1f} s", flush=True)
    return StepResult(name, code == 0 and not reported, failures)


def steps_of(options: Options, build_dir: str) -> list[Step]:
    ctest = ["ctest", "--test-dir", build_dir, "--output-on-failure", "--no-tests=error"]
    bare_pytest = [sys.executable, "-m", "pytest"]
    pytest = [*bare_pytest, *options.pytest_args]
    # The complete run in two halves side by side, whole directories in
    # DIRECTORY_SHARDS parts; any other selection as asked.
    whole = (pytest_halves(pytest) if not options.pytest_args
             else directory_shards(bare_pytest, options.pytest_args) or [pytest])
    if options.sanitize:
        python: list[Step] = [
            (step.name, step.argvs, step.env, step.reports)
            for step in python_steps(options.sanitize, build_dir, sys.executable,
                                     options.pytest_args)]
        steps: list[Step] = [(f"C++ tests under {options.sanitize} sanitizer", [ctest], {}, None)]
        if options.repeat == 1:
            return steps + python
        # The C++ tests once; each run is every Python step in turn.
        return steps + [(f"{name}, run {n}/{options.repeat}", argvs, env, reports)
                        for n in range(1, options.repeat + 1)
                        for name, argvs, env, reports in python]
    if options.repeat > 1:
        return [(f"pytest run {n}/{options.repeat}", whole, {}, None)
                for n in range(1, options.repeat + 1)]
    return [
        ("C++ tests", [ctest], {}, None),
        ("pytest", whole, {}, None),
        ("mypy --strict", [[sys.executable, "-m", "mypy"]], {}, None),
        ("ruff", [["ruff", "check", *[d for d in LINTED if os.path.isdir(d)]]], {}, None),
    ]


def main(args: list[str]) -> int:
    build_dir = os.environ.get("INTERP_RPC_BUILD_DIR")
    if not build_dir:
        print("run_all.py runs inside ./dev: use './dev test'", file=sys.stderr)
        return 2
    try:
        options = parse(args)
    except UsageError as exc:
        print(f"./dev test: {exc}", file=sys.stderr)
        return 2
    try:
        steps = steps_of(options, build_dir)
    except (UsageError, SanitizerSetupError) as exc:
        print(f"./dev test: {exc}", file=sys.stderr)
        return 2
    results: list[StepResult] = []
    with cpu_hog(options.load):
        for name, commands, env, reports in steps:
            result = run_step(name, commands, env, reports)
            results.append(result)
            if not result.ok and options.repeat > 1:
                print(f"=== stopped at the first failing run ({name})", flush=True)
                break

    print("\n=== summary")
    if options.repeat > 1:
        print_repeat_summary(options.repeat, results, len(steps) - len(results))
    else:
        for result in results:
            print(f"  {'ok    ' if result.ok else 'FAILED'}  {result.name}")
    # Last, where a log cut to its end still shows them.
    for result in results:
        print_failures(result.failures)
    return 0 if all(result.ok for result in results) and results else 1


def print_repeat_summary(repeat: int, results: list[StepResult], not_run: int) -> None:
    """Whether every run passed, or which run failed. A run is every step
    repeated (the steps named "run n/N"); a step run once before them (the
    sanitizer run's C++ tests) is reported on its own line."""
    repeated = [result for result in results if result.name.endswith(f"/{repeat}")]
    for result in results:
        if not result.name.endswith(f"/{repeat}"):
            print(f"  {'ok    ' if result.ok else 'FAILED'}  {result.name}")
    failed = next((result for result in repeated if not result.ok), None)
    if failed is None and not not_run:
        print(f"  ok      pytest, {repeat} runs in a row")
    elif failed is None:
        print("  FAILED  the repeated runs did not start")
    else:
        run = failed.name.rpartition("run ")[2].partition("/")[0]
        print(f"  FAILED  {failed.name}: run {run} of {repeat}, "
              f"after {int(run) - 1} passing")


def print_failures(failures: list[str]) -> None:
    for entry in failures[:FAILURES_LISTED]:
        print(f"          {entry}")
    if len(failures) > FAILURES_LISTED:
        print(f"          and {len(failures) - FAILURES_LISTED} more (above)")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
