"""The Workers panel's view of a pool, as the messages of its comm carry it.

One shape for every pool and both kernels (docs/workers-panel.md): each
worker's displayed state (idle, busy, stuck, dead, debugging, or starting
and stopped), target, item and seconds running, grouped by process for a
pool whose workers say where they live (a ClusterPool: one group per dask
process); the pool's totals by state; the current map's progress. The
interp-rpc kernel's C++ publisher (src/kernel/workers_feed.cpp) writes the
same shape for a pool of this process.
"""

from __future__ import annotations

from collections.abc import Iterable
from itertools import groupby
from typing import Any

from interp_rpc.notebook.polled_view import process_of
from interp_rpc.notebook.running_maps import RunningMap
from interp_rpc.records import WorkerStatus

#: Raise it on any change a panel reading the previous version would misread.
PROTOCOL_VERSION = 1

#: The states a total is always given for (others only when some worker is in them).
STATES = ("idle", "busy", "stuck", "dead", "debugging")


def worker_row(w: WorkerStatus, stuck_after: float) -> dict[str, Any]:
    return {"index": int(w.index), "state": w.displayed_state(stuck_after),
            "target": w.target or None, "item": w.item_index,
            "seconds": round(w.busy_seconds, 3), "calls_done": int(w.calls_done),
            "detail": w.detail or None}


def groups(statuses: Iterable[WorkerStatus], stuck_after: float) -> list[dict[str, Any]]:
    """Workers in groups: one per process where workers say which, else one
    group without a process."""
    def order(w: WorkerStatus) -> tuple[str, int, int]:
        where = process_of(w)
        return ("", 0, int(w.index)) if where is None else (where[0], where[1], int(w.index))

    result = []
    for where, members in groupby(sorted(statuses, key=order), key=process_of):
        group: dict[str, Any] = {"process": None}
        if where is not None:
            host, pid, address = where
            group["process"] = {"host": host, "pid": pid, "address": address}
        group["workers"] = [worker_row(w, stuck_after) for w in members]
        result.append(group)
    return result


def totals(rows: Iterable[dict[str, Any]]) -> dict[str, int]:
    counts = dict.fromkeys(STATES, 0)
    for row in rows:
        counts[row["state"]] = counts.get(row["state"], 0) + 1
    return counts


def map_progress(running: RunningMap | None) -> dict[str, Any] | None:
    if running is None:
        return None
    return {"target": running.target, "done": running.done(), "total": running.total,
            "seconds": round(running.seconds(), 3)}


def pool_info(kind: str, workers: int, stuck_after: float, has_profile: bool) -> dict[str, Any]:
    """What a status message says of the pool besides its workers."""
    return {"kind": kind, "workers": workers, "stuck_after": stuck_after,
            "last_profile": has_profile}


def status_message(pool: dict[str, Any], statuses: Iterable[WorkerStatus], stuck_after: float,
                   running: RunningMap | None) -> dict[str, Any]:
    grouped = groups(statuses, stuck_after)
    return {"type": "status", "version": PROTOCOL_VERSION, "pool": pool,
            "totals": totals(row for g in grouped for row in g["workers"]),
            "groups": grouped, "map": map_progress(running)}


def no_pool_message() -> dict[str, Any]:
    return {"type": "no_pool", "version": PROTOCOL_VERSION,
            "message": "No pool in this kernel yet: %parallel_map or %parallel_pool starts one."}


def error_message(text: str) -> dict[str, Any]:
    return {"type": "error", "version": PROTOCOL_VERSION, "message": text}
