"""Run every check of interp-rpc inside the ./dev environment.

Steps: the C++ tests (ctest), pytest, ``mypy --strict`` and ``ruff``. Each step
runs even when an earlier one failed, so one run shows every failure; the exit
code is non-zero if any step failed, and a step that ran no test counts as a
failure (pytest's exit code 5, ctest's ``--no-tests=error``).

``--sanitize`` runs only the C++ engine tests, from the ASan+UBSan build.
Any other arguments go to pytest.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

PYTEST_NO_TESTS_COLLECTED = 5
LINTED = ("src", "tests", "bench")


def run_step(name: str, argv: list[str]) -> bool:
    print(f"\n=== {name}: {' '.join(argv)}", flush=True)
    started = time.monotonic()
    code = subprocess.call(argv)
    seconds = time.monotonic() - started
    if name == "pytest" and code == PYTEST_NO_TESTS_COLLECTED:
        print("=== pytest collected no tests: that is a failure", flush=True)
    verdict = "ok" if code == 0 else f"FAILED (exit {code})"
    print(f"=== {name}: {verdict} in {seconds:.1f} s", flush=True)
    return code == 0


def main(args: list[str]) -> int:
    build_dir = os.environ.get("INTERP_RPC_BUILD_DIR")
    if not build_dir:
        print("run_all.py runs inside ./dev: use './dev test'", file=sys.stderr)
        return 2
    sanitize = "--sanitize" in args
    pytest_args = [a for a in args if a != "--sanitize"]

    ctest = ["ctest", "--test-dir", build_dir, "--output-on-failure", "--no-tests=error"]
    steps: list[tuple[str, list[str]]] = [("C++ tests", ctest)]
    if not sanitize:
        steps += [
            ("pytest", [sys.executable, "-m", "pytest", *pytest_args]),
            ("mypy --strict", [sys.executable, "-m", "mypy"]),
            ("ruff", ["ruff", "check", *[d for d in LINTED if os.path.isdir(d)]]),
        ]
    results = [(name, run_step(name, argv)) for name, argv in steps]

    print("\n=== summary")
    for name, ok in results:
        print(f"  {'ok    ' if ok else 'FAILED'}  {name}")
    return 0 if all(ok for _, ok in results) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
