"""Plots with matplotlib (imported lazily), as SVG text that reads in light and dark themes.

Text, axes and ticks are drawn in a sentinel colour that is rewritten to
``currentColor`` in the SVG, so an inline plot takes the page's text colour;
data colours are mid-tones that read on white and on near-black. Artists get
SVG ids (``baseline``, ``noise-band``, ``verdict-...``) so tests and readers can
find them.
"""

from __future__ import annotations

import io
import math
from typing import Any

SENTINEL = "#010203"
VERDICT_STYLE = {
    "confirmed": ("#2e9e44", "o"),
    "refuted": ("#d0453b", "X"),
    "inconclusive": ("#8a8f98", "s"),
    "open": ("#3b82f6", "D"),
}


def _pyplot(salt: str) -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    matplotlib.rcParams.update(
        {
            "svg.hashsalt": salt,
            "svg.fonttype": "none",
            "font.size": 10,
            "text.color": SENTINEL,
            "axes.labelcolor": SENTINEL,
            "axes.edgecolor": SENTINEL,
            "xtick.color": SENTINEL,
            "ytick.color": SENTINEL,
            "axes.facecolor": "none",
            "figure.facecolor": "none",
            "savefig.transparent": True,
            "legend.framealpha": 0.0,
            "legend.labelcolor": SENTINEL,
            "grid.color": "#8a8f98",
            "grid.alpha": 0.3,
        }
    )
    return plt


def _svg(fig: Any) -> str:
    buffer = io.StringIO()
    # No date or creator metadata: the same ledger renders the same report.
    fig.savefig(buffer, format="svg", bbox_inches="tight", metadata={"Date": None, "Creator": None})
    import matplotlib.pyplot as plt

    plt.close(fig)
    text = buffer.getvalue()
    text = text[text.index("<svg") :]  # drop the XML prolog and doctype: it is inlined in HTML
    return text.replace(SENTINEL, "currentColor")


def gate_svg(
    gate: str,
    metric: str,
    unit: str,
    points: list[dict[str, Any]],
    baseline: dict[str, Any] | None,
    reflections: list[str],
    phase_after: str | None,
) -> str:
    return _svg(_gate_figure(gate, metric, unit, points, baseline, reflections, phase_after))


def gate_png(
    gate: str,
    metric: str,
    unit: str,
    points: list[dict[str, Any]],
    baseline: dict[str, Any] | None,
    reflections: list[str],
) -> bytes:
    fig = _gate_figure(gate, metric, unit, points, baseline, reflections, None)
    buffer = io.BytesIO()
    fig.savefig(
        buffer, format="png", dpi=130, bbox_inches="tight", transparent=False, facecolor="white"
    )
    import matplotlib.pyplot as plt

    plt.close(fig)
    return buffer.getvalue()


