"""The function profile of a Profile: a %prun-like table and an icicle graph.

Both read the pstats dicts the workers sent (one per worker). The table has
calls, total and cumulative time summed over workers, then per worker; a
trusted notebook sorts it on a header click. The icicle is built from the
merged caller/callee edges (cProfile keeps no full stacks): each function's
children share its width in proportion to the cumulative time spent in them
when called from it.
"""

from __future__ import annotations

import base64
import html as html_lib
import itertools
from typing import Any

from interp_rpc._profile import Profile

#: Rows of the table (the rest is in Profile.stats).
TOP_FUNCTIONS = 40
#: Depth and smallest width (share of the total) the icicle draws.
ICICLE_DEPTH = 12
ICICLE_MIN_SHARE = 0.005

Func = tuple[str, int, str]


def label(func: Func) -> str:
    """As pstats prints it: file:line(name), or {name} for C functions."""
    filename, line, name = func
    if filename == "~":
        return name if name.startswith("<") else "{" + name + "}"
    return f"{filename}:{line}({name})"


def rows(profile: Profile) -> list[tuple[Func, list[tuple[int, float, float]]]]:
    """Per function: [(calls, tottime, cumtime) summed, then per worker], most
    total time first."""
    workers = sorted(profile.worker_stats)
    table: dict[Func, list[tuple[int, float, float]]] = {}
    for index, worker in enumerate(workers):
        for func, (_, nc, tt, ct, _) in profile.worker_stats[worker].items():
            entry = table.setdefault(func, [(0, 0.0, 0.0)] * (len(workers) + 1))
            entry[index + 1] = (nc, tt, ct)
            total = entry[0]
            entry[0] = (total[0] + nc, total[1] + tt, total[2] + ct)
    return sorted(table.items(), key=lambda kv: kv[1][0][1], reverse=True)


def html(profile: Profile) -> str:
    workers = sorted(profile.worker_stats)
    if not workers:
        return ("<p><b>Function profile:</b> no worker ran a profiled call (or their stats "
                "could not be collected; see the warnings).</p>")
    head = "<th data-col='0'>function</th>" + "".join(
        f"<th data-col='{i}'>{h}</th>" for i, h in enumerate(
            [f"{what} {who}" for who in ["(all)", *[f"w{w}" for w in workers]]
             for what in ("calls", "tottime", "cumtime")], start=1))
    body = []
    for func, cells in rows(profile)[:TOP_FUNCTIONS]:
        tds = "".join(f"<td data-v='{nc}'>{nc:,}</td><td data-v='{tt:.6f}'>{tt:.4f}</td>"
                      f"<td data-v='{ct:.6f}'>{ct:.4f}</td>" for nc, tt, ct in cells)
        name = html_lib.escape(label(func))
        body.append(f"<tr><td data-v='{name}' style='text-align:left'>{name}</td>{tds}</tr>")
    icicle = icicle_svg(profile)
    data = base64.b64encode(icicle.encode("utf-8")).decode("ascii")
    return ("<div class='irpc-functions'><b>Functions, across all workers</b> (seconds; "
            "click a header to sort)<div style='overflow-x:auto'><table class='irpc-sortable'>"
            f"<thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table></div>"
            "<b>Icicle of the merged call graph</b> (width: cumulative time)<br>"
            f"<img src='data:image/svg+xml;base64,{data}' alt='icicle graph' "
            "style='max-width:100%'></div>")


def _merged(profile: Profile) -> dict[Func, Any]:
    merged = profile.stats
    return {} if merged is None else dict(merged.stats)  # type: ignore[attr-defined]


def icicle_svg(profile: Profile, width: int = 900) -> str:
    """Roots on top, callees below; a self-contained picture (own background)."""
    stats = _merged(profile)
    callees: dict[Func, dict[Func, float]] = {}
    for func, (_, _, _, _, callers) in stats.items():
        for caller, edge in callers.items():
            callees.setdefault(caller, {})[func] = edge[3]
    roots = [(f, v[3]) for f, v in stats.items() if not v[4]]
    total = sum(ct for _, ct in roots) or 1.0
    row, palette = 18, itertools.cycle(("#ddf4ff", "#dafbe1", "#fbefff", "#fff8c5", "#ffebe9"))
    boxes: list[str] = []
    depth_used = 0

    def place(func: Func, x: float, w: float, depth: int, path: frozenset[Func]) -> None:
        nonlocal depth_used
        if w < ICICLE_MIN_SHARE * width or depth >= ICICLE_DEPTH:
            return
        depth_used = max(depth_used, depth + 1)
        name = html_lib.escape(label(func).rsplit("/", 1)[-1])
        y = depth * row
        boxes.append(f'<rect x="{x:.1f}" y="{y}" width="{w:.1f}" height="{row - 1}" '
                     f'fill="{next(palette)}" stroke="#8c959f" stroke-width="0.5"/>'
                     f'<text x="{x + 3:.1f}" y="{y + 13}" fill="#1f2328">'
                     f'{name[: max(0, int(w / 6.5))]}</text>')
        children = {c: ct for c, ct in callees.get(func, {}).items() if c not in path}
        own = stats[func][3] or 1.0
        cx = x
        for child, ct in sorted(children.items(), key=lambda kv: kv[1], reverse=True):
            cw = w * min(1.0, ct / own)
            place(child, cx, cw, depth + 1, path | {child})
            cx += cw

    x = 0.0
    for func, ct in sorted(roots, key=lambda kv: kv[1], reverse=True):
        w = width * ct / total
        place(func, x, w, 0, frozenset({func}))
        x += w
    height = max(row, depth_used * row)
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
            f'font-family="sans-serif" font-size="11"><rect width="{width}" height="{height}" '
            f'fill="#ffffff"/>{"".join(boxes)}</svg>')
