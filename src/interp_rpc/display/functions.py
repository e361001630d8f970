"""The function profile of a Profile: a %prun-like table and an icicle graph.

Both read the pstats dicts the workers sent (one per worker). The table has
calls, total and cumulative time summed over workers, then per worker; a
trusted notebook sorts it on a header click. The icicle is built from the
merged caller/callee edges (cProfile keeps no full stacks): each function's
children share its width in proportion to the cumulative time spent in them
when called from it. A trusted notebook's script redraws it interactive
(a card per box, a click zooms to it) from the boxes embedded as JSON.
"""

from __future__ import annotations

import base64
import html as html_lib
import json
from dataclasses import dataclass
from typing import Any

from interp_rpc.display.profile import PALETTE, json_in_html
from interp_rpc.profiling.model import Profile

#: Rows of the table (the rest is in Profile.stats).
TOP_FUNCTIONS = 40
#: Depth and smallest width (share of the total) the icicle draws.
ICICLE_DEPTH = 12
ICICLE_MIN_SHARE = 0.005
ICICLE_WIDTH = 900
#: The static icicle's fills: pale, under dark text on its white background.
ICICLE_PALE = ("#ddf4ff", "#dafbe1", "#fbefff", "#fff8c5", "#ffebe9")
#: The interactive icicle's fills, drawn translucent over the theme's
#: background under text in the theme's colour: the timeline's palette.
ICICLE_COLOURS = PALETTE

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
    nodes = icicle_nodes(profile)
    picture = base64.b64encode(icicle_svg(nodes).encode("utf-8")).decode("ascii")
    data = json.dumps(_icicle_data(nodes), separators=(",", ":"))
    return ("<div class='irpc-functions'><b>Functions, across all workers</b> (seconds; "
            "click a header to sort)<div style='overflow-x:auto'><table class='irpc-sortable'>"
            f"<thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table></div>"
            "<b>Icicle of the merged call graph</b> (width: cumulative time)<br>"
            f"<img class='irpc-icicle-img' src='data:image/svg+xml;base64,{picture}' "
            "alt='icicle graph' style='max-width:100%'><div class='irpc-icicle-live' hidden>"
            "</div><script type='application/json' class='irpc-icicle-data'>"
            f"{json_in_html(data)}</script></div>")


@dataclass(frozen=True)
class IcicleNode:
    """One box: a function as called from its parent box. ``x`` and ``width``
    are shares of the whole width; times in seconds, for that call path."""

    func: Func
    depth: int
    x: float
    width: float
    calls: int
    tottime: float
    cumtime: float


def _merged(profile: Profile) -> dict[Func, Any]:
    merged = profile.stats
    return {} if merged is None else dict(merged.stats)  # type: ignore[attr-defined]


def icicle_nodes(profile: Profile) -> list[IcicleNode]:
    """The boxes of the icicle, roots on top: each function's callees share
    its width in proportion to the cumulative time spent in them when called
    from it (boxes narrower than ICICLE_MIN_SHARE or deeper than ICICLE_DEPTH
    are left out)."""
    stats = _merged(profile)
    callees: dict[Func, dict[Func, tuple[int, float, float]]] = {}
    for func, (_, _, _, _, callers) in stats.items():
        for caller, edge in callers.items():
            callees.setdefault(caller, {})[func] = (edge[1], edge[2], edge[3])
    roots = [(f, (v[1], v[2], v[3])) for f, v in stats.items() if not v[4]]
    total = sum(edge[2] for _, edge in roots) or 1.0
    nodes: list[IcicleNode] = []

    def place(func: Func, edge: tuple[int, float, float], x: float, w: float, depth: int,
              path: frozenset[Func]) -> None:
        if w < ICICLE_MIN_SHARE or depth >= ICICLE_DEPTH:
            return
        nodes.append(IcicleNode(func, depth, x, w, *edge))
        children = {c: e for c, e in callees.get(func, {}).items() if c not in path}
        own = stats[func][3] or 1.0
        cx = x
        for child, child_edge in sorted(children.items(), key=lambda kv: kv[1][2],
                                        reverse=True):
            cw = w * min(1.0, child_edge[2] / own)
            place(child, child_edge, cx, cw, depth + 1, path | {child})
            cx += cw

    x = 0.0
    for func, edge in sorted(roots, key=lambda kv: kv[1][2], reverse=True):
        w = edge[2] / total
        place(func, edge, x, w, 0, frozenset({func}))
        x += w
    return nodes


def _short_label(func: Func) -> str:
    return label(func).rsplit("/", 1)[-1]


def _icicle_data(nodes: list[IcicleNode]) -> dict[str, Any]:
    """The interactive icicle's data, in columns (times in ns)."""
    return {"width": ICICLE_WIDTH, "depth": max((n.depth + 1 for n in nodes), default=1),
            "colours": ICICLE_COLOURS, "name": [label(n.func) for n in nodes],
            "short": [_short_label(n.func) for n in nodes], "d": [n.depth for n in nodes],
            "x": [n.x for n in nodes], "w": [n.width for n in nodes],
            "calls": [n.calls for n in nodes], "tt": [round(n.tottime * 1e9) for n in nodes],
            "ct": [round(n.cumtime * 1e9) for n in nodes]}


def icicle_svg(nodes: list[IcicleNode], width: int = ICICLE_WIDTH) -> str:
    """The icicle as a self-contained picture (its own background and colours)."""
    row = 18
    boxes = []
    for index, node in enumerate(nodes):
        x, w, y = node.x * width, node.width * width, node.depth * row
        name = html_lib.escape(_short_label(node.func)[: max(0, int(w / 6.5))])
        boxes.append(f'<rect x="{x:.1f}" y="{y}" width="{w:.1f}" height="{row - 1}" '
                     f'fill="{ICICLE_PALE[index % len(ICICLE_PALE)]}" stroke="#8c959f" '
                     f'stroke-width="0.5"/><text x="{x + 3:.1f}" y="{y + 13}" '
                     f'fill="#1f2328">{name}</text>')
    height = max(row, max((n.depth + 1 for n in nodes), default=1) * row)
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
            f'font-family="sans-serif" font-size="11"><rect width="{width}" height="{height}" '
            f'fill="#ffffff"/>{"".join(boxes)}</svg>')
