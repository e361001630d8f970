"""Helpers of the pool tests (imported by the test modules and conftest)."""

from __future__ import annotations

import concurrent.interpreters
import itertools
import os
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from interp_rpc import InterpreterPool

#: The make_pool fixture: make_pool(workers=2, init=..., **options).
type MakePool = Callable[..., InterpreterPool]

#: The worker modules of the tests.
FIXTURES = Path(__file__).with_name("fixtures")

#: Upper bound for polls of things that happen "soon"; only reached on failure.
POLL_LIMIT = 30.0


def wait_until[T](predicate: Callable[[], T], timeout: float = POLL_LIMIT,
               what: str = "the condition") -> T:
    """Poll until ``predicate()`` is truthy and return it; fail after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} did not happen within {timeout} s")
        time.sleep(0.005)


def signal_path(path: Path) -> None:
    """Creates ``path`` as pooltasks.signal does: written, then renamed into
    place (see there why)."""
    written = path.with_name(f".{path.name}.{os.getpid()}-{threading.get_ident()}")
    written.write_bytes(b"open\n")
    os.replace(written, path)


def await_path(path: Path, timeout: float = POLL_LIMIT, what: str = "the path") -> None:
    """Waits for ``path`` to appear, then reads it, as pooltasks.wait_for_path
    does (see there why)."""
    wait_until(path.exists, timeout, what)
    path.read_bytes()


class Gates:
    """File-system gates: a worker call created with ``block_args()`` signals
    that it started, then waits until the test opens its gate."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        directory.mkdir(parents=True, exist_ok=True)
        self._names = itertools.count()
        self._gates: list[Path] = []

    def new(self) -> Gate:
        gate = Gate(self.directory, next(self._names))
        self._gates.append(gate.gate)
        return gate

    def release_all(self) -> None:
        for path in self._gates:
            if not path.exists():
                signal_path(path)


class Gate:
    def __init__(self, directory: Path, number: int) -> None:
        self.started = directory / f"started-{number}"
        self.gate = directory / f"gate-{number}"

    def args(self, result: object = None) -> tuple[str, str, object]:
        """Arguments of pooltasks.block."""
        return str(self.started), str(self.gate), result

    def map_item(self, result: object = None) -> tuple[str, str, str, object]:
        """A pooltasks.map_item item that blocks on this gate."""
        return ("block", str(self.started), str(self.gate), result)

    def wait_started(self, timeout: float = POLL_LIMIT) -> None:
        await_path(self.started, timeout, f"the call behind {self.gate.name} starting")

    def has_started(self) -> bool:
        return self.started.exists()

    def release(self) -> None:
        signal_path(self.gate)


def non_main_interpreters() -> list[int]:
    return [i.id for i in concurrent.interpreters.list_all() if i.id != 0]


def wait_only_main_interpreter(timeout: float = POLL_LIMIT) -> None:
    wait_until(lambda: not non_main_interpreters(), timeout,
               "every worker interpreter being destroyed")


def states(pool: InterpreterPool) -> list[str]:
    return [w.state for w in pool.status()]


def idle_worker(pool: InterpreterPool) -> int:
    idle = [w.index for w in pool.status() if w.state == "idle"]
    assert len(idle) == 1, pool.status()
    return idle[0]


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


_meetings = itertools.count()


def on_every_worker(pool: InterpreterPool, scratch: Path, name: str,
                    *args: object) -> dict[int, object]:
    """pooltasks.<name>(*args) run once in every worker: {interpreter id: result}."""
    directory = scratch / f"meeting-{next(_meetings)}"
    directory.mkdir(parents=True)
    futures = [pool.submit("pooltasks.meet_then", str(directory), pool.workers, name, *args)
               for _ in range(pool.workers)]
    results = dict(f.result(timeout=POLL_LIMIT * 2) for f in futures)
    assert len(results) == pool.workers
    return results


def pool_for_fixture(workers: int, init: str) -> Iterator[InterpreterPool]:
    """A pool a fixture yields, closed (60 s at most) when the fixture ends."""
    pool = InterpreterPool(workers=workers, init=init)
    try:
        yield pool
    finally:
        pool.close(timeout=60)
