"""What a ClusterPool reports, gathered from every process's pool: worker
statuses (with the processes that died or failed to start as "dead"),
summed totals, and one log of call records numbered in the caller."""

from __future__ import annotations

import threading
import warnings
from collections.abc import Callable, Iterable
from dataclasses import fields
from typing import Any

from interp_rpc._pool.engine import _core
from interp_rpc.dask._asking import ANSWER_TIMEOUT
from interp_rpc.dask._placement import Placement, Process
from interp_rpc.dask._relayed_errors import relayed_init_failure
from interp_rpc.errors import PoolInitError, WorkerInitFailure
from interp_rpc.records import CallRecord, PoolStats, WorkerStatus

#: The most call records kept, as many as each process's engine keeps.
RECORDS_KEPT = _core.CALL_LOG_CAPACITY


def take_in_report(placement: Placement, address: str,
                   report: dict[str, Any]) -> list[WorkerInitFailure]:
    """A process's report on its pool (the plugin's ``report``) taken into
    ``placement``: a ready pool serves from now on; a failed one is placed
    but gone, and its init failures are returned, named as the caller names
    workers."""
    if report["state"] == "ready":
        placement.add(address, report["host"], report["pid"], report["slots"])
        return []
    if report["state"] != "failed":
        return []
    failure = report["failure"]
    if isinstance(failure, PoolInitError):
        # All its subinterpreters keep their indices, not only those that
        # failed: the next process's indices start after them.
        slots = max([report["slots"], *(f.worker + 1 for f in failure.failures)])
        process = placement.add(address, report["host"], report["pid"], slots)
        placement.mark_gone(address)
        return [relayed_init_failure(f, process) for f in failure.failures]
    process = placement.add(address, report["host"], report["pid"], max(report["slots"], 1))
    placement.mark_gone(address)
    return [WorkerInitFailure(process.worker(0), timed_out=False, error=None,
                              detail=f"{type(failure).__name__}: {failure}")]


def failure_line(failure: WorkerInitFailure) -> str:
    """Why a subinterpreter did not start, in one line (for a status row)."""
    if failure.timed_out:
        return f"{failure.during} did not finish in time"
    if failure.error is None:
        return failure.detail
    message = failure.error.remote_message
    return f"{failure.during} raised {failure.error.remote_type}" + (f": {message}" if message
                                                                      else "")


def cluster_status(processes: Iterable[Process], failed: dict[str, list[WorkerInitFailure]],
                   answers: dict[str, Any]) -> list[WorkerStatus]:
    """Every subinterpreter's status, from each process's answer (its
    pool's statuses, or the error of asking it), by cluster index."""
    statuses: list[WorkerStatus] = []
    for process in processes:
        failures = failed.get(process.address)
        if failures is not None:
            statuses += [WorkerStatus(f.worker, "dead", None, None, 0.0, 0, 0.0,
                                      failure_line(f)) for f in failures]
            continue
        found = answers.get(process.address)
        if not isinstance(found, list):
            where = f"dask worker {process.address} (process {process.pid} on {process.host})"
            detail = (f"{where} did not answer within {ANSWER_TIMEOUT:g} s (stopped, hung "
                      "or cut off)" if isinstance(found, TimeoutError) else f"{where} is gone")
            statuses += [WorkerStatus(process.worker(i), "dead", None, None, 0.0, 0, 0.0,
                                      detail) for i in range(process.slots)]
            continue
        statuses += [WorkerStatus(**{**{f.name: getattr(w, f.name) for f in fields(w)},
                                     "index": process.worker(w.index)}) for w in found]
    return statuses


def summed_stats(answers: Iterable[Any]) -> PoolStats:
    """The totals of the processes that answered with theirs."""
    totals = dict.fromkeys((f.name for f in fields(PoolStats)), 0)
    for stats in answers:
        if isinstance(stats, PoolStats):
            for name in totals:
                totals[name] += getattr(stats, name)
    return PoolStats(**totals)


class RecordLog:
    """The call records of every process, renumbered (``seq``) in the order
    they were collected here, the last RECORDS_KEPT of them."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._records: list[CallRecord] = []
        self._cursors: dict[str, int] = {}  # dask worker address -> its last seq read

    def collect(self, processes: Iterable[Process],
                fetch: Callable[[Process, int], Any], after: int) -> list[CallRecord]:
        """Read what each process logged since the last collection
        (``fetch(process, its last seq read)``); the records after ``after``."""
        with self._lock:
            for process in processes:
                records = fetch(process, self._cursors.get(process.address, 0))
                if not isinstance(records, list) or not records:
                    continue
                self._cursors[process.address] = records[-1].seq
                first = self._records[-1].seq + 1 if self._records else 1
                for offset, r in enumerate(records):
                    self._records.append(CallRecord(**{
                        **{f.name: getattr(r, f.name) for f in fields(r)},
                        "seq": first + offset, "worker": process.worker(r.worker)}))
            del self._records[:-RECORDS_KEPT]
            return [r for r in self._records if r.seq > after]


def warn_if_gave_up(stuck: list[str], timeout: float | None, silent: list[str],
                    answer_wait: float | None) -> None:
    """ClusterPool.close()'s warnings: the calls still running when its
    ``timeout`` ran out, and the processes that did not answer."""
    if stuck:
        warnings.warn(
            f"ClusterPool.close() gave up after {timeout:g} s on {len(stuck)} running "
            f"call(s): {'; '.join(stuck)}. A running call cannot be interrupted; it is "
            "left to finish on its own.", RuntimeWarning, stacklevel=3)
    if silent:
        warnings.warn(
            f"ClusterPool.close() gave up on {len(silent)} dask worker(s) that did not "
            f"answer within {answer_wait:g} s: {', '.join(silent)} (stopped, hung or cut "
            "off). Each closes its pool when it leaves the cluster.",
            RuntimeWarning, stacklevel=3)