def _gate_figure(
    gate: str,
    metric: str,
    unit: str,
    points: list[dict[str, Any]],
    baseline: dict[str, Any] | None,
    reflections: list[str],
    phase_after: str | None,
) -> Any:
    """The metric across versions: verdict markers, standing baseline, ±2σ noise band, annotations."""
    plt = _pyplot(f"gate-{gate}")
    fig, ax = plt.subplots(figsize=(7.5, 3.6))
    ids = [p["id"] for p in points]
    xs = list(range(len(points)))
    means = [p["mean"] for p in points]
    errs = [(p["sd"] or 0) / math.sqrt(p["n"]) if p["n"] else 0 for p in points]
    ax.plot(xs, means, color="#8a8f98", linewidth=1, zorder=1, gid="trajectory")
    ax.errorbar(
        xs, means, yerr=errs, fmt="none", ecolor="#8a8f98", elinewidth=1, capsize=2, zorder=1
    )
    for verdict, (colour, marker) in VERDICT_STYLE.items():
        chosen = [i for i, p in enumerate(points) if p["verdict"] == verdict]
        if chosen:
            ax.scatter(
                [xs[i] for i in chosen],
                [means[i] for i in chosen],
                color=colour,
                marker=marker,
                s=46,
                zorder=3,
                label=verdict,
                gid=f"verdict-{verdict}",
            )
    overrides = [i for i, p in enumerate(points) if p["override"]]
    if overrides:
        ax.scatter(
            [xs[i] for i in overrides],
            [means[i] for i in overrides],
            facecolors="none",
            edgecolors="#e0a100",
            s=140,
            linewidths=1.6,
            zorder=4,
            label="override",
            gid="overrides",
        )
    if baseline is not None and xs:
        level, sigma = float(baseline["mean"]), float(baseline["sigma"] or 0.0)
        ax.axhline(
            level,
            color="#2e9e44",
            linestyle="--",
            linewidth=1.4,
            zorder=2,
            label=f"standing baseline ({baseline['version']})",
            gid="baseline",
        )
        ax.fill_between(
            [-0.5, len(xs) - 0.5],
            level - 2 * sigma,
            level + 2 * sigma,
            color="#2e9e44",
            alpha=0.14,
            zorder=0,
            label="noise band ±2σ",
            gid="noise-band",
        )
    for after in reflections:
        if after in ids:
            x = ids.index(after) + 0.5
            ax.axvline(x, color="#9b59b6", linestyle=":", linewidth=1.2, gid=f"reflection-{after}")
            ax.annotate(
                "reflection",
                (x, 1.0),
                xycoords=("data", "axes fraction"),
                rotation=90,
                va="top",
                ha="right",
                fontsize=8,
                color="#9b59b6",
            )
    if phase_after and phase_after in ids:
        x = ids.index(phase_after) + 0.5
        ax.axvline(x, color="#e0a100", linestyle="-.", linewidth=1.2, gid="phase")
        ax.annotate(
            "phase parked",
            (x, 0.02),
            xycoords=("data", "axes fraction"),
            rotation=90,
            fontsize=8,
            color="#e0a100",
        )
    ax.set_xticks(
        xs, ids, rotation=45 if len(xs) > 8 else 0, ha="right" if len(xs) > 8 else "center"
    )
    ax.set_xlim(-0.5, max(len(xs) - 0.5, 0.5))
    ax.set_xlabel("version")
    ax.set_ylabel(f"{metric} ({unit})" if unit else metric)
    ax.set_title(f"gate {gate}: {metric}", loc="left")
    ax.grid(True, axis="y")
    ax.legend(loc="best", fontsize=8, ncols=2)
    return fig


def bars_plot(
    name: str,
    title: str,
    labels: list[str],
    values: list[float],
    ylabel: str,
    line: float | None,
    line_label: str,
    colours: list[str] | None = None,
) -> str:
    """Side-by-side bars (matrix cells, candidates) with one reference line."""
    plt = _pyplot(f"bars-{name}")
    fig, ax = plt.subplots(figsize=(7.5, 3.2))
    ax.bar(range(len(values)), values, color=colours or "#3b82f6", gid=f"bars-{name}")
    if line is not None:
        ax.axhline(
            line, color="#d0453b", linestyle="--", linewidth=1.2, label=line_label, gid="reference"
        )
        ax.legend(loc="best", fontsize=8)
    ax.set_xticks(range(len(labels)), labels, rotation=30 if len(labels) > 6 else 0)
    ax.set_ylabel(ylabel)
    ax.set_title(title, loc="left")
    ax.grid(True, axis="y")
    return _svg(fig)


def line_plot(
    name: str, title: str, values: list[float], ylabel: str, bar: float, bar_label: str
) -> str:
    """A value per step against a bar (batches: pass ratio per batch vs the convergence bar)."""
    plt = _pyplot(f"line-{name}")
    fig, ax = plt.subplots(figsize=(7.5, 3.0))
    ax.plot(range(len(values)), values, marker="o", color="#3b82f6", gid=f"series-{name}")
    ax.axhline(bar, color="#2e9e44", linestyle="--", label=bar_label, gid="bar")
    ax.set_xlabel("batch")
    ax.set_ylabel(ylabel)
    ax.set_ylim(0, 1.05)
    ax.set_title(title, loc="left")
    ax.legend(loc="best", fontsize=8)
    ax.grid(True, axis="y")
    return _svg(fig)
