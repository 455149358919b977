"""The report's plots as SVG text that reads in light and dark themes.

Text, axes and ticks are drawn in ``currentColor``, so an inline plot takes the
page's text colour; data colours are mid-tones that read on white and on
near-black. Artists carry ids (``trajectory``, ``baseline``, ``noise-band``,
``verdict-...``, ``overrides``, ``reflection-V..``, ``phase``) so tests and
readers can find them, and each point a tooltip (version, mean ± SE, n,
verdict): past a few dozen versions the x axis labels every k-th one.

Written directly by :mod:`ledger.render.svg`, not by matplotlib (see there
why); ``plot --out FILE.png`` rasterises the same SVG (:mod:`ledger.render.png`).
"""

from __future__ import annotations

import math
from typing import Any

from ledger.render.svg import Axes, esc, label_every, marker, num

VERDICT_STYLE = {
    "confirmed": ("#2e9e44", "o"),
    "refuted": ("#d0453b", "X"),
    "inconclusive": ("#8a8f98", "s"),
    "open": ("#3b82f6", "D"),
    "void": ("#5b6370", "X"),  # its results never count: shown, never as a verdict
}
OVERRIDE = "#e0a100"
BASELINE = "#2e9e44"
REFLECTION = "#9b59b6"
GREY = "#8a8f98"
BLUE = "#3b82f6"
RED = "#d0453b"


def _categories(labels: list[str]) -> tuple[list[tuple[float, str]], float]:
    """Tick positions and labels for categories 0..n-1 (every k-th past a few dozen), and
    their rotation."""
    step = label_every(len(labels))
    ticks = [(float(i), labels[i]) for i in range(0, len(labels), step)]
    return ticks, (45.0 if len(labels) > 8 else 0.0)


def _sample_line(colour: str, dash: str = "", width: float = 1.4) -> str:
    dashes = f' stroke-dasharray="{dash}"' if dash else ""
    return f'<line x1="-9" x2="9" y1="0" y2="0" stroke="{colour}" stroke-width="{width}"{dashes}/>'


def gate_svg(
    gate: str,
    metric: str,
    unit: str,
    points: list[dict[str, Any]],
    baseline: dict[str, Any] | None,
    reflections: list[str],
    phase_after: str | None,
) -> str:
    """The metric across versions: verdict markers, standing baseline, ±2σ noise band, annotations."""
    ids = [str(p["id"]) for p in points]
    xs = [float(i) for i in range(len(points))]
    means = [float(p["mean"]) for p in points]
    errs = [(p["sd"] or 0) / math.sqrt(p["n"]) if p["n"] else 0.0 for p in points]
    lows = [m - e for m, e in zip(means, errs, strict=True)]
    highs = [m + e for m, e in zip(means, errs, strict=True)]
    level = sigma = 0.0
    if baseline is not None and xs:
        level, sigma = float(baseline["mean"]), float(baseline["sigma"] or 0.0)
        lows.append(level - 2 * sigma)
        highs.append(level + 2 * sigma)
    lo, hi = min(lows, default=0.0), max(highs, default=1.0)
    margin = (hi - lo) * 0.05
    xticks, rotate = _categories(ids)
    ax = Axes(
        f"gate {gate}: {metric}",
        (-0.5, max(len(xs) - 0.5, 0.5)),
        (lo - margin, hi + margin),
        height=190.0,
        ylabel=f"{metric} ({unit})" if unit else metric,
        xlabel="version",
        xticks=xticks,
        rotate=rotate,
    )
    if baseline is not None and xs:
        ax.band(
            "noise-band",
            level - 2 * sigma,
            level + 2 * sigma,
            f'fill="{BASELINE}" fill-opacity="0.14"',
        )
    ax.polyline("trajectory", xs, means, f'stroke="{GREY}" stroke-width="1"')
    bars = "".join(
        f"M{num(ax.x(x))} {num(ax.y(m - e))}V{num(ax.y(m + e))}"
        f"M{num(ax.x(x) - 2)} {num(ax.y(m - e))}h4M{num(ax.x(x) - 2)} {num(ax.y(m + e))}h4"
        for x, m, e in zip(xs, means, errs, strict=True)
        if e
    )
    ax.add(f'<path id="errorbars" d="{bars}" stroke="{GREY}" stroke-width="1" fill="none"/>')
    if baseline is not None and xs:
        ax.hline(
            "baseline",
            level,
            f'stroke="{BASELINE}" stroke-width="1.4" stroke-dasharray="5.2 2.2"',
        )
    for verdict, (colour, shape) in VERDICT_STYLE.items():
        chosen = [i for i, p in enumerate(points) if p["verdict"] == verdict]
        if not chosen:
            continue
        markers = "".join(
            marker(shape, ax.x(xs[i]), ax.y(means[i]), _tip(points[i], errs[i])) for i in chosen
        )
        ax.add(
            f'<g id="verdict-{verdict}" fill="{colour}" stroke="{colour}" stroke-width="0.5">'
            f"{markers}</g>"
        )
        ax.legend(
            f'<g fill="{colour}" stroke="{colour}" stroke-width="0.5">{marker(shape, 0, 0)}</g>',
            verdict,
        )
    overrides = [i for i, p in enumerate(points) if p["override"]]
    if overrides:
        rings = "".join(
            f'<circle cx="{num(ax.x(xs[i]))}" cy="{num(ax.y(means[i]))}" r="5.9"/>'
            for i in overrides
        )
        ax.add(f'<g id="overrides" fill="none" stroke="{OVERRIDE}" stroke-width="1.6">{rings}</g>')
        ax.legend(
            f'<circle r="5.9" fill="none" stroke="{OVERRIDE}" stroke-width="1.6"/>', "override"
        )
    if baseline is not None and xs:
        ax.legend(_sample_line(BASELINE, "5.2 2.2"), f"standing baseline ({baseline['version']})")
        ax.legend(
            f'<rect x="-9" y="-4" width="18" height="8" fill="{BASELINE}" fill-opacity="0.14"/>',
            "noise band ±2σ",
        )
    at = {vid: i for i, vid in enumerate(ids)}
    for after in reflections:
        if after in at:
            x = at[after] + 0.5
            ax.vline(
                f"reflection-{after}",
                x,
                f'stroke="{REFLECTION}" stroke-width="1.2" stroke-dasharray="1.2 2"',
            )
            ax.label(
                "reflection",
                ax.x(x) - 2,
                ax.top + 2,
                f'font-size="8" fill="{REFLECTION}" text-anchor="end"',
                rotate=-90,
            )
    if phase_after and phase_after in at:
        x = at[phase_after] + 0.5
        ax.vline("phase", x, f'stroke="{OVERRIDE}" stroke-width="1.2" stroke-dasharray="6 2 1.2 2"')
        ax.label(
            "phase parked",
            ax.x(x) - 2,
            ax.top + ax.height - 4,
            f'font-size="8" fill="{OVERRIDE}"',
            rotate=-90,
        )
    return ax.svg(legend_columns=2)


