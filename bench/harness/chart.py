"""The chart: CPU speedup per W and tiny-call latency, per contender, as SVG.

Written by hand with the standard library (matplotlib is not installed):
a few rectangles, lines and text are all it takes, and the file stays small
and diffable.
"""

from __future__ import annotations

import math
from xml.sax.saxutils import escape, quoteattr

from harness.config import Config
from harness.contenders import Contender
from harness.measures import workers_case
from harness.report import TIMES, fmt
from harness.results import Results, Summary

WIDTH = 960
FONT = "font-family='DejaVu Sans, Helvetica, Arial, sans-serif'"
# Okabe-Ito colours: distinguishable with the common colour-vision deficiencies.
COLOURS = {"interp-rpc": "#D55E00", "ipe": "#0072B2", "processes": "#009E73",
           "mp-pool": "#56B4E9", "threads": "#7F7F7F", "ipyparallel": "#CC79A7",
           "anyio": "#E69F00", "sequential": "#000000"}


class _Svg:
    def __init__(self) -> None:
        self.parts: list[str] = []

    def text(self, x: float, y: float, text: str, size: int = 12, anchor: str = "start",
             fill: str = "#222", weight: str = "normal", halo: bool = False) -> None:
        # A halo (a white outline painted under the glyphs) keeps a value
        # readable where it crosses a grid or ideal line.
        outline = " stroke='white' stroke-width='3' paint-order='stroke'" if halo else ""
        self.parts.append(
            f"<text x='{x:.1f}' y='{y:.1f}' font-size='{size}' text-anchor='{anchor}' "
            f"fill='{fill}' font-weight='{weight}'{outline}>{escape(text)}</text>")

    def rect(self, x: float, y: float, w: float, h: float, fill: str,
             title: str | None = None) -> None:
        tooltip = f"<title>{escape(title)}</title>" if title else ""
        self.parts.append(f"<rect x='{x:.1f}' y='{y:.1f}' width='{max(w, 0):.1f}' "
                          f"height='{max(h, 0):.1f}' fill={quoteattr(fill)}>{tooltip}</rect>")

    def line(self, x1: float, y1: float, x2: float, y2: float, stroke: str = "#222",
             width: float = 1, dash: str | None = None) -> None:
        dashes = f" stroke-dasharray='{dash}'" if dash else ""
        self.parts.append(f"<line x1='{x1:.1f}' y1='{y1:.1f}' x2='{x2:.1f}' y2='{y2:.1f}' "
                          f"stroke={quoteattr(stroke)} stroke-width='{width}'{dashes}/>")


def _nice_ticks(top: float, count: int = 5) -> list[float]:
    """Round tick values from 0 to at least ``top``."""
    raw = top / count
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw)
    return [i * step for i in range(math.ceil(top / step) + 1)]


def _whisker(svg: _Svg, x: float, y_low: float, y_high: float) -> None:
    svg.line(x, y_low, x, y_high, width=1.2)
    svg.line(x - 3, y_low, x + 3, y_low, width=1.2)
    svg.line(x - 3, y_high, x + 3, y_high, width=1.2)


def _speedup_panel(svg: _Svg, results: Results, cfg: Config, shown: list[Contender],
                   top: float) -> float:
    """Grouped bars of speedup per W; returns the panel's bottom edge."""
    left, right, height = 70.0, 760.0, 300.0
    base = top + 40 + height
    values = [s for c in shown for w in cfg.cpu_workers
              if (s := results.get(("cpu", workers_case(w), c.key, "speedup"))) is not None]
    ticks = _nice_ticks(max([max(cfg.cpu_workers) * 1.05, *(s.high for s in values)]))
    scale = height / ticks[-1]
    svg.text(left, top + 16, "CPU-bound speedup over sequential (higher is better)", 15,
             weight="bold")
    svg.text(left, top + 32, f"count primes below {cfg.prime_limit:,}, one task per worker; "
             f"dashed: ideal (= W); bars: median of {results.run_count} run(s), whiskers: "
             "min-max", 11, fill="#555")
    for tick in ticks:
        y = base - tick * scale
        svg.line(left, y, right, y, stroke="#ddd")
        svg.text(left - 8, y + 4, f"{tick:g}{TIMES}", 11, "end", "#555")
    svg.line(left, base, right, base)
    group = (right - left) / len(cfg.cpu_workers)
    bar = min(36.0, group * 0.8 / max(1, len(shown)))
    for index, workers in enumerate(cfg.cpu_workers):
        x0 = left + index * group + (group - bar * len(shown)) / 2
        ideal_y = base - workers * scale
        svg.line(x0 - 6, ideal_y, x0 + bar * len(shown) + 6, ideal_y, "#000", 1.5, "6 4")
        svg.text(x0 + bar * len(shown) + 10, ideal_y + 4, "ideal", 10, fill="#555")
        svg.text(left + (index + 0.5) * group, base + 18, f"W = {workers}", 12, "middle")
        for slot, contender in enumerate(shown):
            summary = results.get(("cpu", workers_case(workers), contender.key, "speedup"))
            if summary is None:
                continue
            x = x0 + slot * bar
            svg.rect(x + 2, base - summary.median * scale, bar - 4, summary.median * scale,
                     COLOURS[contender.key],
                     f"{contender.label}: {summary.median:.2f}{TIMES}")
            if summary.high > summary.low:
                _whisker(svg, x + bar / 2, base - summary.low * scale,
                         base - summary.high * scale)
            svg.text(x + bar / 2, base - summary.high * scale - 5, f"{summary.median:.2f}",
                     10, "middle", halo=True)
    _legend(svg, shown, right + 20, top + 50)
    return base + 30


