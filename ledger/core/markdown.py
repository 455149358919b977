"""Markdown for the generated blocks inside a version entry."""

from __future__ import annotations

import math

from ledger.core.model.entries import Conclusion, GateStat


def fmt(value: float | None, digits: int = 4) -> str:
    if value is None:
        return "—"
    if value == 0:
        return "0"
    if 1e-3 <= abs(value) < 1e7:
        # The same significant digits at every scale, never an exponent in this range.
        decimals = max(0, digits - 1 - math.floor(math.log10(abs(value))))
        return f"{round(value, decimals):.{decimals}f}"
    return f"{value:.3e}"


def signed(value: float | None) -> str:
    return "—" if value is None else ("+" if value >= 0 else "") + fmt(value)


def gate_table(stats: list[GateStat]) -> str:
    if not stats:
        return "_No results._\n"
    lines = [
        "| gate | metric | n (eff) | mean | baseline | Δ | SE | threshold | σ | outcome |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for s in stats:
        unit = f" {s.unit}" if s.unit else ""
        baseline = (
            f"{s.baseline_version} ({fmt(s.baseline_mean)}, n={s.baseline_n})"
            if s.baseline_version
            else "—"
        )
        n = f"{s.n} ({s.n_eff:g})" if s.n_eff != s.n else str(s.n)
        lines.append(
            f"| {s.gate} | {s.metric} ({s.direction}){unit} | {n} | {fmt(s.mean)} | {baseline} "
            f"| {signed(s.delta)} | {fmt(s.se)} | {fmt(s.threshold)} | {fmt(s.sigma)} | {s.outcome} |"
        )
    notes = []
    for s in stats:
        why = [
            x for x in (s.threshold_source, s.sigma_source and f"σ: {s.sigma_source}", s.note) if x
        ]
        if why:
            notes.append(f"- `{s.gate}`: " + "; ".join(why))
    return "\n".join(lines) + "\n" + ("\n" + "\n".join(notes) + "\n" if notes else "")


def conclusion_block(conclusion: Conclusion) -> str:
    lines = [f"**Verdict: {conclusion.verdict}**"]
    if conclusion.evidence:
        lines += ["", conclusion.evidence]
    if conclusion.override:
        lines += [
            "",
            f"**OVERRIDE** — the statistics did not support this verdict: {conclusion.override}",
        ]
    if conclusion.note:
        lines += ["", f"Note: {conclusion.note}"]
    if conclusion.yellow_flag:
        lines += ["", f"Yellow flag: {conclusion.yellow_flag}"]
    lines += ["", f"Next: {conclusion.next}"]
    return "\n".join(lines) + "\n"
