"""What ``./dev test --sanitize[=address|thread]`` runs (tests/run_all.py).

A sanitized run is the C++ tests of the sanitizer build, then the Python suites
against that build's extension and kernel (both compiled with the sanitizer),
with the sanitizer's runtime preloaded into python3, which is not instrumented
(the kernel binary links the runtime itself).

Every process of a step (pytest, the kernels, ipykernel beside them, the
programs the fault tests start) writes its sanitizer reports to files in one
directory of the build (``log_path``). A step fails if it leaves any report,
whatever its exit code: a report in a kernel is otherwise seen by a test as a
kernel that went away, or not at all.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent

#: The Python suites a sanitized run drives, by pytest: the pool's (its magics
#: are in tests/interp_rpc/notebook) with the fault tests, and the kernel's.
#: The kernel's run in a pytest of their own: their modules import their
#: conftest by that name, which another suite's conftest would shadow.
SANITIZED_SUITES = {"pool and fault suites": ("tests/interp_rpc", "tests/faults"),
                    "kernel suite": ("tests/kernel",)}

#: Which sanitizer runs the suites (address or thread), for the tests that
#: behave otherwise under one: the kernel suite's parity tests, for one, run
#: on our kernel alone (tests/kernel/conftest.py).
SANITIZER_VARIABLE = "INTERP_RPC_TEST_SANITIZER"

#: How many of its slowest tests each pytest of a complete sanitized run
#: names at its end: where a sanitized run's time goes, in every CI log.
SLOWEST_LISTED = 15

#: Left out under TSan: ClusterPool's suites start dask clusters (Python
#: processes and threads) whose start-up timeouts do not survive TSan's
#: slowdown. The pool contract they share is run on InterpreterPool and
#: ProcessPool (whose worker and script processes get the sanitizer's
#: variables, tests/interp_rpc/process/process_support.py).
NOT_UNDER_THREAD_SANITIZER = ("tests/interp_rpc/dask",)

#: Suites that assert how little the process's RSS grows. They run in a step
#: of their own, without the two parts of ASan that grow RSS by design (see
#: FOR_RSS_MEASURING).
#: By the step they run in (the kernel's in a pytest of their own, as above).
RSS_MEASURING = {"pool": ("tests/interp_rpc/pool/test_leaks.py",
                          "tests/interp_rpc/pool/test_chaos.py"),
                 "kernel": ("tests/kernel/test_memory.py",
                            "tests/kernel/test_output_volume.py")}
RSS_MEASURING_SUITES = tuple(suite for suites in RSS_MEASURING.values() for suite in suites)

#: ASan's options. Leaks are not looked for: CPython leaves memory allocated at
#: exit by design, and a suppression matches a leak by any frame of its stack,
#: so one that hid CPython's would hide ours called from Python too. (The C++
#: tests, which embed Python, do look for leaks.)
#: Nor is SIGSEGV taken over (handle_segv=0, also under TSan): tests crash
#: workers on purpose and expect them to die of it, not to exit with a report.
ASAN_OPTIONS = "detect_leaks=0:abort_on_error=0:halt_on_error=1:handle_segv=0"
#: What the RSS-measuring suites run without. ASan's quarantine of freed memory
#: (what finds a use after free) grows the process by hundreds of MB. Its fake
#: stacks (what finds a use after return: every instrumented frame of every
#: thread gets its own slot in a per-thread region) fill their pages as the
#: workers reach new frames: 7 of the 12 MB that 20 bursts of calls grew the
#: process by, while the allocator's live bytes stayed level from then on.
#: Both are still on in every other step.
FOR_RSS_MEASURING = ("quarantine_size_mb=0:thread_local_quarantine_size_kb=0:"
                     "detect_stack_use_after_return=0")
UBSAN_OPTIONS = "print_stacktrace=1:halt_on_error=1"

#: TSan's options. A report does not stop the process (a test goes on, and
#: the step shows every report at once); the process's exit code says there
#: was one, and its report file fails the step in any case. Thread leaks are
#: not reported: CPython never joins a daemon thread, by design, and a
#: suppression cannot tell its threads from ours started from Python. (The C++
#: tests, which join every thread they start, do report them.)
TSAN_SUPPRESSIONS = HERE / "tsan-suppressions.txt"
TSAN_OPTIONS = ("halt_on_error=0:second_deadlock_stack=1:report_thread_leaks=0:handle_segv=0:"
                f"suppressions={TSAN_SUPPRESSIONS}")

#: How much of a report file a failing step prints.
REPORT_SHOWN_CHARS = 20_000


class SanitizerSetupError(Exception):
    """The sanitized run cannot be set up on this machine."""


@dataclass(frozen=True)
class SanitizedStep:
    name: str
    argvs: list[list[str]]  # one pytest, or several that run side by side
    env: dict[str, str]
    reports: Path  # where the step's processes write their sanitizer reports


def sanitizer_runtime(library: str) -> str:
    """The compiler's shared runtime ``library`` (libasan.so), by path."""
    path = subprocess.run(["c++", f"-print-file-name={library}"], capture_output=True,
                          text=True, check=True).stdout.strip()
    if not os.path.isabs(path):  # the compiler echoes the name back when it has none
        raise SanitizerSetupError(
            f"the compiler has no {library} (is its sanitizer runtime installed?)")
    return path


