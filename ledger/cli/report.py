"""``git ledger report`` and ``git ledger plot``."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from ledger.core import output
from ledger.core.context import open_context
from ledger.core.errors import BadInput
from ledger.core.store import write_atomic
from ledger.render import report as report_md


def run(cwd: Path, fmt: str, out: Path | None, since: str | None, everything: bool = False) -> int:
    ctx = open_context(cwd)
    data = report_md.gather(ctx, since, everything)
    if fmt == "json":
        text = json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    elif fmt == "md":
        text = report_md.markdown(data)
    else:
        from ledger.render import html

        gates = {g: (c.metric, c.unit_of(c.metric)) for g, c in ctx.config.gates.items()}
        text = html.render(data, gates)
    if out is None or str(out) == "-":  # '-' is stdout, as for git and most tools
        sys.stdout.write(text)
    else:
        write_atomic(out, text.encode())
        output.say(f"wrote {out}")
    return 0


def plot(cwd: Path, gate: str, out: Path | None, metric: str | None = None) -> int:
    from ledger.render import plots

    ctx = open_context(cwd)
    cfg = ctx.config.gate(gate)
    if metric is not None and metric not in cfg.metrics:
        raise BadInput(
            f"--metric {metric}: gate '{gate}' maps no such metric",
            f"its metrics in ledger.toml: {', '.join(sorted(cfg.metrics))}",
        )
    metric = metric or cfg.metric
    data = report_md.gather(ctx, None)
    points = report_md.series(ctx.state(), gate, metric)
    if not points:
        raise BadInput(
            f"gate '{gate}' has no results to plot", f"git ledger record ... --gate {gate}"
        )
    # The standing baseline and its noise band are the primary metric's.
    best = {b["gate"]: b for b in data["baseline"]}.get(gate) if metric == cfg.metric else None
    reflections = [r["after"] for r in data["reflections"] if r["complete"]]
    if out is not None and out.suffix not in (".png", ".svg"):
        raise BadInput(f"--out {out}: use a .png or .svg file")
    to_png = None
    if out is not None and out.suffix == ".png":
        from ledger.render import png

        to_png = png.rasteriser(out)  # refused here, before anything is written
    # Without --out, never into the work tree (a stray file there blocks the hooks).
    name = gate if metric == cfg.metric else f"{gate}-{metric}"
    target = out or ctx.store.ledger_state_dir / "plots" / f"{name}.svg"
    target.parent.mkdir(parents=True, exist_ok=True)
    svg = plots.gate_svg(gate, metric, cfg.unit_of(metric), points, best, reflections, None)
    write_atomic(target, to_png(svg) if to_png else svg.encode())
    output.say(f"wrote {target}")
    return 0
