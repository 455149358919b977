"""Which cells of a matrix win, and ``git ledger matrix status``.

Every cell is compared with the shared baseline on its own branch's evidence
and held to one many-comparisons-adjusted threshold (Holm step-down over all
cells, floored by the documented rule and a single version's threshold).
:func:`adjudicate` is the one place winners are decided: ``status``,
``conclude`` and bench/calibration.py all call it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ledger.core import output, stats
from ledger.core.context import Context, open_context
from ledger.core.markdown import fmt, signed
from ledger.core.model.config import StatsTable
from ledger.core.model.entries import GateStat, MatrixFront
from ledger.core.state import LedgerState, load_state
from ledger.presets.versions.baseline import compare
from ledger.presets.versions.matrix.cells import cell_tip, fetch_cells, find


def comparison(
    ctx: Context, state: LedgerState, matrix: MatrixFront, remote: str | None = None
) -> dict[str, dict[str, Any]]:
    """Per cell: its evidence against the shared baseline, read from the cell's branch."""
    table: dict[str, dict[str, Any]] = {}
    for cell in matrix.cells:
        cid = f"{matrix.id}.{cell.name}"
        tip = cell_tip(ctx, cell.branch, remote)
        cell_state = load_state(ctx.store, ctx.config, ctx.store.snapshot(tip)) if tip else state
        base_id = matrix.baselines.get(cell.gate)
        base = cell_state.version(base_id) if base_id else None
        stat = compare(cell_state, cid, cell.gate, base)
        table[cell.name] = {
            "cell": cid,
            "stat": stat,
            "branch": cell.branch,
            "exists": tip is not None,
        }
    cells = adjudicate(ctx.config.stats, {n: row["stat"] for n, row in table.items()})
    for name, row in table.items():
        row.update(cells[name])
    return table


def adjudicate(st: StatsTable, cells: dict[str, GateStat]) -> dict[str, dict[str, Any]]:
    """Per cell: z = gain/SE, the adjusted k (Holm over every cell, floored by the rule and a
    single version's threshold), the adjusted threshold and whether it passes.

    The one place a matrix's winners are decided: ``matrix status``/``conclude`` and the
    calibration in bench/calibration.py both call it.
    """
    zs: dict[str, float] = {}
    for name, stat in cells.items():
        if stat.se and stat.delta is not None:
            sign = 1.0 if stat.direction == "higher" else -1.0
            zs[name] = stat.delta * sign / stat.se
    adjusted = stats.adjusted_passes(
        zs,
        st.alpha,
        st.matrix_sigma,
        sigma_k=st.sigma_k,
        small_n=st.small_n,
        dfs={name: cells[name].df for name in zs},
        m=len(cells),
    )
    out: dict[str, dict[str, Any]] = {}
    for name, stat in cells.items():
        k, passed = adjusted.get(name, (None, False))
        out[name] = {
            "k": k,
            "adjusted_threshold": k * stat.se if k is not None and stat.se else None,
            "z": zs.get(name),
            "pass": passed,
        }
    return out


def table_md(mid: str, table: dict[str, dict[str, Any]], m: int, rule: str) -> str:
    lines = [
        f"Adjusted threshold for {m} cells: {rule}.",
        "",
        "| cell | gate | n | mean | baseline | Δ | SE | z | k | adjusted threshold | pass |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in table.values():
        s: GateStat = row["stat"]
        lines.append(
            f"| {row['cell']} | {s.gate} | {s.n} | {fmt(s.mean)} | {s.baseline_version or '—'} "
            f"| {signed(s.delta)} | {fmt(s.se)} | {fmt(row['z'])} | {fmt(row['k'])} "
            f"| {fmt(row['adjusted_threshold'])} | {'yes' if row['pass'] else 'no'} |"
        )
    return "\n".join(lines) + "\n"


def rule_text(ctx: Context, m: int) -> str:
    st = ctx.config.stats
    k = max(stats.rule_sigma(m, st.matrix_sigma) or 0.0, st.sigma_k)
    return (
        f"Holm step-down over {m} cells at α={st.alpha:g} (Student-t at the cells' df when n "
        f"is small), floored at {k:g}σ: never below the documented rule (2.5σ for 3 cells, "
        f"3σ for 5 and beyond) nor a single version's {st.sigma_k:g}σ"
    )


def status(cwd: Path, mid: str, fetch: bool, as_json: bool) -> int:
    ctx = open_context(cwd)
    state, _, matrix = find(ctx, mid)
    remote = fetch_cells(ctx, matrix) if fetch else None
    table = comparison(ctx, state, matrix, remote)
    rule = rule_text(ctx, len(matrix.cells))
    if as_json:
        output.emit_json(
            {
                "id": mid,
                "concluded": matrix.concluded,
                "winner": matrix.winner,
                "rule": rule,
                "cells": [
                    {
                        "cell": r["cell"],
                        "branch": r["branch"],
                        "z": r["z"],
                        "k": r["k"],
                        "adjusted_threshold": r["adjusted_threshold"],
                        "pass": r["pass"],
                        **r["stat"].model_dump(mode="json"),
                    }
                    for r in table.values()
                ],
            }
        )
        return 0
    output.say(f"matrix {mid}: {rule}")
    output.table(
        "",
        ("cell", "gate", "n", "mean", "Δ", "SE", "z", "k", "threshold", "pass"),
        [
            (
                r["cell"],
                r["stat"].gate,
                r["stat"].n,
                fmt(r["stat"].mean),
                signed(r["stat"].delta),
                fmt(r["stat"].se),
                fmt(r["z"]),
                fmt(r["k"]),
                fmt(r["adjusted_threshold"]),
                "yes" if r["pass"] else "no",
            )
            for r in table.values()
        ],
    )
    return 0
