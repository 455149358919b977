"""A small SVG plotting surface for the reports: axes, ticks, grid, legend, written as text.

The report's plots used to go through matplotlib: its import and its layout
cost about 2.6 s of a 4 s report at 1,000 versions (one tick label per
version was most of it). Everything the report draws is a few lines, markers,
a band and text, so it is written here directly: the output is a pure
function of the data (no ids from a hash, no date), small, and drawn in
``currentColor`` so an inline plot takes the page's text colour in light and
dark themes.

Coordinates are SVG user units, one point each (the figure is as wide as a
7.5-inch matplotlib figure: 540 pt). Text extents are estimated from an
average glyph width: the layout only needs them to leave room, and the
browser draws the text itself.
"""

from __future__ import annotations

import html
import math
import re
from collections.abc import Sequence
from itertools import pairwise

WIDTH = 540.0
CHAR = 0.6  # average glyph width of a sans-serif face, in em
TICK_FONT = 10.0
TITLE_FONT = 12.0
LEGEND_FONT = 8.0
MAX_TICK_LABELS = 25  # beyond this many categories, label every k-th (each point has a tooltip)


def esc(text: object) -> str:
    return html.escape(str(text), quote=True)


def num(value: float) -> str:
    """A coordinate with one decimal, without a trailing '.0' (stable and short)."""
    text = f"{value:.1f}"
    return text[:-2] if text.endswith(".0") else ("0" if text == "-0" else text)


def text_width(text: str, size: float) -> float:
    return len(text) * size * CHAR


def nice_ticks(lo: float, hi: float, most: int = 7) -> tuple[list[float], int]:
    """Round tick values inside [lo, hi] (steps of 1, 2, 2.5 or 5 times a power of ten)
    and the decimals that print them all alike."""
    span = hi - lo
    if not math.isfinite(span) or span <= 0:
        return [lo], 2
    raw = span / most
    if raw <= 0:  # a span of a few subnormals: span / most underflows to 0
        return [lo], 2
    exponent = math.floor(math.log10(raw))
    magnitude = 10.0**exponent
    factor = next(m for m in (1.0, 2.0, 2.5, 5.0, 10.0) if m * magnitude >= raw)
    step = factor * magnitude
    first = math.ceil(lo / step - 1e-9)
    ticks = []
    k = first
    while k * step <= hi + step * 1e-9:
        ticks.append(k * step)
        k += 1
    # The step is factor x 10^exponent: its decimals follow from the exponent, at any
    # scale (a tolerance test printed every tick of a 5e-8 step as "0").
    if factor == 10.0:
        exponent += 1
    decimals = max(0, -exponent + (1 if factor == 2.5 else 0))
    return ticks, decimals


def tick_text(value: float, decimals: int) -> str:
    text = f"{value:.{decimals}f}"
    if len(text) > 12:  # a huge or tiny scale: four significant digits
        text = f"{value:.4g}"
    return _tidy(text)


def _tidy(text: str) -> str:
    if text.startswith("-"):
        text = "−" + text[1:]  # a typographic minus, as matplotlib prints
    return "0" if re.fullmatch(r"−0(\.0*)?", text) else text


def tick_labels(ticks: list[float], decimals: int) -> list[str]:
    """The ticks' labels, each telling its tick apart from the others: a small span far
    from zero (6.1035e-05 in steps of 1e-11) needs more than four significant digits."""
    labels = [tick_text(t, decimals) for t in ticks]
    digits = 5
    while len(set(labels)) < len(labels) and digits <= 17:
        labels = [_tidy(f"{t:.{digits}g}") for t in ticks]
        digits += 1
    return labels


def label_every(count: int) -> int:
    """Label every k-th category (k of 1, 2 or 5 times a power of ten) so at most
    MAX_TICK_LABELS labels share the axis: rotated labels closer than their height overlap."""
    magnitude = 1
    while True:
        for m in (1, 2, 5):
            if math.ceil(count / (m * magnitude)) <= MAX_TICK_LABELS:
                return m * magnitude
        magnitude *= 10


