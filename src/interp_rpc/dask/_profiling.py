"""ClusterPool.profile(): every process profiles its own pool; the caller merges.

Each dask worker process runs ``pool.profile()`` on its InterpreterPool for
the length of the ``with`` block (started and ended with one request per
process), so map items are timed where they run, as in a local pool. At the
end the caller collects each process's request log once (a few values per
map chunk, not per item) and merges them into one Profile: one lane per
subinterpreter of the cluster (its ClusterWorker index), grouped by process,
map items numbered as in the whole map. The item records are built from the
logs when they are first read, so a profile nobody reads (``%parallel_map``
profiles every run for ``%parallel_profile``) costs no record per item.

Clocks: records carry each process's ``time.monotonic_ns()``. Processes on
the caller's host share its monotonic clock, so their times are exact.
Another host's times are moved onto the caller's clock through the two
hosts' wall clocks: each process reads its monotonic and wall clocks
together when its records are fetched, the caller does the same, and the
difference of the two (wall - monotonic) offsets is added. The alignment is
then as good as the hosts' wall-clock agreement (NTP keeps hosts of one
network within about a millisecond, often far less), plus the time one read
of the clocks takes (well under a microsecond; see clock_pair). A wall-clock
step on either host during the profile shifts that host's bars by the step.
"""

from __future__ import annotations

import dataclasses
import functools
import socket
import threading
import time
import uuid
from typing import TYPE_CHECKING, Any

from interp_rpc.dask._asking import ANSWER_TIMEOUT
from interp_rpc.errors import InterpRpcError
from interp_rpc.profiling import model
from interp_rpc.profiling.recorder import CONTROL_TIMEOUT, RequestLog

if TYPE_CHECKING:
    from interp_rpc.dask._cluster_pool import ClusterPool
    from interp_rpc.dask._placement import Process


class ClusterProfileSession:
    """The context manager ``ClusterPool.profile()`` returns; ``with`` gives the Profile."""

    def __init__(self, pool: ClusterPool, functions: bool) -> None:
        if not isinstance(functions, bool):
            raise TypeError(f"functions must be True or False, not {functions!r}")
        self._pool = pool
        self.functions = functions
        self._token = uuid.uuid4().hex
        self._lock = threading.Lock()
        #: Map chunks sent while the profile is on: job id -> its first item.
        self.chunk_offsets: dict[int, int] = {}
        self._processes: list[Process] = []
        self._asked: set[str] = set()  # the processes asked to start profiling
        self.profile = model.Profile(workers=0, functions=functions, recording=True)

    def chunk_sent(self, job: int, first_item: int) -> None:
        with self._lock:
            self.chunk_offsets[job] = first_item

    def __enter__(self) -> model.Profile:
        pool = self._pool
        self._processes = pool._placement.live()
        self._asked = {p.address for p in self._processes}
        stale = list(pool._stale_profiles)
        # Jobs sent while the processes start profiling may be in it: their
        # first items are noted from now on.
        pool._profile_sessions.add(self)
        try:
            answers = self._ask(pool._plugin_module.profile_start, self.functions, stale)
        except BaseException:  # Ctrl-C: the processes may have started it
            pool._profile_sessions.discard(self)
            pool._stale_profiles.append(self._token)
            raise
        pool._stale_profiles[:] = [t for t in pool._stale_profiles if t not in stale]
        started = []
        for process in self._processes:
            answer = answers.get(process.address, "it did not answer")
            if answer is None:
                started.append(process)
            else:
                self.profile.notes.append(f"{_name(process)} is not profiled: {answer}")
        self._processes = started
        if self.functions and self.profile.notes:
            pool._profile_sessions.discard(self)
            self._ask(pool._plugin_module.profile_stop, True)
            raise InterpRpcError(f"cannot start the function profiler: {self.profile.notes[0]}")
        self.profile.start_ns = time.monotonic_ns()
        return self.profile

    def _ask(self, function: Any, *args: Any) -> dict[str, Any]:
        """Each process's answer, or the error it gave (a TimeoutError when
        it did not answer in time: starting and ending function profilers may
        also wait for busy subinterpreters, up to CONTROL_TIMEOUT)."""
        wait = ANSWER_TIMEOUT + (CONTROL_TIMEOUT if self.functions else 0.0)
        return self._pool._ask(function, self._token, *args,
                               addresses=[p.address for p in self._processes], timeout=wait)

    def __exit__(self, *exc_info: object) -> None:
        pool = self._pool
        end_ns = time.monotonic_ns()
        pool._profile_sessions.discard(self)
        try:
            answers = self._ask(pool._plugin_module.profile_stop, exc_info[0] is not None)
        except BaseException:  # Ctrl-C: the next profile stops it in the processes
            pool._stale_profiles.append(self._token)
            raise
        here = socket.gethostname()
        profile = self.profile
        logs: list[RequestLog] = []
        spans: list[tuple[int, int]] = []
        call_ids: dict[tuple[str, int], int] = {}
        for process in self._processes:
            answer = answers.get(process.address)
            if not isinstance(answer, dict):
                why = ("it died during the profile" if process.gone or answer is None
                       else f"{type(answer).__name__}: {answer}")
                profile.notes.append(f"{_name(process)} gave no records ({why}): its work "
                                     "is missing here")
                continue
            shift = 0 if answer["host"] == here else _clock_offset(answer["clock"])
            logs.append(_renumbered(answer, process, shift, self.chunk_offsets, call_ids))
            if answer["ran"]:
                spans.append((answer["start_ns"] + shift, answer["end_ns"] + shift))
            profile.notes += [f"{_name(process)}: {note}" for note in answer["notes"]]
            profile.lost_records += answer["lost_records"]
            profile.item_timing_overhead_ns += answer["item_timing_overhead_ns"]
            profile.function_overhead_ns += answer["function_overhead_ns"]
            profile.worker_stats.update((process.first_index + worker, stats)
                                        for worker, stats in answer["worker_stats"].items())
        profile.notes += [f"{_name(p)} joined during the profile: its work is not in it"
                          for p in pool._placement.live() if p.address not in self._asked]
        every = pool._placement.every()
        profile.workers = max((p.first_index + p.slots for p in every), default=0)
        profile.lane_groups = [(_name(p) + (" (gone)" if p.gone else ""), p.first_index,
                                p.slots) for p in every]
        profile.pending = functools.partial(_item_records, logs)
        profile.stop_recording(spans, end_ns)


