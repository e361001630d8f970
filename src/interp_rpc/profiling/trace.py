"""A Profile as Chrome Trace Event JSON, which Perfetto and chrome://tracing open.

One process (the pool), one track per worker plus one for the caller. On a
worker's track every request is a slice with one nested slice per item; on
the caller's track every request's pickling is a slice, and a flow arrow
joins it to the moment a worker took the request off the queue, so queue
waits show as the arrows' length. Times are microseconds from the profile's
start. Format: "Trace Event Format" (Google, 2016), JSON Object Format.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from interp_rpc.profiling.model import ItemRecord, Profile

#: The track of the caller (workers use their index + 1).
CALLER_TID = 0
#: Event categories: filters in the trace viewers, and what tests count.
ITEM = "item"
REQUEST = "request"
SUBMIT = "submit"


def events(profile: Profile) -> dict[str, Any]:
    """The trace as a JSON-ready object."""
    pid = os.getpid()
    origin = profile.start_ns

    def us(ns: int) -> float:
        return round((ns - origin) / 1000, 3)

    out: list[dict[str, Any]] = [
        {"ph": "M", "name": "process_name", "pid": pid, "tid": CALLER_TID,
         "args": {"name": f"interp-rpc pool ({profile.workers} workers)"}},
        {"ph": "M", "name": "thread_name", "pid": pid, "tid": CALLER_TID,
         # On a cluster, each process's dask tasks submit its requests.
         "args": {"name": "dask tasks" if profile.lane_groups else "caller"}},
    ]
    out += [{"ph": "M", "name": "thread_name", "pid": pid, "tid": w + 1,
             "args": {"name": label}} for w, label in enumerate(profile.lane_labels())]
    requests: dict[int, list[ItemRecord]] = {}
    for r in profile.records:
        requests.setdefault(r.call_id, []).append(r)
    for call_id, items in requests.items():
        first = items[0]
        ran = [r for r in items if r.ran]
        tid = first.worker + 1
        name = first.target
        if first.enqueued_ns:
            out.append({"ph": "X", "cat": SUBMIT, "name": f"pickle {name}", "pid": pid,
                        "tid": CALLER_TID, "ts": us(first.enqueued_ns - first.serialize_ns),
                        "dur": round(first.serialize_ns / 1000, 3),
                        "args": {"request": call_id, "items": first.request_items}})
        if ran and first.worker >= 0 and first.enqueued_ns:
            started = first.request_started_ns or ran[0].started_ns
            flow = {"name": "queue wait", "cat": "queue", "id": call_id, "pid": pid}
            out.append({**flow, "ph": "s", "tid": CALLER_TID, "ts": us(first.enqueued_ns - 1)})
            out.append({**flow, "ph": "f", "bp": "e", "tid": tid, "ts": us(started)})
            end = max(r.finished_ns for r in ran) + first.result_serialize_ns
            out.append({"ph": "X", "cat": REQUEST, "name": f"request {call_id}", "pid": pid,
                        "tid": tid, "ts": us(started), "dur": round((end - started) / 1000, 3),
                        "args": {"target": name, "items": first.request_items,
                                 "queue_wait_ms": (started - first.enqueued_ns) / 1e6,
                                 "unpickle_request_ms": first.deserialize_ns / 1e6,
                                 "pickle_results_ms": first.result_serialize_ns / 1e6}})
        for r in items:
            if not r.ran:
                out.append({"ph": "i", "s": "t", "cat": ITEM, "name": f"{r.label} ({r.outcome})",
                            "pid": pid, "tid": max(CALLER_TID, r.worker + 1),
                            "ts": us(profile.end_ns), "args": {"outcome": r.outcome,
                                                               "items": r.count}})
                continue
            out.append({"ph": "X", "cat": ITEM, "name": name, "pid": pid, "tid": r.worker + 1,
                        "ts": us(r.started_ns), "dur": round(r.run_ns / 1000, 3),
                        "args": {"item": r.item, "items": r.count, "outcome": r.outcome,
                                 "request": call_id, "timed_with_group_of": r.group,
                                 "queue_wait_ms": r.queue_wait_ns / 1e6}})
    return {"traceEvents": out, "displayTimeUnit": "ms",
            "otherData": {"tool": "interp-rpc", "summary": dict(profile.summary())}}


def write(profile: Profile, path: Path) -> None:
    path.write_text(json.dumps(events(profile)), encoding="utf-8")
