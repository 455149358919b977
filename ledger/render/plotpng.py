"""``git ledger plot --out FILE.png``: one gate's figure as a PNG, drawn by matplotlib.

A raster image needs a rasteriser, so this one figure still goes through
matplotlib (imported lazily, Agg backend). The reports and ``plot --out
FILE.svg`` are written directly as SVG by :mod:`ledger.render.plots`, which
this figure mirrors: the same series, markers, baseline, noise band and
reflections, on a white background.
"""

from __future__ import annotations

import io
import math
from typing import Any

from ledger.render.plots import VERDICT_STYLE
from ledger.render.svg import label_every

INK = "#1b1f24"


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    matplotlib.rcParams.update(
        {
            "font.size": 10,
            "text.color": INK,
            "axes.labelcolor": INK,
            "axes.edgecolor": INK,
            "xtick.color": INK,
            "ytick.color": INK,
            "legend.framealpha": 0.0,
            "legend.labelcolor": INK,
            "grid.color": "#8a8f98",
            "grid.alpha": 0.3,
        }
    )
    return plt


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
    plt = _pyplot()
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
    # One label per version is unreadable (and slow) past a few dozen: every k-th.
    shown = xs[:: label_every(len(xs))]
    ax.set_xticks(
        shown,
        [ids[i] for i in shown],
        rotation=45 if len(xs) > 8 else 0,
        ha="right" if len(xs) > 8 else "center",
    )
    ax.set_xlim(-0.5, max(len(xs) - 0.5, 0.5))
    ax.set_xlabel("version")
    ax.set_ylabel(f"{metric} ({unit})" if unit else metric)
    ax.set_title(f"gate {gate}: {metric}", loc="left")
    ax.grid(True, axis="y")
    ax.legend(loc="best", fontsize=8, ncols=2)
    return fig