def with_log_path(options: str, reports: Path) -> str:
    return f"{options}:log_path={reports / 'report'}"


def environment(kind: str, reports: Path, extra_asan: str = "") -> dict[str, str]:
    """The variables that preload ``kind``'s runtime into python3 and send
    every report to files in ``reports``."""
    runtime = "libasan.so" if kind == "address" else "libtsan.so"
    # libstdc++ right after the runtime: python3 does not load it, and the
    # runtime then finds no __cxa_throw to forward its interceptor to (the
    # first C++ exception would abort the process).
    preload = " ".join([sanitizer_runtime(runtime), sanitizer_runtime("libstdc++.so")])
    if kind == "address":
        asan = ":".join(filter(None, [ASAN_OPTIONS, extra_asan]))
        return {"LD_PRELOAD": preload, SANITIZER_VARIABLE: kind,
                "ASAN_OPTIONS": with_log_path(asan, reports),
                "UBSAN_OPTIONS": with_log_path(UBSAN_OPTIONS, reports)}
    return {"LD_PRELOAD": preload, SANITIZER_VARIABLE: kind,
            "TSAN_OPTIONS": with_log_path(TSAN_OPTIONS, reports)}


def python_steps(kind: str, build_dir: str, python: str,
                 pytest_args: list[str]) -> list[SanitizedStep]:
    """The pytest steps of a sanitized run: ``pytest_args`` if given, else
    the SANITIZED_SUITES.

    Under ASan the suites' pytests run side by side, in one step, as the
    halves of ``./dev test`` do (the same suites share a machine there): most
    of their tests wait for kernels and workers rather than compute, and the
    pair takes little more than the kernel suite alone. This is what lets CI
    run them. Under TSan, which slows every thread several times over, they
    run one after the other, so that no test's timeout has to absorb the
    other suite's load too."""
    base = Path(build_dir) / "sanitizer-reports"
    pytest = [python, "-m", "pytest"]
    if pytest_args:
        reports = base / "pytest"
        return [SanitizedStep(f"pytest under {kind} sanitizer", [[*pytest, *pytest_args]],
                              environment(kind, reports), reports)]
    left_out = RSS_MEASURING_SUITES if kind == "address" else NOT_UNDER_THREAD_SANITIZER
    ignored = [f"--ignore={suite}" for suite in left_out]
    # Each pytest has a cache of its own (two writing one would race).
    argvs = {name: [*pytest, "-o", f"cache_dir=.pytest_cache/{kind}-{name.replace(' ', '-')}",
                    f"--durations={SLOWEST_LISTED}", *ignored, *suites]
             for name, suites in SANITIZED_SUITES.items()}
    steps = []
    if kind == "address":
        reports = base / "suites"
        steps.append(SanitizedStep(f"{' and '.join(argvs)} under {kind} sanitizer, side by side",
                                   list(argvs.values()), environment(kind, reports), reports))
        for name, suites in RSS_MEASURING.items():
            reports = base / f"{name}-rss"
            steps.append(SanitizedStep(
                f"{name}'s RSS-measuring suites under address sanitizer, "
                "without quarantine or fake stacks",
                [[*pytest, *suites]], environment(kind, reports, extra_asan=FOR_RSS_MEASURING),
                reports))
        return steps
    for name, argv in argvs.items():
        reports = base / name.replace(" ", "-")
        steps.append(SanitizedStep(f"{name} under {kind} sanitizer", [argv],
                                   environment(kind, reports), reports))
    return steps


def prepare(reports: Path) -> None:
    """Empties a step's report directory, so that what it holds afterwards
    comes from this run."""
    shutil.rmtree(reports, ignore_errors=True)
    reports.mkdir(parents=True)


def reports_left(reports: Path) -> list[Path]:
    """The report files a step's processes wrote; prints each."""
    found = sorted(p for p in reports.iterdir() if p.stat().st_size > 0)
    for path in found:
        text = path.read_text(errors="replace")
        shown = text if len(text) <= REPORT_SHOWN_CHARS else (
            text[:REPORT_SHOWN_CHARS] + f"\n... ({len(text) - REPORT_SHOWN_CHARS} more chars)")
        print(f"\n=== sanitizer report {path}:\n{shown}", flush=True)
    return found
