"""Helpers of the ProcessPool tests."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from support import wait_until

SRC_PATHS = [p for p in sys.path if p]

#: What a sanitized run (tests/sanitized_runs.py) sets for every process: the
#: preloaded runtime, without which the sanitized extension does not load, and
#: where reports go. A user's environment has none of them.
SANITIZER_VARIABLES = ("LD_PRELOAD", "ASAN_OPTIONS", "UBSAN_OPTIONS", "TSAN_OPTIONS")


def alive(pid: int) -> bool:
    """Whether process ``pid`` still runs (a zombie counts as ended)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):  # reaped between open and read
        return False


def children() -> set[int]:
    """The processes this one has started and not yet reaped, from any thread."""
    found: set[int] = set()
    for task in Path("/proc/self/task").iterdir():
        with contextlib.suppress(FileNotFoundError):  # a thread that has ended
            found.update(int(pid) for pid in (task / "children").read_text().split())
    return found


def _parents() -> dict[int, int]:
    """Every process on the machine: its parent."""
    found = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as stat:
                    found[int(entry)] = int(stat.read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError):  # ended while we looked
                continue
    return found


def worker_processes() -> set[int]:
    """The worker processes this process has started, through its worker
    templates, running or not yet reaped: the templates' children (a
    template is a child of this process; spawn.py)."""
    parents = _parents()
    templates = {pid for pid, parent in parents.items() if parent == os.getpid()}
    return {pid for pid, parent in parents.items() if parent in templates}


def wait_ended(pids: list[int], what: str = "the worker processes ending") -> None:
    wait_until(lambda: not any(alive(p) for p in pids), what=what)


def run_python(args: list[str], cwd: Path,
               timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """``python3 ARGS`` with this test's sys.path, as a user runs it."""
    env_path = ":".join([str(Path(__file__).parent), *SRC_PATHS])
    sanitizer = {name: os.environ[name] for name in SANITIZER_VARIABLES if name in os.environ}
    return subprocess.run([sys.executable, *args], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout,
                          env={"PYTHONPATH": env_path, "PATH": "/usr/bin:/bin", **sanitizer})


#: Named semaphores of multiprocessing, which ProcessPool never uses: other
#: programs on the machine make and remove them at any time.
_OTHERS_SHARED_MEMORY = "sem.mp-"


def shared_memory_names() -> set[str]:
    """The named shared memory segments on the machine (/dev/shm), less
    multiprocessing's semaphores."""
    if not os.path.isdir("/dev/shm"):
        return set()
    return {n for n in os.listdir("/dev/shm") if not n.startswith(_OTHERS_SHARED_MEMORY)}


def dedent(source: str) -> str:
    return textwrap.dedent(source).lstrip()