class Axes:
    """One plot: a data rectangle with linear x and y scales, then ``svg()``."""

    def __init__(
        self,
        title: str,
        xlim: tuple[float, float],
        ylim: tuple[float, float],
        *,
        height: float,
        ylabel: str,
        xlabel: str = "",
        xticks: Sequence[tuple[float, str]] | None = None,
        rotate: float = 0.0,
    ) -> None:
        self.title, self.xlabel, self.ylabel = title, xlabel, ylabel
        self.x0, self.x1 = xlim
        lo, hi = ylim
        if not (math.isfinite(lo) and math.isfinite(hi)) or hi <= lo:
            centre = lo if math.isfinite(lo) else 0.0
            pad = abs(centre) * 0.05 or 1.0
            lo, hi = centre - pad, centre + pad
        self.y0, self.y1 = lo, hi
        self.yticks, self.ydecimals = nice_ticks(lo, hi)
        ylabels = tick_labels(self.yticks, self.ydecimals)
        self.rotate = rotate
        self.xticks = list(xticks) if xticks is not None else self._numeric_xticks()
        # Margins: room for the y label and tick labels on the left, the title on top,
        # the (possibly rotated) x tick labels and the x label below.
        self.left = 4 + TICK_FONT * 1.2 + 6 + max(text_width(t, TICK_FONT) for t in ylabels) + 6
        self.right = 12.0
        self.top = TITLE_FONT * 1.2 + 8
        self.width = WIDTH - self.left - self.right
        self.height = height
        widest = max((text_width(t, TICK_FONT) for _, t in self.xticks), default=0.0)
        if rotate:
            angle = math.radians(rotate)
            drop = widest * math.sin(angle) + TICK_FONT * math.cos(angle)
        else:
            drop = TICK_FONT
        self.bottom = 5 + drop + 4 + (TICK_FONT * 1.2 if xlabel else 0) + 4
        self.parts: list[str] = []
        self.legend_items: list[tuple[str, str]] = []  # (sample SVG at 0,0, label)
        self.avoid: list[tuple[float, float]] = []  # data points the legend should not cover
        self._ylabels = ylabels

    def _numeric_xticks(self) -> list[tuple[float, str]]:
        ticks, decimals = nice_ticks(self.x0, self.x1)
        return list(zip(ticks, tick_labels(ticks, decimals), strict=True))

    def x(self, value: float) -> float:
        return self.left + (value - self.x0) / (self.x1 - self.x0) * self.width

    def y(self, value: float) -> float:
        return self.top + (self.y1 - value) / (self.y1 - self.y0) * self.height

    def add(self, element: str) -> None:
        self.parts.append(element)

    def legend(self, sample: str, label: str) -> None:
        self.legend_items.append((sample, label))

    # -- data artists: each a group or element with an id tests and readers can find

    def polyline(self, gid: str, xs: Sequence[float], ys: Sequence[float], style: str) -> None:
        pixels = [(self.x(a), self.y(b)) for a, b in zip(xs, ys, strict=True)]
        # The legend keeps off the line: its vertices and the middle of each segment.
        self.avoid += pixels
        self.avoid += [((a + c) / 2, (b + d) / 2) for (a, b), (c, d) in pairwise(pixels)]
        points = " ".join(f"{num(a)},{num(b)}" for a, b in pixels)
        self.add(f'<polyline id="{esc(gid)}" points="{points}" fill="none" {style}/>')

    def hline(self, gid: str, level: float, style: str) -> None:
        # The legend keeps off a reference line as off the data.
        self.avoid += [(self.left + self.width * k / 32, self.y(level)) for k in range(33)]
        y = num(self.y(level))
        self.add(
            f'<line id="{esc(gid)}" x1="{num(self.left)}" x2="{num(self.left + self.width)}" '
            f'y1="{y}" y2="{y}" {style}/>'
        )

    def vline(self, gid: str, at: float, style: str) -> None:
        x = num(self.x(at))
        self.add(
            f'<line id="{esc(gid)}" x1="{x}" x2="{x}" y1="{num(self.top)}" '
            f'y2="{num(self.top + self.height)}" {style}/>'
        )

    def band(self, gid: str, lo: float, hi: float, style: str) -> None:
        top, bottom = self.y(max(lo, hi)), self.y(min(lo, hi))
        self.add(
            f'<rect id="{esc(gid)}" x="{num(self.left)}" y="{num(top)}" width="{num(self.width)}" '
            f'height="{num(bottom - top)}" {style}/>'
        )

    def label(self, text: str, x: float, y: float, style: str, rotate: float = 0.0) -> None:
        """Text at pixel (x, y); rotated about that point."""
        turn = f' transform="rotate({num(rotate)} {num(x)} {num(y)})"' if rotate else ""
        self.add(f'<text x="{num(x)}" y="{num(y)}"{turn} {style}>{esc(text)}</text>')

    # -- the frame, ticks, labels and legend

    def _frame(self) -> str:
        left, top, right = self.left, self.top, self.left + self.width
        bottom = top + self.height
        out = ['<g id="axes" stroke="currentColor" fill="currentColor">']
        grid = "".join(
            f"M{num(left)} {num(self.y(t))}H{num(right)}"
            for t in self.yticks
            if self.y0 <= t <= self.y1
        )
        out.append(
            f'<path id="grid" d="{grid}" stroke="#8a8f98" stroke-opacity="0.3" stroke-width="0.8"/>'
        )
        marks = "".join(f"M{num(left)} {num(self.y(t))}h-3.5" for t in self.yticks)
        marks += "".join(f"M{num(self.x(t))} {num(bottom)}v3.5" for t, _ in self.xticks)
        out.append(f'<path d="{marks}" stroke-width="0.8"/>')
        out.append(f'<g id="yticks" stroke="none" font-size="{num(TICK_FONT)}" text-anchor="end">')
        out += [
            f'<text x="{num(left - 6)}" y="{num(self.y(t) + TICK_FONT * 0.35)}">{esc(text)}</text>'
            for t, text in zip(self.yticks, self._ylabels, strict=True)
        ]
        out.append("</g>")
        anchor = "end" if self.rotate else "middle"
        out.append(
            f'<g id="xticks" stroke="none" font-size="{num(TICK_FONT)}" text-anchor="{anchor}">'
        )
        for t, text in self.xticks:
            x, y = self.x(t), bottom + 6 + TICK_FONT * (0.35 if self.rotate else 0.9)
            turn = (
                f' transform="rotate({num(-self.rotate)} {num(x)} {num(y)})"' if self.rotate else ""
            )
            out.append(f'<text x="{num(x)}" y="{num(y)}"{turn}>{esc(text)}</text>')
        out.append("</g>")
        out.append(
            f'<rect x="{num(left)}" y="{num(top)}" width="{num(self.width)}" '
            f'height="{num(self.height)}" fill="none" stroke-width="0.8"/>'
        )
        mid_y = top + self.height / 2
        ylabel_x = 4 + TICK_FONT
        out.append(
            f'<text stroke="none" font-size="{num(TICK_FONT)}" text-anchor="middle" '
            f'x="{num(ylabel_x)}" y="{num(mid_y)}" '
            f'transform="rotate(-90 {num(ylabel_x)} {num(mid_y)})">{esc(self.ylabel)}</text>'
        )
        if self.xlabel:
            out.append(
                f'<text stroke="none" font-size="{num(TICK_FONT)}" text-anchor="middle" '
                f'x="{num(left + self.width / 2)}" y="{num(self.total_height - 5)}">'
                f"{esc(self.xlabel)}</text>"
            )
        out.append(
            f'<text stroke="none" font-size="{num(TITLE_FONT)}" x="{num(left)}" '
            f'y="{num(top - 6)}">{esc(self.title)}</text>'
        )
        out.append("</g>")
        return "".join(out)

    def _legend(self, columns: int) -> str:
        if not self.legend_items:
            return ""
        rows = math.ceil(len(self.legend_items) / columns)
        line = LEGEND_FONT * 1.5
        # Filled column by column, as matplotlib's ``ncols`` does.
        cols = [self.legend_items[c * rows : (c + 1) * rows] for c in range(columns)]
        cols = [c for c in cols if c]
        widths = [24 + max(text_width(label, LEGEND_FONT) for _, label in c) + 8 for c in cols]
        box_w, box_h = sum(widths) + 4, rows * line + 6
        pad = 6.0
        inside = (self.left + pad, self.left + self.width - pad - box_w)
        spots = [  # matplotlib's order for loc="best": upper right, upper left, lower ...
            (inside[1], self.top + pad),
            (inside[0], self.top + pad),
            (inside[0], self.top + self.height - pad - box_h),
            (inside[1], self.top + self.height - pad - box_h),
        ]

        def covered(spot: tuple[float, float]) -> int:
            x0, y0 = spot
            return sum(1 for a, b in self.avoid if x0 <= a <= x0 + box_w and y0 <= b <= y0 + box_h)

        bx, by = min(spots, key=covered)
        out = [f'<g id="legend" font-size="{num(LEGEND_FONT)}">']
        x = bx + 4
        for column, width in zip(cols, widths, strict=True):
            for row, (sample, label) in enumerate(column):
                y = by + 3 + line * (row + 0.5)
                out.append(f'<g transform="translate({num(x + 10)} {num(y)})">{sample}</g>')
                out.append(
                    f'<text x="{num(x + 24)}" y="{num(y + LEGEND_FONT * 0.35)}" '
                    f'fill="currentColor">{esc(label)}</text>'
                )
            x += width
        out.append("</g>")
        return "".join(out)

    @property
    def total_height(self) -> float:
        return self.top + self.height + self.bottom

    def svg(self, legend_columns: int = 1) -> str:
        w, h = num(WIDTH), num(self.total_height)
        return (
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}pt" height="{h}pt" '
            f'viewBox="0 0 {w} {h}" font-family="DejaVu Sans, system-ui, sans-serif" '
            f'role="img" aria-label="{esc(self.title)}">'
            f"<title>{esc(self.title)}</title>"
            + self._frame()
            + "".join(self.parts)
            + self._legend(legend_columns)
            + "</svg>"
        )