def _name(process: Process) -> str:
    return f"process {process.pid} on {process.host}"


#: Clock pairs read to find one not split by a preemption.
CLOCK_TRIES = 5


def clock_pair() -> tuple[int, int]:
    """(monotonic, wall) read together: of a few tries, the wall read that
    sat in the shortest window between two monotonic reads, against that
    window's middle (a thread switched out between two reads would
    otherwise skew the pair by the whole pause)."""
    best: tuple[int, int, int] | None = None
    for _ in range(CLOCK_TRIES):
        before = time.monotonic_ns()
        wall = time.time_ns()
        after = time.monotonic_ns()
        if best is None or after - before < best[0]:
            best = (after - before, (before + after) // 2, wall)
    assert best is not None
    return best[1], best[2]


def _clock_offset(clock: tuple[int, int]) -> int:
    """What turns the other host's monotonic times into the caller's."""
    mono, wall = clock
    here_mono, here_wall = clock_pair()
    return (wall - mono) - (here_wall - here_mono)


def _renumbered(answer: dict[str, Any], process: Process, shift: int,
                chunk_offsets: dict[int, int], call_ids: dict[tuple[str, int], int]
                ) -> RequestLog:
    """A process's request log in the caller's terms: cluster-wide workers
    and request ids, map items numbered in their map, times to be moved onto
    the caller's clock. One step per request, not per item."""
    log: RequestLog = answer["log"]
    chunk_jobs: dict[int, int] = answer["chunk_jobs"]
    ids: dict[int, int] = {}

    def cluster_id(local: int) -> int:
        if local not in ids:
            ids[local] = call_ids.setdefault((process.address, local), len(call_ids))
        return ids[local]

    def lane(worker: int) -> int:
        return process.first_index + worker if worker >= 0 else -1

    def item(local_id: int, index: int | None) -> int | None:
        return None if index is None else chunk_offsets[chunk_jobs[local_id]] + index

    def profiled(local_id: int, index: int | None) -> bool:
        # A map chunk whose job was sent before the profile began (it waited
        # in dask's queue meanwhile) is not the profile's, as a local pool
        # leaves out the calls submitted before its profile.
        return index is None or chunk_jobs.get(local_id, -1) in chunk_offsets

    requests = [r._replace(id=cluster_id(r.id), worker=lane(r.worker),
                           item_index=item(r.id, r.item_index))
                for r in log.requests if profiled(r.id, r.item_index)]
    running = [dataclasses.replace(r, call_id=cluster_id(r.call_id), worker=lane(r.worker),
                                   item=item(r.call_id, r.item))
               for r in log.running if profiled(r.call_id, r.item)]
    return RequestLog(requests, {cluster_id(k): v for k, v in log.marks.items()},
                      {cluster_id(k): v for k, v in log.timed_out.items()}, running,
                      shift_ns=shift)


def _item_records(logs: list[RequestLog]) -> list[model.ItemRecord]:
    """Every process's item records, in start order (built when first read)."""
    records = [record for log in logs for record in log.item_records()]
    records.sort(key=lambda r: (r.started_ns or r.enqueued_ns, r.worker))
    return records
