"""``git ledger baseline`` and ``git ledger diff A B``: tables, or JSON."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

from ledger.core import output
from ledger.core.context import open_context
from ledger.core.markdown import fmt, gate_table, signed
from ledger.core.model.ids import parse_version
from ledger.presets.versions.baseline import baseline_rows, compare
from ledger.presets.versions.metrics import metric_rows
from ledger.presets.versions.views import BASELINE_COLUMNS, baseline_cells


def run_baseline(cwd: Path, as_json: bool) -> int:
    ctx = open_context(cwd)
    rows = baseline_rows(ctx.state())
    if as_json:
        output.emit_json([asdict(r) for r in rows])
        return 0
    output.table("standing baseline", BASELINE_COLUMNS, [baseline_cells(r) for r in rows])
    return 0


def run_diff(cwd: Path, a: str, b: str, fmt_name: str, as_json: bool) -> int:
    ctx = open_context(cwd)
    prefix = ctx.config.ledger.id_prefix
    parse_version(a, prefix)
    parse_version(b, prefix)
    state = ctx.state()
    base = state.version(a)
    if base is None or state.version(b) is None:
        missing = a if base is None else b
        raise state.no_version(missing)
    gates = sorted({r.gate for r in state.results if r.version in (a, b)} & set(ctx.config.gates))
    stats = [compare(state, b, g, base) for g in gates]
    metrics = [row for g in gates for row in metric_rows(state, b, g, a)]
    if as_json or fmt_name == "json":
        output.emit_json(
            {
                "from": a,
                "to": b,
                "gates": [s.model_dump(mode="json") for s in stats],
                "metrics": metrics,
            }
        )
        return 0
    rows = [
        (
            m["gate"],
            m["metric"] + (" (primary)" if m["primary"] else ""),
            fmt(m["baseline_mean"]),
            fmt(m["mean"]),
            signed(m["delta"]),
        )
        for m in metrics
    ]
    if fmt_name == "md":
        output.say(f"### {a} → {b}\n")
        output.say(gate_table(stats).rstrip())
        output.say("")
        output.say(f"| gate | metric | {a} | {b} | Δ |\n|---|---|---|---|---|")
        for row in rows:
            output.say("| " + " | ".join(row) + " |")
    else:
        output.table(
            f"{a} → {b}",
            ("gate", "metric", f"{a} mean", f"{b} mean", "Δ", "threshold", "outcome"),
            [
                (
                    s.gate,
                    s.metric,
                    fmt(s.baseline_mean),
                    fmt(s.mean),
                    signed(s.delta),
                    fmt(s.threshold),
                    s.outcome,
                )
                for s in stats
            ],
        )
        output.table("every metric", ("gate", "metric", f"{a} mean", f"{b} mean", "Δ"), rows)
    return 0
