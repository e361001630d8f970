"""Running a program under a fault, for the fault tests.

Each test runs a program (pool_lifecycle.py) in a fresh python3 under a fault,
with hard limits, so that a fault that hangs fails its test within seconds:
every line the program prints must come within STEP_LIMIT seconds of the one
before, and the process must exit within EXIT_LIMIT seconds of its last line.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
LIFECYCLE = HERE / "pool_lifecycle.py"
#: How long the program may take to print its next line (a step of it).
STEP_LIMIT = 20.0
#: How long the process may take to exit after its last line.
EXIT_LIMIT = 10.0
MAIN_INTERPRETER = 0


@dataclass(repr=False)
class Run:
    """What a program run under a fault printed, and how it ended."""

    argv: list[str]
    events: list[dict[str, Any]] = field(default_factory=list)
    exit_code: int | None = None
    seconds_to_exit: float | None = None  # from its last line to its exit
    stderr: str = ""

    def event(self, name: str) -> dict[str, Any]:
        found = [e for e in self.events if e["event"] == name]
        assert len(found) == 1, f"expected one {name!r} event:\n{self}"
        return found[0]

    def __repr__(self) -> str:
        lines = "\n".join(json.dumps(e) for e in self.events)
        return (f"$ {' '.join(self.argv)}\nexit code {self.exit_code}, "
                f"{self.seconds_to_exit} s after its last line\n--- stdout\n{lines}\n"
                f"--- stderr\n{self.stderr}")


def assert_ended_well(run: Run) -> None:
    """pool_lifecycle.py exited 0 soon after its last line, its second pool
    served, and only the main interpreter was left."""
    assert run.exit_code == 0, run
    assert run.seconds_to_exit is not None and run.seconds_to_exit < EXIT_LIMIT, run
    assert run.event("second pool")["result"] == 5, run
    assert run.event("end")["interpreters"] == [MAIN_INTERPRETER], run


def run_program(argv: list[str], env: dict[str, str]) -> Run:
    """Runs ``python3 argv`` and records its JSON lines; kills it and fails
    the test if it stalls (STEP_LIMIT) or does not exit (EXIT_LIMIT)."""
    run = Run(argv)
    lines: queue.Queue[tuple[float, str | None]] = queue.Queue()
    hang = None
    with tempfile.TemporaryFile("w+") as stderr:
        process = subprocess.Popen([sys.executable, *argv], stdout=subprocess.PIPE,
                                   stderr=stderr, text=True, env={**os.environ, **env})
        assert process.stdout is not None
        stdout = process.stdout

        def read() -> None:
            for line in stdout:
                lines.put((time.monotonic(), line))
            lines.put((time.monotonic(), None))

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        last = time.monotonic()
        try:
            while True:
                at, line = lines.get(timeout=STEP_LIMIT)
                if line is None:
                    break
                last = at
                run.events.append(json.loads(line))
            run.exit_code = process.wait(timeout=max(0.0, last + EXIT_LIMIT - time.monotonic()))
            run.seconds_to_exit = round(time.monotonic() - last, 2)
        except queue.Empty:
            hang = f"no output for {STEP_LIMIT:g} s"
        except subprocess.TimeoutExpired:
            hang = f"still running {EXIT_LIMIT:g} s after its last line"
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
            reader.join(timeout=5)
            stderr.seek(0)
            run.stderr = stderr.read()
    if hang is not None:
        pytest.fail(f"{hang} (a hang):\n{run}")
    return run


def run_with_preloaded(library: Path, program: Path) -> Callable[..., Run]:
    """A function that runs ``program`` with ``library`` preloaded."""

    # After whatever is preloaded already: a sanitizer's runtime must come first.
    preload = " ".join(filter(None, [os.environ.get("LD_PRELOAD", ""), str(library)]))

    def run(*args: str, env: dict[str, str] | None = None) -> Run:
        return run_program([str(program), *args], {"LD_PRELOAD": preload, **(env or {})})

    return run