def _legend(svg: _Svg, shown: list[Contender], x: float, y: float) -> None:
    for index, contender in enumerate(shown):
        svg.rect(x, y + index * 22, 14, 14, COLOURS[contender.key])
        svg.text(x + 20, y + index * 22 + 12, contender.short, 12)


def _latency_rows(results: Results, cfg: Config,
                  contenders: list[Contender]) -> list[tuple[str, str, Summary, Summary]]:
    """(label, colour key, p50, p99) for every measured way of calling."""
    case = workers_case(cfg.workers)
    rows = []
    for contender in contenders:
        for way, name in (("submit", contender.submit_way), ("call", "call")):
            p50 = results.get(("latency", case, contender.key, f"{way}_p50_us"))
            p99 = results.get(("latency", case, contender.key, f"{way}_p99_us"))
            if p50 is not None and p99 is not None:
                rows.append((f"{contender.short} {name}", contender.key, p50, p99))
    return rows


def _latency_panel(svg: _Svg, results: Results, cfg: Config, contenders: list[Contender],
                   top: float) -> float:
    """Horizontal bars of p50 with a p99 whisker; returns the panel's bottom edge."""
    rows = _latency_rows(results, cfg, contenders)
    left, right, row_height = 290.0, 760.0, 26.0
    svg.text(70, top + 16, f"Tiny-call latency, W={cfg.workers} (lower is better)", 15,
             weight="bold")
    if not rows:
        svg.text(70, top + 60, "no latency measured", 12)
        return top + 80
    low = min(p50.median for _, _, p50, _ in rows)
    high = max(p99.median for _, _, _, p99 in rows)
    logarithmic = high / low > 30  # a slow p99 or ipyparallel's milliseconds
    svg.text(70, top + 32, f"bar: p50; whisker to p99; labels: p50 / p99 (medians of "
             f"{results.run_count} run(s))"
             + ("; logarithmic scale" if logarithmic else ""), 11, fill="#555")
    if logarithmic:
        decades = range(math.floor(math.log10(low)), math.ceil(math.log10(high)) + 1)
        ticks = [10.0 ** d for d in decades]

        def position(v: float) -> float:
            span = math.log10(ticks[-1] / ticks[0])
            return left + (right - left) * math.log10(v / ticks[0]) / span
    else:
        ticks = _nice_ticks(high)

        def position(v: float) -> float:
            return left + (right - left) * v / ticks[-1]
    plot_top, plot_bottom = top + 44, top + 44 + row_height * len(rows)
    for tick in ticks:
        x = position(tick)
        svg.line(x, plot_top, x, plot_bottom, stroke="#ddd")
        svg.text(x, plot_bottom + 16, f"{fmt(tick)} µs", 11, "middle", "#555")
    svg.line(left, plot_top, left, plot_bottom)
    for index, (label, key, p50, p99) in enumerate(rows):
        y = plot_top + index * row_height
        svg.text(left - 8, y + row_height / 2 + 4, label, 12, "end")
        start = position(ticks[0]) if logarithmic else left
        svg.rect(start, y + 4, position(p50.median) - start, row_height - 8, COLOURS[key],
                 f"{label}: p50 {fmt(p50.median)} µs, p99 {fmt(p99.median)} µs")
        middle = y + row_height / 2
        svg.line(position(p50.median), middle, position(p99.median), middle, width=1.2)
        svg.line(position(p99.median), middle - 5, position(p99.median), middle + 5, width=1.2)
        svg.text(max(position(p99.median), position(p50.median)) + 8, middle + 4,
                 f"{fmt(p50.median)} / {fmt(p99.median)} µs", 11, fill="#333", halo=True)
    return plot_bottom + 30


def render(results: Results, cfg: Config, contenders: list[Contender], subtitle: str) -> str:
    """The whole chart as an SVG document."""
    svg = _Svg()
    svg.text(20, 28, "interp-rpc benchmark" + (" (--quick)" if cfg.quick else ""), 18,
             weight="bold")
    svg.text(20, 48, subtitle, 11, fill="#555")
    shown = [c for c in contenders if c.key != "sequential"]
    bottom = _speedup_panel(svg, results, cfg, shown, 70)
    bottom = _latency_panel(svg, results, cfg, contenders, bottom + 10)
    height = math.ceil(bottom)
    return "\n".join([
        "<?xml version='1.0' encoding='UTF-8'?>",
        f"<svg xmlns='http://www.w3.org/2000/svg' width='{WIDTH}' height='{height}' "
        f"viewBox='0 0 {WIDTH} {height}' {FONT}>",
        f"<rect width='{WIDTH}' height='{height}' fill='white'/>",
        *svg.parts, "</svg>", ""])
