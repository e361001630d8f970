"""Which dask worker processes serve a ClusterPool, and where a call goes.

Every subinterpreter of the cluster gets one index, stable for the life of
the ClusterPool and never reused, so that statuses, call records and errors
name it the way the local pool names its workers (an int), while also saying
which host and process it lives in.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass


class ClusterWorker(int):
    """A subinterpreter of the cluster: an int (its index across the cluster),
    plus the dask worker process that hosts it."""

    address: str  # the dask worker's address, e.g. "tcp://10.0.0.5:40231"
    host: str
    pid: int
    subinterpreter: int  # its index inside that process's InterpreterPool

    def __new__(cls, index: int, *, address: str, host: str, pid: int,
                subinterpreter: int) -> ClusterWorker:
        self = super().__new__(cls, index)
        self.address = address
        self.host = host
        self.pid = pid
        self.subinterpreter = subinterpreter
        return self

    def __str__(self) -> str:
        return (f"{int(self)} (subinterpreter {self.subinterpreter} of process {self.pid} "
                f"on {self.host}, dask worker {self.address})")

    def __format__(self, spec: str) -> str:
        return str(self) if not spec else format(int(self), spec)

    def __repr__(self) -> str:
        return f"<ClusterWorker {self}>"

    def __reduce__(self) -> tuple[object, ...]:
        return _rebuild_worker, (int(self), self.address, self.host, self.pid,
                                 self.subinterpreter)


def _rebuild_worker(index: int, address: str, host: str, pid: int,
                    subinterpreter: int) -> ClusterWorker:
    return ClusterWorker(index, address=address, host=host, pid=pid,
                         subinterpreter=subinterpreter)


@dataclass(eq=False)  # one object per process: compared, and hashed, by identity
class Process:
    """One dask worker process whose pool is ready."""

    address: str
    host: str
    pid: int
    slots: int  # subinterpreters in its pool
    first_index: int  # ClusterWorker index of its subinterpreter 0
    in_flight: int = 0  # our jobs pinned to it and not finished
    gone: bool = False  # the scheduler no longer lists it

    def worker(self, subinterpreter: int) -> ClusterWorker:
        return ClusterWorker(self.first_index + subinterpreter, address=self.address,
                             host=self.host, pid=self.pid, subinterpreter=subinterpreter)


class Placement:
    """The processes serving the pool; hands out the least loaded one."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._processes: dict[str, Process] = {}
        self._next_index = 0

    def add(self, address: str, host: str, pid: int, slots: int) -> Process:
        with self._lock:
            known = self._processes.get(address)
            if known is not None and not known.gone and known.pid == pid:
                return known
            process = Process(address, host, pid, slots, self._next_index)
            self._next_index += slots
            self._processes[address] = process
            return process

    def mark_gone(self, address: str) -> Process | None:
        with self._lock:
            process = self._processes.get(address)
            if process is None or process.gone:
                return None
            process.gone = True
            return process

    def get(self, address: str) -> Process | None:
        with self._lock:
            return self._processes.get(address)

    def live(self) -> list[Process]:
        with self._lock:
            return [p for p in self._processes.values() if not p.gone]

    def every(self) -> list[Process]:
        """Every process that ever served the pool, gone ones included."""
        with self._lock:
            return list(self._processes.values())

    def slots(self) -> int:
        return sum(p.slots for p in self.live())

    def acquire(self, exclude: frozenset[str] = frozenset()) -> Process | None:
        """The live process with the fewest jobs per slot (None: none left),
        counting one more job on it."""
        with self._lock:
            candidates = [p for p in self._processes.values()
                          if not p.gone and p.address not in exclude]
            if not candidates:
                candidates = [p for p in self._processes.values() if not p.gone]
            if not candidates:
                return None
            best = min(candidates, key=lambda p: (p.in_flight / p.slots, p.first_index))
            best.in_flight += 1
            return best

    def has_free_slot(self) -> bool:
        """Whether a live process has fewer jobs than subinterpreters."""
        with self._lock:
            return any(not p.gone and p.in_flight < p.slots for p in self._processes.values())

    def acquire_this(self, process: Process) -> bool:
        """Count one more job on ``process``, unless it is gone."""
        with self._lock:
            if process.gone:
                return False
            process.in_flight += 1
            return True

    def release(self, process: Process) -> None:
        with self._lock:
            process.in_flight -= 1
