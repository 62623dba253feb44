"""Charts as SVG markup drawn on the server: no script, no library, nothing fetched.

Each function returns one ``<svg>`` element sized by its viewBox (CSS scales
it). Every label passes through :func:`e`; colours are presentation attributes,
not ``style``, so the page's Content-Security-Policy can forbid inline styles.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import msgspec

from waza.runner.reports.report_html import e

__all__ = ["STATUS_COLOURS", "Point", "Series", "bars", "confusion", "histogram", "k_curves"]

W, H = 440, 230
LEFT, RIGHT, TOP, BOTTOM = 46, 14, 28, 40
INK = "#1d2330"
MUTED = "#6b7280"
GRID = "#e5e7eb"
BLUE = "#3b82f6"
STATUS_COLOURS = {
    "passed": "#10b981",
    "failed": "#ef4444",
    "flaky": "#f59e0b",
    "error": "#d97706",
    "pending": "#6366f1",
    "ungraded": "#9ca3af",
}


def _frame(title: str, body: str, label: str) -> str:
    return (
        f'<svg class="chart" viewBox="0 0 {W} {H}" role="img" aria-label="{e(label)}" xmlns="http://www.w3.org/2000/svg">'
        f'<text x="{LEFT}" y="16" font-size="13" font-weight="600" fill="{INK}">{e(title)}</text>{body}</svg>'
    )


def _tick(value: float) -> str:
    if float(value).is_integer() and abs(value) < 1e6:
        return str(int(value))
    return f"{value:.3g}"


def _y_axis(top: float, label: str = "") -> str:
    """Horizontal grid lines at 0, top/2 and top, with their values."""
    plot_h = H - TOP - BOTTOM
    out = []
    for frac in (0.0, 0.5, 1.0):
        y = TOP + plot_h * (1 - frac)
        out.append(f'<line x1="{LEFT}" x2="{W - RIGHT}" y1="{y:.1f}" y2="{y:.1f}" stroke="{GRID}"/>')
        out.append(
            f'<text x="{LEFT - 6}" y="{y + 4:.1f}" font-size="10" text-anchor="end" fill="{MUTED}">{e(_tick(top * frac))}</text>'
        )
    if label:
        out.append(
            f'<text x="12" y="{TOP + plot_h / 2:.1f}" font-size="10" fill="{MUTED}" transform="rotate(-90 12 {TOP + plot_h / 2:.1f})" text-anchor="middle">{e(label)}</text>'
        )
    return "".join(out)


def histogram(
    values: Sequence[float], *, title: str, unit: str = "", bins: int = 20, lo: float | None = None, hi: float | None = None
) -> str:
    """Counts of ``values`` in equal-width bins between lo and hi (default: their min and max); no values, no chart."""
    if not values:
        return ""
    low = min(values) if lo is None else lo
    high = max(values) if hi is None else hi
    if high <= low:
        high = low + 1
    counts = [0] * bins
    for v in values:
        counts[min(bins - 1, max(0, int((v - low) / (high - low) * bins)))] += 1
    top = max(counts)
    plot_w, plot_h = W - LEFT - RIGHT, H - TOP - BOTTOM
    bar_w = plot_w / bins
    out = [_y_axis(top, "results")]
    for i, c in enumerate(counts):
        if c:
            h = plot_h * c / top
            x = LEFT + i * bar_w
            start = low + (high - low) * i / bins
            end = low + (high - low) * (i + 1) / bins
            out.append(
                f'<rect x="{x + 1:.1f}" y="{TOP + plot_h - h:.1f}" width="{max(bar_w - 2, 1):.1f}" height="{h:.1f}" fill="{BLUE}">'
                f"<title>{e(_tick(start))} to {e(_tick(end))} {e(unit)}: {c}</title></rect>"
            )
    for frac in (0.0, 0.5, 1.0):
        x = LEFT + plot_w * frac
        out.append(
            f'<text x="{x:.1f}" y="{H - BOTTOM + 14}" font-size="10" text-anchor="middle" fill="{MUTED}">{e(_tick(low + (high - low) * frac))}</text>'
        )
    out.append(
        f'<text x="{LEFT + plot_w / 2:.1f}" y="{H - 8}" font-size="10" text-anchor="middle" fill="{MUTED}">{e(unit)} ({len(values)} values)</text>'
    )
    return _frame(title, "".join(out), title)


def bars(rows: Sequence[tuple[str, float | None, str]], *, title: str) -> str:
    """Horizontal bars of rates in [0, 1]: (label, rate or None, text shown after the bar); no rows, no chart."""
    if not rows:
        return ""
    height = TOP + 22 * max(len(rows), 1) + 10
    label_w = 130
    plot_w = W - label_w - 90
    out = []
    for i, (label, rate, text) in enumerate(rows):
        y = TOP + 22 * i
        out.append(
            f'<text x="{label_w - 6}" y="{y + 14}" font-size="11" text-anchor="end" fill="{INK}">{e(label[:24])}<title>{e(label)}</title></text>'
        )
        out.append(f'<rect x="{label_w}" y="{y + 3}" width="{plot_w}" height="14" fill="{GRID}"/>')
        if rate is not None:
            out.append(
                f'<rect x="{label_w}" y="{y + 3}" width="{plot_w * max(0.0, min(rate, 1.0)):.1f}" height="14" fill="{STATUS_COLOURS["passed"]}"/>'
            )
        out.append(f'<text x="{label_w + plot_w + 6}" y="{y + 14}" font-size="11" fill="{MUTED}">{e(text)}</text>')
    return (
        f'<svg class="chart" viewBox="0 0 {W} {height}" role="img" aria-label="{e(title)}" xmlns="http://www.w3.org/2000/svg">'
        f'<text x="{LEFT}" y="16" font-size="13" font-weight="600" fill="{INK}">{e(title)}</text>{"".join(out)}</svg>'
    )


class Point(msgspec.Struct, frozen=True):
    """One estimate at k with its interval, as :func:`k_curves` draws it."""

    k: int
    estimate: float
    low: float
    high: float


class Series(msgspec.Struct, frozen=True):
    """One line of a k chart (pass@k or pass^k): its label, its colour and its points."""

    name: str
    colour: str
    points: list[Point]


def k_curves(series: Sequence[Series], *, title: str) -> str:
    """Estimates against k in [0, 1], each with its interval as a vertical whisker; no estimates, no chart."""
    ks = sorted({p.k for s in series for p in s.points})
    if not ks:
        return ""
    plot_w, plot_h = W - LEFT - RIGHT - 70, H - TOP - BOTTOM
    span = max(ks[-1] - ks[0], 1)

    def x(k: int) -> float:
        return LEFT + 10 + (plot_w - 20) * ((k - ks[0]) / span if len(ks) > 1 else 0.5)

    def y(v: float) -> float:
        return TOP + plot_h * (1 - v)

    out = [_y_axis(1.0)]
    for k in ks:
        out.append(f'<text x="{x(k):.1f}" y="{H - BOTTOM + 14}" font-size="10" text-anchor="middle" fill="{MUTED}">{k}</text>')
    out.append(f'<text x="{LEFT + plot_w / 2:.1f}" y="{H - 8}" font-size="10" text-anchor="middle" fill="{MUTED}">k</text>')
    for n, s in enumerate(series):
        pts = sorted(s.points, key=lambda p: p.k)
        path = " ".join(f"{'M' if i == 0 else 'L'}{x(p.k):.1f},{y(p.estimate):.1f}" for i, p in enumerate(pts))
        out.append(f'<path d="{path}" fill="none" stroke="{e(s.colour)}" stroke-width="2"/>')
        for p in pts:
            out.append(
                f'<line x1="{x(p.k):.1f}" x2="{x(p.k):.1f}" y1="{y(p.low):.1f}" y2="{y(p.high):.1f}" stroke="{e(s.colour)}" stroke-width="1.5"/>'
                f'<circle cx="{x(p.k):.1f}" cy="{y(p.estimate):.1f}" r="3.5" fill="{e(s.colour)}">'
                f"<title>{e(s.name)}{p.k} = {p.estimate:.3f} [{p.low:.3f}, {p.high:.3f}]</title></circle>"
            )
        ly = TOP + 14 + 18 * n
        out.append(f'<rect x="{W - RIGHT - 62}" y="{ly - 9}" width="10" height="10" fill="{e(s.colour)}"/>')
        out.append(f'<text x="{W - RIGHT - 48}" y="{ly}" font-size="11" fill="{INK}">{e(s.name)}k</text>')
    return _frame(title, "".join(out), title)


def confusion(cells: tuple[int, int, int, int], *, grader: str, reference: str, title: str) -> str:
    """The 2x2 table (true pass, false pass, false fail, true fail) as shaded squares with counts."""
    tp, fp, fn, tn = cells
    total = max(tp + fp + fn + tn, 1)
    size, x0, y0 = 80, 170, 52
    out = [
        f'<text x="{x0 + size}" y="{y0 - 10}" font-size="11" text-anchor="middle" fill="{MUTED}">{e(reference[:30])} says</text>',
        f'<text x="{x0 - 64}" y="{y0 + size + 4}" font-size="11" text-anchor="middle" fill="{MUTED}" transform="rotate(-90 {x0 - 64} {y0 + size})">{e(grader[:30])} says</text>',
    ]
    for col, name in enumerate(("pass", "fail")):
        out.append(
            f'<text x="{x0 + size * col + size / 2}" y="{y0 + 2 * size + 16}" font-size="11" text-anchor="middle" fill="{INK}">{name}</text>'
        )
        out.append(
            f'<text x="{x0 - 8}" y="{y0 + size * col + size / 2 + 4}" font-size="11" text-anchor="end" fill="{INK}">{name}</text>'
        )
    # rows: grader pass / fail; columns: reference pass / fail
    grid = [[(tp, True), (fp, False)], [(fn, False), (tn, True)]]
    for r, row in enumerate(grid):
        for c, (count, agree) in enumerate(row):
            shade = 0.15 + 0.85 * count / total
            colour = STATUS_COLOURS["passed"] if agree else STATUS_COLOURS["failed"]
            out.append(
                f'<rect x="{x0 + c * size}" y="{y0 + r * size}" width="{size - 2}" height="{size - 2}" fill="{colour}" fill-opacity="{shade:.2f}"/>'
                f'<text x="{x0 + c * size + size / 2 - 1}" y="{y0 + r * size + size / 2 + 6}" font-size="18" font-weight="600" text-anchor="middle" fill="{INK}">{count}</text>'
            )
    return (
        f'<svg class="chart" viewBox="0 0 {W} {y0 + 2 * size + 30}" role="img" aria-label="{e(title)}" xmlns="http://www.w3.org/2000/svg">'
        f'<text x="{LEFT}" y="16" font-size="13" font-weight="600" fill="{INK}">{e(title)}</text>{"".join(out)}</svg>'
    )


def finite(values: Sequence[float]) -> list[float]:
    return [v for v in values if not math.isnan(v)]
