"""Whether a verdict is one the statistics support (shared by conclude and the hooks)."""

from __future__ import annotations

from ledger.core.model.entries import GateStat
from ledger.core.state import LedgerState
from ledger.presets.versions.baseline import (
    DIAGNOSTIC,
    ESTABLISHES,
    IMPROVED,
    NO_RESULTS,
    NOISE,
    NOT_COMPARABLE,
    REGRESSED,
    compare,
    standing_baseline,
)


def evidence(state: LedgerState, vid: str) -> list[GateStat]:
    """Statistics for every gate the version has results on; the targeted gate first."""
    version = state.version(vid)
    if version is None:
        return []
    target = version.front.gate
    gates = {r.gate for r in state.results if r.version == vid} | {target}
    ordered = [target, *sorted(g for g in gates if g != target and g in state.config.gates)]
    return [compare(state, vid, g, standing_baseline(state, g, before=vid)) for g in ordered]


def contradiction(verdict: str, target: GateStat, effect: float | None = None) -> str | None:
    """Why the numbers contradict ``verdict`` on the targeted gate (None: they allow it).

    With a registered ``effect`` the bet was "at least this much": ``confirmed``
    needs it reached beyond noise, and ``refuted`` stands when an improvement,
    however real, falls short of it.
    """
    outcome = target.outcome
    delta = target.delta
    comparable = outcome in (IMPROVED, NOISE, REGRESSED)
    if (
        effect is not None
        and delta is not None
        and comparable
        and verdict in ("confirmed", "refuted")
    ):
        gain = delta * (1.0 if target.direction == "higher" else -1.0)
        need = abs(effect)
        reached = outcome == IMPROVED and gain >= need
        if verdict == "confirmed" and not reached:
            return (
                f"the registered effect on '{target.gate}' is {need:.4g}; the improvement is "
                f"{gain:+.4g} ({outcome})"
            )
        if verdict == "refuted" and reached:
            return (
                f"Δ={delta:+.4g} on '{target.gate}' is beyond noise and reaches the registered "
                f"effect {need:.4g}"
            )
        return None
    if outcome == ESTABLISHES:
        return None
    if verdict == "inconclusive":
        return None
    if outcome == NO_RESULTS:
        return f"there are no results on the targeted gate '{target.gate}'"
    if outcome == NOT_COMPARABLE:
        return f"results on '{target.gate}' are not comparable with the baseline ({target.note})"
    if outcome == DIAGNOSTIC:
        return f"'{target.gate}': {target.note}"
    if verdict == "confirmed" and outcome != IMPROVED:
        if outcome == NOISE and target.delta is not None and target.threshold is not None:
            return (
                f"Δ={target.delta:+.4g} on '{target.gate}' is within noise "
                f"(threshold ±{target.threshold:.4g}, {target.threshold_source})"
            )
        return f"'{target.gate}' did not improve on the baseline ({outcome})"
    if verdict == "refuted" and outcome == IMPROVED:
        return (
            f"Δ={target.delta:+.4g} on '{target.gate}' is beyond noise in the bet's favour "
            f"(threshold ±{target.threshold:.4g})"
        )
    return None


def summary(
    verdict: str, target: GateStat, effect: float | None = None, override: str | None = None
) -> str:
    """One sentence with n, noise floor, threshold and why; an outcome that disagrees
    with the label says why they stand side by side (the effect, or the override)."""
    if target.outcome == ESTABLISHES:
        return (
            f"'{target.gate}': n={target.n}, mean {target.mean:.4g}; the first concluded results "
            "on this gate establish the baseline (nothing to contradict)."
        )
    if target.outcome == NO_RESULTS:
        return f"'{target.gate}': no results."
    parts = [f"'{target.gate}' ({target.metric}, {target.direction} is better): n={target.n}"]
    if target.n_eff != target.n:
        parts.append(f"n_eff={target.n_eff:g}")
    if target.delta is not None:
        parts.append(f"Δ={target.delta:+.4g} vs {target.baseline_version}")
    if target.se is not None:
        parts.append(f"SE={target.se:.4g}")
    if target.sigma is not None:
        parts.append(f"σ={target.sigma:.4g} ({target.sigma_source})")
    if target.threshold is not None:
        parts.append(f"threshold {target.threshold:.4g} ({target.threshold_source})")
    outcome = target.outcome
    if verdict == "refuted" and outcome == IMPROVED:
        if override:
            outcome = f"improved beyond noise, yet refuted by override ({override})"
        elif effect is not None:
            outcome = f"beyond noise but short of the registered effect {abs(effect):.4g}: refuted"
    elif verdict == "confirmed" and outcome != IMPROVED and override:
        outcome = f"{outcome}, confirmed only by override ({override})"
    text = ", ".join(parts) + f" → {outcome}."
    return text + (f" {target.note}." if target.note else "")


def regressions(gates: list[GateStat], target: GateStat) -> str:
    """The sentence that names each non-targeted gate that regressed beyond noise (empty:
    none did): a conclusion states it in words, not only in the gate table (issue 26)."""
    parts = []
    for g in gates:
        if g is target or g.gate == target.gate or g.outcome != REGRESSED:
            continue
        text = f"'{g.gate}' ({g.metric}) Δ={g.delta:+.4g}" if g.delta is not None else g.gate
        if g.baseline_version:
            text += f" vs {g.baseline_version}"
        if g.threshold is not None:
            text += f", beyond its threshold ±{g.threshold:.4g}"
        parts.append(text)
    if not parts:
        return ""
    return "Regressed beyond noise on a non-targeted gate: " + "; ".join(parts) + "."
