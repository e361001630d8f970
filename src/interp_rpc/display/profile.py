"""A Profile in a notebook: a timeline, a summary, and the function profile.

The HTML carries two versions of every picture. A static SVG, as an
``<img src="data:image/svg+xml;base64,...">``: JupyterLab's sanitizer keeps it
in an untrusted notebook (it strips inline ``<svg>``, ``<style>`` and
``<script>``), and so do HTML exports. In a trusted or live notebook the
inline script replaces the pictures with the interactive timeline and icicle
(zoom, pan, hover cards) and makes the function table sortable. Nothing is
loaded from the network. The static pictures carry their own light
background, since an image cannot read the page's theme; the interactive ones
use JupyterLab's CSS variables (with light fallbacks), and their text
``currentColor``.
"""

from __future__ import annotations

import base64
import html as html_lib
import itertools
import json
from typing import Any

from interp_rpc.display.assets import SCRIPT, STYLE
from interp_rpc.profiling import model
from interp_rpc.profiling.model import Profile

#: Above this many items in view, bars are aggregated per pixel column.
AGGREGATE_ABOVE = 5000
#: Items whose details are embedded for the interactive view; beyond it the
#: interactive view shows the aggregated columns only (export() keeps all).
MAX_EMBEDDED_ITEMS = 50_000

# Bar colours per target: mid-luminance colours with at least 3:1 contrast
# against both a white and a near-black background (WCAG 2.1 non-text
# contrast), so bars read in light and dark themes alike.
PALETTE = ("#0969da", "#1a7f37", "#8250df", "#9a6700", "#bc4c00", "#1b7c83", "#bf3989",
           "#6e7781")
PROBLEM_COLOUR = "#cf222e"  # the mark of a failed, cancelled or timed-out item
TEXT = "#1f2328"  # static pictures: on their own white background (15:1)
MUTED = "#59636e"  # 6.1:1 on white
LANE = "#f0f2f4"

WIDTH, LEFT, RIGHT, TOP, LANE_HEIGHT = 900, 76, 12, 40, 26
LABEL_CHAR_WIDTH = 6  # about, at font-size 11


def target_colours(profile: Profile) -> dict[str, str]:
    targets = sorted({r.target for r in profile.records})
    return {t: c for t, c in zip(targets, itertools.cycle(PALETTE), strict=False)}


def _ticks(span_ns: int, width: float, max_ticks: int = 8) -> list[tuple[float, str]]:
    """(offset ns, label) of round time ticks over [0, span]."""
    if span_ns <= 0:
        return [(0, "0")]
    raw = span_ns / max_ticks
    step = 1.0
    while step * 10 <= raw:
        step *= 10
    for mult in (1, 2, 5, 10):
        if step * mult >= raw:
            step *= mult
            break
    unit, div = ("s", 1e9) if step >= 1e8 else ("ms", 1e6) if step >= 1e5 else ("µs", 1e3)
    ticks, t = [], 0.0
    while t <= span_ns + 1e-9:
        value = t / div
        ticks.append((t, f"{value:g} {unit}"))
        t += step
    return ticks


