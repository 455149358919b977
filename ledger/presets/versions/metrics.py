"""Every metric a gate maps, not only the primary one: mean per version and Δ.

Verdicts are decided on the primary metric; the others are stored with each result
and were never shown. ``show``, ``diff`` and the reports list them all, primary first.
"""

from __future__ import annotations

from statistics import fmean
from typing import Any

from ledger.core.state import LedgerState


def _means(
    state: LedgerState, vid: str | None, gate: str, names: list[str]
) -> dict[str, tuple[float | None, int]]:
    """Each metric's mean and n over ``vid``'s results on ``gate``, read once for all."""
    results = state.results_for(vid, gate) if vid is not None else []
    out: dict[str, tuple[float | None, int]] = {}
    for name in names:
        values = [r.metrics[name] for r in results if name in r.metrics]
        out[name] = (fmean(values), len(values)) if values else (None, 0)
    return out


def metric_rows(state: LedgerState, vid: str, gate: str, base: str | None) -> list[dict[str, Any]]:
    """One row per configured metric of ``gate`` (primary first): n, mean, baseline mean, Δ."""
    cfg = state.config.gates.get(gate)
    if cfg is None:
        return []
    names = [cfg.metric, *sorted(n for n in cfg.metrics if n != cfg.metric)]
    rows = []
    own, based = _means(state, vid, gate, names), _means(state, base, gate, names)
    for name in names:
        mean, n = own[name]
        base_mean, _ = based[name]
        spec = cfg.metrics.get(name)
        direction = getattr(spec, "direction", None) or cfg.direction
        rows.append(
            {
                "gate": gate,
                "metric": name,
                "primary": name == cfg.metric,
                "direction": direction,
                "n": n,
                "mean": mean,
                "baseline": base,
                "baseline_mean": base_mean,
                "delta": None if mean is None or base_mean is None else mean - base_mean,
            }
        )
    return rows
