"""Run every check of interp-rpc inside the ./dev environment.

Steps: the C++ tests (ctest), pytest, ``mypy --strict`` and ``ruff``. Each step
runs even when an earlier one failed, so one run shows every failure; the exit
code is non-zero if any step failed, and a step that ran no test counts as a
failure (pytest's exit code 5, ctest's ``--no-tests=error``).

Options (anything else goes to pytest):

``--sanitize[=address|thread]``
    only the tests of the sanitizer build that ./dev made for it: the C++
    tests, and with address (ASan+UBSan) also the pool's Python suites
    (SANITIZED_SUITES), run against the sanitized extension with the
    sanitizer's runtime preloaded into python3 (which is not instrumented).
``--repeat N``
    only pytest, N times in a row, stopping at the first failing run: the way
    to show that a test is not flaky.
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
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

PYTEST_NO_TESTS_COLLECTED = 5
LINTED = ("src", "tests", "bench")
BUSY_LOOP = "while True: pass"
#: The Python suites that --sanitize=address runs against the sanitized extension.
SANITIZED_SUITES = ("tests/interp_rpc", "tests/faults")
#: The runtime's options there. Leaks are not looked for: CPython leaves
#: memory allocated at exit by design, and a suppression matches a leak by any
#: frame of its stack, so one that hid CPython's would hide ours called from
#: Python too. (The C++ tests, which embed Python, do look for leaks.)
ASAN_OPTIONS = "detect_leaks=0:abort_on_error=0:halt_on_error=1"
#: Suites that assert how little the process's RSS grows. ASan's quarantine
#: of freed memory (what finds a use after free) grows it by hundreds of MB:
#: they run in a step of their own, without it.
RSS_MEASURING_SUITES = ("tests/interp_rpc/pool/test_leaks.py",
                        "tests/interp_rpc/pool/test_chaos.py")
NO_QUARANTINE = "quarantine_size_mb=0:thread_local_quarantine_size_kb=0"
UBSAN_OPTIONS = "print_stacktrace=1:halt_on_error=1"


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
    hogs = [subprocess.Popen([sys.executable, "-c", BUSY_LOOP]) for _ in range(cores)]
    print(f"=== load: {cores} busy process(es) running next to the tests", flush=True)
    try:
        yield
    finally:
        for hog in hogs:
            hog.send_signal(signal.SIGKILL)
            hog.wait()


type Step = tuple[str, list[str], dict[str, str]]


def run_step(name: str, argv: list[str], env: dict[str, str]) -> bool:
    shown = " ".join([*(f"{k}={v}" for k, v in env.items()), *argv])
    print(f"\n=== {name}: {shown}", flush=True)
    started = time.monotonic()
    code = subprocess.call(argv, env={**os.environ, **env})
    seconds = time.monotonic() - started
    if name.startswith("pytest") and code == PYTEST_NO_TESTS_COLLECTED:
        print("=== pytest collected no tests: that is a failure", flush=True)
    verdict = "ok" if code == 0 else f"FAILED (exit {code})"
    print(f"=== {name}: {verdict} in {seconds:.1f} s", flush=True)
    return code == 0


def sanitizer_runtime(library: str) -> str:
    """The compiler's shared runtime ``library`` (libasan.so), by path."""
    path = subprocess.run(["c++", f"-print-file-name={library}"], capture_output=True,
                          text=True, check=True).stdout.strip()
    if not os.path.isabs(path):  # the compiler echoes the name back when it has none
        raise UsageError(f"the compiler has no {library} (is its sanitizer runtime installed?)")
    return path


def steps_of(options: Options, build_dir: str) -> list[Step]:
    ctest = ["ctest", "--test-dir", build_dir, "--output-on-failure", "--no-tests=error"]
    pytest = [sys.executable, "-m", "pytest", *options.pytest_args]
    if options.sanitize:
        steps: list[Step] = [(f"C++ tests under {options.sanitize} sanitizer", ctest, {})]
        if options.sanitize == "address":
            # libstdc++ right after the runtime: python3 does not load it, and
            # ASan then finds no __cxa_throw to forward its interceptor to
            # (the first C++ exception aborts the process).
            runtimes = [sanitizer_runtime("libasan.so"), sanitizer_runtime("libstdc++.so")]
            preload = {"LD_PRELOAD": " ".join(runtimes),
                       "ASAN_OPTIONS": ASAN_OPTIONS, "UBSAN_OPTIONS": UBSAN_OPTIONS}
            pytest_sanitized = [sys.executable, "-m", "pytest"]
            if options.pytest_args:
                steps.append(("pytest under address sanitizer",
                              [*pytest_sanitized, *options.pytest_args], preload))
                return steps
            ignored = [f"--ignore={suite}" for suite in RSS_MEASURING_SUITES]
            steps.append(("pool suites under address sanitizer",
                          [*pytest_sanitized, *ignored, *SANITIZED_SUITES], preload))
            steps.append(("RSS-measuring suites under address sanitizer, without quarantine",
                          [*pytest_sanitized, *RSS_MEASURING_SUITES],
                          {**preload, "ASAN_OPTIONS": f"{ASAN_OPTIONS}:{NO_QUARANTINE}"}))
        return steps
    if options.repeat > 1:
        return [(f"pytest run {n}/{options.repeat}", pytest, {})
                for n in range(1, options.repeat + 1)]
    return [
        ("C++ tests", ctest, {}),
        ("pytest", pytest, {}),
        ("mypy --strict", [sys.executable, "-m", "mypy"], {}),
        ("ruff", ["ruff", "check", *[d for d in LINTED if os.path.isdir(d)]], {}),
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
    except UsageError as exc:
        print(f"./dev test: {exc}", file=sys.stderr)
        return 2
    results: list[tuple[str, bool]] = []
    with cpu_hog(options.load):
        for name, argv, env in steps:
            ok = run_step(name, argv, env)
            results.append((name, ok))
            if not ok and options.repeat > 1:
                print(f"=== stopped at the first failing run ({name})", flush=True)
                break

    print("\n=== summary")
    if options.repeat > 1:
        passed = sum(ok for _, ok in results)
        if passed == options.repeat:
            print(f"  ok      pytest, {options.repeat} runs in a row")
        else:
            print(f"  FAILED  pytest run {passed + 1} of {options.repeat}, after {passed} passing")
    else:
        for name, ok in results:
            print(f"  {'ok    ' if ok else 'FAILED'}  {name}")
    return 0 if all(ok for _, ok in results) and results else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