# -- markers: one SVG element per point, centred on (x, y), so each can carry a tooltip

MARKER_SIZE = math.sqrt(46.0)  # matplotlib's scatter s=46 (points squared)


def marker(shape: str, x: float, y: float, tip: str = "") -> str:
    r = MARKER_SIZE / 2
    title = f"<title>{esc(tip)}</title>" if tip else ""
    if shape == "o":
        return f'<circle cx="{num(x)}" cy="{num(y)}" r="{num(r)}">{title}</circle>'
    if shape == "s":
        side = MARKER_SIZE * 0.9
        return (
            f'<rect x="{num(x - side / 2)}" y="{num(y - side / 2)}" width="{num(side)}" '
            f'height="{num(side)}">{title}</rect>'
        )
    if shape == "D":
        d = r * 1.15
        return (
            f'<path d="M{num(x)} {num(y - d)}L{num(x + d)} {num(y)}L{num(x)} {num(y + d)}'
            f'L{num(x - d)} {num(y)}Z">{title}</path>'
        )
    # "X": a filled cross, drawn as two strokes of the fill colour
    a = r * 0.85
    return (
        f'<path d="M{num(x - a)} {num(y - a)}L{num(x + a)} {num(y + a)}M{num(x - a)} {num(y + a)}'
        f'L{num(x + a)} {num(y - a)}" stroke-width="2.4" fill="none">{title}</path>'
    )