def _tip(point: dict[str, Any], err: float) -> str:
    extra = " (override)" if point.get("override") else ""
    return f"{point['id']}: {point['mean']:.4g} ± {err:.2g} (n={point['n']}), {point['verdict']}{extra}"


def _value_limits(values: list[float], extra: list[float]) -> tuple[float, float]:
    """Bars start at zero: the limits hold zero, every value and the reference line, with a
    5% margin on a side that is not zero (as matplotlib's bars stick to zero)."""
    lo, hi = min([0.0, *values, *extra]), max([0.0, *values, *extra])
    span = (hi - lo) or 1.0
    return (lo - 0.05 * span if lo < 0 else lo), (hi + 0.05 * span if hi > 0 else hi)


def bars_plot(
    name: str,
    title: str,
    labels: list[str],
    values: list[float],
    ylabel: str,
    line: float | None,
    line_label: str,
    colours: list[str] | None = None,
    threshold: tuple[float, str] | None = None,
) -> str:
    """Side-by-side bars (matrix cells, candidates) with one reference line, and a
    threshold line (a matrix: the Δ a cell must pass) when given."""
    ticks, _ = _categories(labels)
    levels = [line] if line is not None else []
    levels += [threshold[0]] if threshold is not None else []
    ax = Axes(
        title,
        (-0.5, max(len(values) - 0.5, 0.5)),
        _value_limits(values, levels),
        height=180.0,
        ylabel=ylabel,
        xticks=ticks,
        rotate=30.0 if len(labels) > 6 else 0.0,
    )
    zero = ax.y(max(ax.y0, min(ax.y1, 0.0)))
    half = (ax.x(0.4) - ax.x(-0.4)) / 2
    rects = []
    for i, value in enumerate(values):
        top = ax.y(value)
        colour = colours[i] if colours else BLUE
        label = labels[i] if i < len(labels) else str(i)
        rects.append(
            f'<rect x="{num(ax.x(i) - half)}" y="{num(min(top, zero))}" width="{num(2 * half)}" '
            f'height="{num(abs(zero - top))}" fill="{colour}">'
            f"<title>{esc(label)}: {value:.4g}</title></rect>"
        )
    ax.add(f'<g id="bars-{esc(name)}">{"".join(rects)}</g>')
    if line is not None:
        ax.hline("reference", line, f'stroke="{RED}" stroke-width="1.2" stroke-dasharray="4.4 1.9"')
        ax.legend(_sample_line(RED, "4.4 1.9", 1.2), line_label)
        ax.avoid += [(ax.x(i), ax.y(v)) for i, v in enumerate(values)]
    if threshold is not None:
        ax.hline("threshold", threshold[0], f'stroke="{OVERRIDE}" stroke-width="1.4"')
        ax.legend(_sample_line(OVERRIDE, "", 1.4), threshold[1])
    return ax.svg()


def line_plot(
    name: str, title: str, values: list[float], ylabel: str, bar: float, bar_label: str
) -> str:
    """A value per step against a bar (batches: pass ratio per batch vs the convergence bar)."""
    xs = [float(i) for i in range(len(values))]
    span = max(len(values) - 1, 1)
    step = label_every(len(values))
    ax = Axes(
        title,
        (-0.05 * span, span * 1.05),
        (0.0, 1.05),
        height=165.0,
        ylabel=ylabel,
        xlabel="batch",
        xticks=[(float(i), str(i)) for i in range(0, len(values), step)],
    )
    ax.polyline(f"series-{name}", xs, values, f'stroke="{BLUE}" stroke-width="1.5"')
    dots = "".join(
        marker("o", ax.x(x), ax.y(v), f"batch {int(x)}: {v:.3g}")
        for x, v in zip(xs, values, strict=True)
    )
    ax.add(f'<g fill="{BLUE}">{dots}</g>')
    ax.hline("bar", bar, f'stroke="{BASELINE}" stroke-width="1.5" stroke-dasharray="5.5 2.4"')
    ax.legend(_sample_line(BASELINE, "5.5 2.4", 1.5), bar_label)
    return ax.svg()