def lane_margin(profile: Profile, labels: list[str]) -> int:
    """The width left of the plot: room for the lanes' labels (a cluster's
    lanes name their process and host)."""
    if not profile.lane_groups:
        return LEFT
    return max(LEFT, min(WIDTH // 2, 12 + LABEL_CHAR_WIDTH * max(map(len, labels), default=0)))


def static_svg(profile: Profile, width: int = WIDTH) -> str:
    """The timeline as a self-contained SVG (its own background and colours)."""
    colours = target_colours(profile)
    labels = profile.lane_labels()
    left = lane_margin(profile, labels)
    plot = width - left - RIGHT
    legend_rows = 1 + (len(colours) + 4) // 5
    height = TOP + LANE_HEIGHT * profile.workers + 30 + 18 * legend_rows
    span = max(1, profile.wall_ns)
    origin = profile.start_ns

    def x(ns: int) -> float:
        return left + (ns - origin) * plot / span

    ran = profile.ran()
    aggregated = sum(r.count for r in ran) > AGGREGATE_ABOVE
    title = (f"Timeline: {profile.items:,} items on {profile.workers} workers, "
             f"{model._ms(profile.wall_ns)}, {profile.utilization:.0%} utilization")
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" class="interp-rpc-gantt" '
             f'width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
             f'font-family="sans-serif" font-size="11" role="img">',
             f"<title>{html_lib.escape(title)}</title>",
             f'<rect width="{width}" height="{height}" fill="#ffffff"/>',
             f'<text x="{left}" y="16" fill="{TEXT}" font-weight="bold">'
             f"{html_lib.escape(title)}</text>"]
    if aggregated:
        parts.append(f'<text x="{left}" y="30" fill="{MUTED}">{sum(r.count for r in ran):,} '
                     f"items aggregated per pixel column (more than {AGGREGATE_ABOVE:,}): "
                     "shade = share of the column busy, colour = the column's main target"
                     "</text>")
    elif profile.warnings():
        parts.append(f'<text x="{left}" y="30" fill="{PROBLEM_COLOUR}">'
                     f"{html_lib.escape(profile.warnings()[0][:140])}</text>")
    for w in range(profile.workers):
        y = TOP + w * LANE_HEIGHT
        parts.append(f'<text x="4" y="{y + 16}" fill="{TEXT}">'
                     f"{html_lib.escape(labels[w])}</text>")
        parts.append(f'<rect x="{left}" y="{y + 2}" width="{plot}" height="{LANE_HEIGHT - 4}" '
                     f'fill="{LANE}"/>')
    if aggregated:
        for w, columns in enumerate(aggregate(profile, plot)):
            y = TOP + w * LANE_HEIGHT
            for col, (busy, count, target, problems) in columns.items():
                if not count:
                    continue
                opacity = max(0.25, min(1.0, busy))
                parts.append(f'<rect x="{left + col}" y="{y + 4}" width="1" '
                             f'height="{LANE_HEIGHT - 8}" fill="{colours[target]}" '
                             f'fill-opacity="{opacity:.2f}"/>')
                if problems:
                    parts.append(f'<rect x="{left + col}" y="{y + 2}" width="1" height="3" '
                                 f'fill="{PROBLEM_COLOUR}"/>')
    else:
        for r in ran:
            y = TOP + r.worker * LANE_HEIGHT
            bx, bw = x(r.started_ns), max(1.0, x(r.finished_ns) - x(r.started_ns))
            problem = r.outcome in model.PROBLEMS
            stroke = f' stroke="{PROBLEM_COLOUR}" stroke-width="2"' if problem else ""
            parts.append(f'<rect x="{bx:.2f}" y="{y + 5}" width="{bw:.2f}" '
                         f'height="{LANE_HEIGHT - 10}" fill="{colours[r.target]}"{stroke}/>')
            if problem:
                parts.append(f'<path d="M{bx:.2f} {y + 1}l4 0l-2 4z" fill="{PROBLEM_COLOUR}"/>')
    for _, first, _ in profile.lane_groups[1:]:  # a line between processes
        y = TOP + first * LANE_HEIGHT
        parts.append(f'<line x1="0" x2="{width}" y1="{y}" y2="{y}" stroke="{MUTED}"/>')
    axis_y = TOP + LANE_HEIGHT * profile.workers
    for offset, label in _ticks(span, plot):
        tx = left + offset * plot / span
        parts.append(f'<line x1="{tx:.1f}" x2="{tx:.1f}" y1="{axis_y}" y2="{axis_y + 4}" '
                     f'stroke="{MUTED}"/>')
        parts.append(f'<text x="{tx:.1f}" y="{axis_y + 15}" fill="{MUTED}" '
                     f'text-anchor="middle">{label}</text>')
    ly = axis_y + 34
    entries = [(t, c, False) for t, c in colours.items()]
    entries.append(("failed / cancelled / timed out", PROBLEM_COLOUR, True))
    for i, (name, colour, problem) in enumerate(entries):
        lx = LEFT + (i % 5) * 165
        row_y = ly + (i // 5) * 18
        fill = "none" if problem else colour
        stroke = f' stroke="{colour}" stroke-width="2"' if problem else ""
        parts.append(f'<rect x="{lx}" y="{row_y - 9}" width="12" height="10" fill="{fill}"'
                     f"{stroke}/>")
        parts.append(f'<text x="{lx + 16}" y="{row_y}" fill="{TEXT}">'
                     f"{html_lib.escape(name if problem else _short(name, 24))}</text>")
    parts.append("</svg>")
    return "".join(parts)


def aggregate(profile: Profile, columns: int
              ) -> list[dict[int, tuple[float, int, str, int]]]:
    """Per worker, per pixel column: (busy share, items, main target, problem items)."""
    span = max(1, profile.wall_ns)
    busy: list[dict[int, float]] = [{} for _ in range(profile.workers)]
    counts: list[dict[int, int]] = [{} for _ in range(profile.workers)]
    problems: list[dict[int, int]] = [{} for _ in range(profile.workers)]
    targets: list[dict[int, dict[str, float]]] = [{} for _ in range(profile.workers)]
    per_column = span / columns
    for r in profile.ran():
        if not 0 <= r.worker < profile.workers:
            continue
        start = (r.started_ns - profile.start_ns) / per_column
        end = (r.finished_ns - profile.start_ns) / per_column
        first, last = int(start), min(columns - 1, int(end))
        counts[r.worker][first] = counts[r.worker].get(first, 0) + r.count
        if r.outcome in model.PROBLEMS:
            problems[r.worker][first] = problems[r.worker].get(first, 0) + r.count
        for col in range(first, last + 1):
            share = min(end, col + 1) - max(start, col)
            busy[r.worker][col] = busy[r.worker].get(col, 0.0) + share
            by_target = targets[r.worker].setdefault(col, {})
            by_target[r.target] = by_target.get(r.target, 0.0) + share
    out = []
    for w in range(profile.workers):
        lane = {}
        for col, share in busy[w].items():
            main = max(targets[w][col].items(), key=lambda kv: kv[1])[0]
            lane[col] = (share, counts[w].get(col, 0) or 1, main, problems[w].get(col, 0))
        out.append(lane)
    return out


def _short(text: str, n: int) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def _img(svg: str, alt: str, cls: str) -> str:
    data = base64.b64encode(svg.encode("utf-8")).decode("ascii")
    return (f'<img class="{cls}" src="data:image/svg+xml;base64,{data}" '
            f'alt="{html_lib.escape(alt)}" style="max-width:100%">')


def _item_data(profile: Profile, colours: dict[str, str]) -> dict[str, Any]:
    """The interactive timeline's data, in columns (compact JSON)."""
    targets = list(colours)
    outcomes = sorted({r.outcome for r in profile.records})
    ran = profile.ran()[:MAX_EMBEDDED_ITEMS]
    o = profile.start_ns
    return {
        "workers": profile.workers, "span": profile.wall_ns, "targets": targets,
        "laneLabels": (labels := profile.lane_labels()),
        "left": lane_margin(profile, labels),
        "colours": [colours[t] for t in targets], "outcomes": outcomes,
        "problems": [outcomes.index(x) for x in outcomes if x in model.PROBLEMS],
        "aggregateAbove": AGGREGATE_ABOVE, "truncated": len(profile.ran()) - len(ran),
        "w": [r.worker for r in ran], "s": [r.started_ns - o for r in ran],
        "e": [r.finished_ns - o for r in ran], "t": [targets.index(r.target) for r in ran],
        "o": [outcomes.index(r.outcome) for r in ran], "i": [r.item for r in ran],
        "n": [r.count for r in ran], "g": [r.group for r in ran],
        "q": [r.queue_wait_ns for r in ran], "ri": [r.request_items for r in ran],
        "ser": [r.serialize_ns for r in ran], "de": [r.deserialize_ns for r in ran],
        "rs": [r.result_serialize_ns for r in ran],
    }


def _table(rows: list[tuple[str, str]]) -> str:
    return "<table class='irpc-summary'>" + "".join(
        f"<tr><th style='text-align:left'>{html_lib.escape(k)}</th>"
        f"<td style='text-align:left'>{html_lib.escape(v)}</td></tr>" for k, v in rows) + "</table>"


def _slowest(profile: Profile) -> str:
    rows = "".join(
        f"<tr><td style='text-align:left'>{html_lib.escape(r.label)}</td><td>worker {r.worker}"
        f"</td><td>{model._ms(r.run_ns // r.count)}"
        f"{' (group average)' if r.group > 1 else ''}</td>"
        f"<td>{html_lib.escape(r.outcome)}</td></tr>" for r in profile.slowest())
    return ("<table class='irpc-slowest'><caption style='text-align:left'><b>slowest items"
            "</b></caption><tr><th>item</th><th>worker</th><th>run time</th><th>outcome</th>"
            f"</tr>{rows}</table>")


def html(profile: Profile) -> str:
    """The profile as HTML: static pictures that survive sanitizing, plus the
    interactive versions a trusted notebook's script builds from them."""
    from interp_rpc.display import functions as _profile_functions

    colours = target_colours(profile)
    svg = static_svg(profile)
    warnings = "".join(f"<p class='irpc-warning'><b>Warning:</b> {html_lib.escape(w)}</p>"
                       for w in profile.warnings())
    functions = _profile_functions.html(profile) if profile.functions else ""
    data = json.dumps(_item_data(profile, colours), separators=(",", ":"))
    picture = _img(svg, "timeline of the profiled run", "irpc-timeline-img")
    return (f"<div class='interp-rpc-profile'><style>{STYLE}</style>{warnings}"
            f"<div class='irpc-static'>{picture}"
            "</div><div class='irpc-live' hidden></div>"
            f"{_table(profile.summary())}{_slowest(profile)}{functions}"
            f"<script type='application/json' class='irpc-data'>{json_in_html(data)}</script>"
            f"<script>{SCRIPT}</script></div>")


def json_in_html(text: str) -> str:
    """JSON that cannot end the <script> element it sits in."""
    return text.replace("</", "<\\/")


def bundle(profile: Profile) -> dict[str, Any]:
    """Every view of the profile: its data for the JupyterLab extension, and
    the HTML, picture and text for frontends without it."""
    from interp_rpc.display import profile_mime  # here: it imports this module

    return {profile_mime.MIME_TYPE: profile_mime.data(profile), "text/html": html(profile),
            "image/svg+xml": static_svg(profile), "text/plain": profile.text()}

