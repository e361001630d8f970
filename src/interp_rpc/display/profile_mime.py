"""The profile as data, for interp-rpc's JupyterLab extension.

A profile's bundle carries, next to its HTML (the fallback for frontends
without the extension: nbviewer, VS Code, GitHub), the MIME type
``application/vnd.interp-rpc.profile+json``: the records and tables as JSON,
which the extension's renderer draws interactive. It builds its DOM from this
data and runs nothing from the kernel, so JupyterLab renders it in untrusted
notebooks too (the HTML's script runs only where the notebook is trusted).

The data is versioned (``version``): the renderer refuses, by name, a format
it does not read. Records travel in columns, one JSON array per field; a
field with the same value for every record travels as that one value. Times
are integers of ns; a record carries its start as the difference from the
previous record's start (the first one's from the profile's start), and its
duration rather than its end: short numbers.
"""

from __future__ import annotations

from typing import Any

from interp_rpc.display import functions as _functions
from interp_rpc.display import profile as _profile
from interp_rpc.profiling import model
from interp_rpc.profiling.model import Profile

MIME_TYPE = "application/vnd.interp-rpc.profile+json"
#: Raise it on any change a renderer of the previous format would misread.
FORMAT_VERSION = 1
#: Records sent; beyond them the data counts the rest (``truncated``). The
#: renderer draws this many in well under a second (bench/, the browser
#: tests), and the columns keep them to about 3 MB.
MAX_ITEMS = 100_000


def column(values: list[Any]) -> list[Any] | Any:
    """The values, or the one value all of them share."""
    if values and all(v == values[0] for v in values):
        return values[0]
    return values


def differences(values: list[int]) -> list[int]:
    """Each value less the one before it (the first as it is)."""
    return [v - before for v, before in zip(values, [0, *values], strict=False)]


def timeline(profile: Profile) -> dict[str, Any]:
    """The timeline's records (at most MAX_ITEMS of them) and how to draw
    them: lanes, colours, outcomes."""
    colours = _profile.target_colours(profile)
    targets = list(colours)
    outcomes = sorted({r.outcome for r in profile.records})
    ran = profile.ran()
    kept = ran[:MAX_ITEMS]
    origin = profile.start_ns
    labels = profile.lane_labels()
    return {
        "workers": profile.workers, "span": profile.wall_ns, "count": len(kept),
        "targets": targets, "laneLabels": labels,
        "left": _profile.lane_margin(profile, labels),
        "colours": [colours[t] for t in targets], "outcomes": outcomes,
        "problems": [outcomes.index(x) for x in outcomes if x in model.PROBLEMS],
        "aggregateAbove": _profile.AGGREGATE_ABOVE, "truncated": len(ran) - len(kept),
        "w": column([r.worker for r in kept]),
        "s": column(differences([r.started_ns - origin for r in kept])),
        "d": column([r.finished_ns - r.started_ns for r in kept]),
        "t": column([targets.index(r.target) for r in kept]),
        "o": column([outcomes.index(r.outcome) for r in kept]),
        "i": column([r.item for r in kept]),
        "n": column([r.count for r in kept]),
        "g": column([r.group for r in kept]),
        "q": column([r.queue_wait_ns for r in kept]),
        "ri": column([r.request_items for r in kept]),
        "ser": column([r.serialize_ns for r in kept]),
        "de": column([r.deserialize_ns for r in kept]),
        "rs": column([r.result_serialize_ns for r in kept]),
    }


def slowest(profile: Profile) -> dict[str, Any]:
    return {"headers": ["item", "worker", "run time", "outcome"],
            "rows": [[r.label, f"worker {r.worker}",
                      model._ms(r.run_ns // r.count) + (" (group average)" if r.group > 1
                                                         else ""), r.outcome]
                     for r in profile.slowest()]}


def functions(profile: Profile) -> dict[str, Any] | None:
    """The function profile's table (as the HTML's) and icicle; None when no
    worker's stats arrived."""
    workers = sorted(profile.worker_stats)
    if not workers:
        return None
    headers = ["function"] + [f"{what} {who}" for who in ["(all)", *[f"w{w}" for w in workers]]
                              for what in ("calls", "tottime", "cumtime")]
    rows = [[_functions.label(func)] + [value for nc, tt, ct in cells
                                        for value in (nc, round(tt, 6), round(ct, 6))]
            for func, cells in _functions.rows(profile)[:_functions.TOP_FUNCTIONS]]
    nodes = _functions.icicle_nodes(profile)
    return {"headers": headers, "rows": rows,
            "icicle": _functions._icicle_data(nodes) if nodes else None}


def data(profile: Profile, *, with_timeline: bool = True) -> dict[str, Any]:
    """The MIME data of a profile: all of it, or (``with_timeline=False``,
    for %parallel_map --profile) its function profile alone."""
    warnings = list(profile.warnings())
    function_data = functions(profile) if profile.functions else None
    if profile.functions and function_data is None:
        warnings.append("no worker ran a profiled call (or their stats could not be "
                        "collected), so there is no function profile")
    return {
        "version": FORMAT_VERSION,
        "warnings": warnings,
        "summary": [list(row) for row in profile.summary()] if with_timeline else [],
        "slowest": slowest(profile) if with_timeline else None,
        "timeline": timeline(profile) if with_timeline else None,
        "functions": function_data,
    }
