"""%parallel_profile: where the time of the last parallel run went.

Built from the engine's per-request records (``pool.call_records``): a
timeline per worker (an SVG Gantt chart), utilization, queue wait,
serialization cost, and the slowest requests, with a text fallback.
"""

from __future__ import annotations

import html
from dataclasses import dataclass

from interp_rpc._pool import CallRecord

_PALETTE = ["#0969da", "#1a7f37", "#8250df", "#bf8700", "#cf222e", "#1b7c83"]


@dataclass(frozen=True)
class Profile:
    records: list[CallRecord]
    workers: int
    wall_seconds: float
    busy_seconds: list[float]  # per worker
    queue_wait_seconds: float  # total
    max_queue_wait_seconds: float
    serialize_seconds: float  # caller pickling + worker unpickling + result pickling
    items: int

    @property
    def utilization(self) -> float:
        """Busy time over the workers' available time, 0..1."""
        if self.wall_seconds <= 0 or self.workers == 0:
            return 0.0
        return sum(self.busy_seconds) / (self.wall_seconds * self.workers)

    def slowest(self, n: int = 5) -> list[CallRecord]:
        return sorted(self.records, key=lambda r: r.finished_ns - r.started_ns, reverse=True)[:n]


def build(records: list[CallRecord], workers: int) -> Profile | None:
    ran = [r for r in records if r.started_ns and r.finished_ns and r.worker >= 0]
    if not ran:
        return None
    start = min(r.submitted_ns or r.enqueued_ns for r in ran)
    end = max(r.finished_ns for r in ran)
    busy = [0.0] * workers
    for r in ran:
        busy[r.worker] += (r.finished_ns - r.started_ns) / 1e9
    waits = [(r.started_ns - r.enqueued_ns) / 1e9 for r in ran]
    serialize = sum(r.serialize_ns + r.deserialize_ns + r.result_serialize_ns for r in ran) / 1e9
    return Profile(records=ran, workers=workers, wall_seconds=(end - start) / 1e9,
                   busy_seconds=busy, queue_wait_seconds=sum(waits),
                   max_queue_wait_seconds=max(waits), serialize_seconds=serialize,
                   items=sum(r.item_count for r in ran))


def _label(r: CallRecord) -> str:
    if r.item_index is None:
        return r.target
    last = r.item_index + r.item_count - 1
    items = f"item {r.item_index}" if r.item_count == 1 else f"items {r.item_index}-{last}"
    return f"{r.target} {items}"


def gantt_svg(p: Profile, width: int = 720, standalone: bool = False) -> str:
    """One lane per worker; each request a bar from start to finish, its queue
    wait drawn as a thin line before it.

    Text, lanes and wait lines use ``currentColor``, so inline in a page they
    follow its theme (light or dark). A ``standalone`` image (the
    ``image/svg+xml`` bundle, shown as an <img> that inherits no colour) gets
    dark text on its own white background instead."""
    lane, top, left = 26, 24, 70
    height = top + lane * p.workers + 28
    start = min(r.submitted_ns or r.enqueued_ns for r in p.records)
    span = max(1, max(r.finished_ns for r in p.records) - start)
    scale = (width - left - 10) / span

    def x(ns: int) -> float:
        return left + (ns - start) * scale

    colour = ' color="#1f2328"' if standalone else ""
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" class="interp-rpc-gantt" width="{width}" '
             f'height="{height}" font-family="sans-serif" font-size="11" fill="currentColor"'
             f'{colour}>']
    if standalone:
        parts.append(f'<rect width="{width}" height="{height}" fill="#ffffff"/>')
    parts.append(f'<text x="{left}" y="14">timeline of the last run '
                 f'({p.wall_seconds * 1000:.1f} ms, {p.utilization:.0%} utilization)</text>')
    for w in range(p.workers):
        y = top + w * lane
        parts.append(f'<text x="4" y="{y + 16}">worker {w}</text>')
        parts.append(f'<rect x="{left}" y="{y + 2}" width="{width - left - 10}" '
                     f'height="{lane - 6}" fill="currentColor" fill-opacity="0.07"/>')
    for i, r in enumerate(p.records):
        y = top + r.worker * lane
        bar = _PALETTE[i % len(_PALETTE)]
        wait_x, run_x = x(r.enqueued_ns), x(r.started_ns)
        run_w = max(1.0, x(r.finished_ns) - run_x)
        parts.append(f'<line x1="{wait_x:.1f}" x2="{run_x:.1f}" y1="{y + lane / 2:.1f}" '
                     f'y2="{y + lane / 2:.1f}" stroke="currentColor" stroke-opacity="0.45" '
                     'stroke-width="1"/>')
        ms = (r.finished_ns - r.started_ns) / 1e6
        parts.append(f'<rect x="{run_x:.1f}" y="{y + 4}" width="{run_w:.1f}" '
                     f'height="{lane - 10}" fill="{bar}"><title>'
                     f'{html.escape(_label(r))}: {ms:.2f} ms</title></rect>')
    axis_y = top + p.workers * lane + 14
    parts.append(f'<text x="{left}" y="{axis_y}">0</text>')
    parts.append(f'<text x="{width - 10}" y="{axis_y}" text-anchor="end">'
                 f'{span / 1e6:.1f} ms</text>')
    parts.append("</svg>")
    return "".join(parts)


def summary_rows(p: Profile) -> list[tuple[str, str]]:
    rows = [
        ("requests / items", f"{len(p.records)} / {p.items}"),
        ("wall time", f"{p.wall_seconds * 1000:.1f} ms"),
        ("utilization", f"{p.utilization:.0%} of {p.workers} workers"),
        ("busy per worker", ", ".join(f"{b * 1000:.1f} ms" for b in p.busy_seconds)),
        ("queue wait", f"total {p.queue_wait_seconds * 1000:.1f} ms, "
                       f"max {p.max_queue_wait_seconds * 1000:.2f} ms"),
        ("serialization", f"{p.serialize_seconds * 1000:.2f} ms "
                          "(pickling requests and results, both sides)"),
    ]
    return rows


def render(p: Profile) -> dict[str, str]:
    """The profile as a display bundle: SVG timeline plus tables, and text."""
    slow = p.slowest()
    rows = "".join(f"<tr><th style='text-align:left'>{k}</th><td>{html.escape(v)}</td></tr>"
                   for k, v in summary_rows(p))
    slow_rows = "".join(
        f"<tr><td>{html.escape(_label(r))}</td><td>worker {r.worker}</td>"
        f"<td>{(r.finished_ns - r.started_ns) / 1e6:.2f} ms</td></tr>" for r in slow)
    html_out = (f'<div class="interp-rpc-profile">{gantt_svg(p)}<table>{rows}</table>'
                f"<div><b>slowest requests</b></div><table>{slow_rows}</table></div>")
    text = "\n".join(f"{k:18} {v}" for k, v in summary_rows(p))
    text += "\nslowest requests:\n" + "\n".join(
        f"  {(r.finished_ns - r.started_ns) / 1e6:9.2f} ms  worker {r.worker}  {_label(r)}"
        for r in slow)
    return {"text/html": html_out, "image/svg+xml": gantt_svg(p, standalone=True),
            "text/plain": text}
