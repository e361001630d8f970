"""The scaling run's chart: cost against size on log-log axes, one panel per
axis, one line per contender, as SVG written with the standard library."""

from __future__ import annotations

import itertools
import math

from harness.chart import FONT, _Svg

PANEL_W, PANEL_H = 440.0, 250.0
COLUMNS = 2
MARGIN_LEFT, MARGIN_TOP, GAP = 70.0, 64.0, 60.0
#: One colour per contender of the scaling run (Okabe-Ito, as the main chart).
LINE_COLOURS = ("#D55E00", "#0072B2", "#56B4E9", "#009E73")

Point = tuple[str, int, dict[str, float | None]]  # (axis, size, seconds per contender)


def _decades(low: float, high: float) -> list[int]:
    return list(range(math.floor(math.log10(low)), math.ceil(math.log10(high)) + 1))


def _size_label(exponent: int, axis: str) -> str:
    if axis == "workers":
        return f"{10 ** exponent:g}"
    return f"10{_superscript(exponent)}"


def _superscript(number: int) -> str:
    return str(number).translate(str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹"))


def _seconds_label(exponent: int) -> str:
    value = 10.0 ** exponent
    if value >= 1:
        return f"{value:g} s"
    if value >= 1e-3:
        return f"{value * 1e3:g} ms"
    return f"{value * 1e6:g} µs"


def _panel(svg: _Svg, axis: str, points: list[Point], contenders: tuple[str, ...],
           left: float, top: float) -> None:
    sizes = [size for _, size, _ in points]
    times = [t for _, _, by in points for t in by.values() if t]
    svg.text(left, top - 12, f"{axis} (lower is better)", 14, weight="bold")
    if not times:
        svg.text(left, top + 20, "not measured", 12)
        return
    x_decades = _decades(min(sizes), max(sizes))
    y_decades = _decades(min(times), max(times))
    x0, x1 = x_decades[0], max(x_decades[-1], x_decades[0] + 1)
    y0, y1 = y_decades[0], max(y_decades[-1], y_decades[0] + 1)

    def x(size: float) -> float:
        return left + (math.log10(size) - x0) / (x1 - x0) * PANEL_W

    def y(seconds: float) -> float:
        return top + PANEL_H - (math.log10(seconds) - y0) / (y1 - y0) * PANEL_H

    for exponent in range(y0, y1 + 1):
        svg.line(left, y(10.0**exponent), left + PANEL_W, y(10.0**exponent), stroke="#ddd")
        svg.text(left - 6, y(10.0**exponent) + 4, _seconds_label(exponent), 10, "end", "#555")
    for exponent in range(x0, x1 + 1):
        svg.line(x(10.0**exponent), top, x(10.0**exponent), top + PANEL_H, stroke="#eee")
        svg.text(x(10.0**exponent), top + PANEL_H + 16, _size_label(exponent, axis), 10,
                 "middle", "#555")
    svg.line(left, top + PANEL_H, left + PANEL_W, top + PANEL_H)
    for index, name in enumerate(contenders):
        colour = LINE_COLOURS[index % len(LINE_COLOURS)]
        line = [(size, by[name]) for _, size, by in points if by.get(name)]
        for (sa, ta), (sb, tb) in itertools.pairwise(line):
            assert ta is not None and tb is not None
            svg.line(x(sa), y(ta), x(sb), y(tb), stroke=colour, width=2)
        for size, seconds in line:
            assert seconds is not None
            svg.rect(x(size) - 3, y(seconds) - 3, 6, 6, colour,
                     f"{name}: {_seconds_label_exact(seconds)} at {size:,}")


def _seconds_label_exact(seconds: float) -> str:
    if seconds >= 1:
        return f"{seconds:.2f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds * 1e6:.0f} µs"


def draw(points: list[Point], contenders: tuple[str, ...]) -> str:
    """The SVG document: a panel per axis, in the order the axes came."""
    axes = list(dict.fromkeys(axis for axis, _, _ in points))
    rows = math.ceil(len(axes) / COLUMNS)
    width = MARGIN_LEFT + COLUMNS * (PANEL_W + GAP + MARGIN_LEFT)
    height = MARGIN_TOP + 40 + rows * (PANEL_H + GAP + 30)
    svg = _Svg()
    svg.text(MARGIN_LEFT, 24, "Cost against size, log-log: interp-rpc and its peers, W = 2", 16,
             weight="bold")
    for index, name in enumerate(contenders):
        x = MARGIN_LEFT + index * 200
        svg.rect(x, 36, 14, 14, LINE_COLOURS[index % len(LINE_COLOURS)])
        svg.text(x + 20, 48, name, 12)
    for index, axis in enumerate(axes):
        column, row = index % COLUMNS, index // COLUMNS
        left = MARGIN_LEFT + column * (PANEL_W + GAP + MARGIN_LEFT)
        top = MARGIN_TOP + 40 + row * (PANEL_H + GAP + 30)
        _panel(svg, axis, [p for p in points if p[0] == axis], contenders, left, top)
    body = "\n".join(svg.parts)
    return (f"<svg xmlns='http://www.w3.org/2000/svg' width='{width:.0f}' height='{height:.0f}' "
            f"viewBox='0 0 {width:.0f} {height:.0f}' {FONT}>\n"
            f"<rect width='100%' height='100%' fill='white'/>\n{body}\n</svg>\n")
