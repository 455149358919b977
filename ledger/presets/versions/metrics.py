"""Every metric a gate maps, not only the primary one: mean per version and Δ.

Verdicts are decided on the primary metric; the others are stored with each result
and were never shown. ``show``, ``diff`` and the reports list them all, primary first.
"""

from __future__ import annotations

from statistics import fmean
from typing import Any

from ledger.core.state import LedgerState, Result


class Summaries:
    """A version's results on a gate, each metric's values and its values per seed, read
    once and shared: the report's every-metric table, its compare table and its series
    each made their own pass over every version and metric (and every parent's)."""

    def __init__(self, state: LedgerState) -> None:
        self.state = state
        self._results: dict[tuple[str, str], list[Result]] = {}
        self._values: dict[tuple[str, str], dict[str, list[float]]] = {}
        self._groups: dict[tuple[str, str], dict[str, dict[str, list[float]]]] = {}
        self._keyed: dict[tuple[str, str, str], dict[str, float]] = {}

    def results(self, vid: str | None, gate: str) -> list[Result]:
        if vid is None:
            return []
        found = self._results.get((vid, gate))
        if found is None:
            found = self._results[(vid, gate)] = self.state.results_for(vid, gate)
        return found

    def _read(self, vid: str, gate: str) -> None:
        """One pass over the results: each metric's values, and grouped by seed or window."""
        every: dict[str, list[float]] = {}
        groups: dict[str, dict[str, list[float]]] = {}
        for r in self.results(vid, gate):
            key = r.key
            for name, value in r.metrics.items():
                every.setdefault(name, []).append(value)
                groups.setdefault(name, {}).setdefault(key, []).append(value)
        self._values[(vid, gate)], self._groups[(vid, gate)] = every, groups

    def values(self, vid: str | None, gate: str, metric: str) -> list[float]:
        """``metric``'s values over the results, in their order (missing ones skipped)."""
        if vid is None:
            return []
        if (vid, gate) not in self._values:
            self._read(vid, gate)
        return self._values[(vid, gate)].get(metric, [])

    def keyed(self, vid: str | None, gate: str, metric: str) -> dict[str, float]:
        """``metric``'s value per seed or window (replicates averaged, as ``_per_key``)."""
        if vid is None:
            return {}
        found = self._keyed.get((vid, gate, metric))
        if found is None:
            if (vid, gate) not in self._groups:
                self._read(vid, gate)
            groups = self._groups[(vid, gate)].get(metric, {})
            found = {k: sum(v) / len(v) for k, v in groups.items()}
            self._keyed[(vid, gate, metric)] = found
        return found


def _means(
    summaries: Summaries, vid: str | None, gate: str, names: list[str]
) -> dict[str, tuple[float | None, int]]:
    """Each metric's mean and n over ``vid``'s results on ``gate``, read once for all."""
    out: dict[str, tuple[float | None, int]] = {}
    for name in names:
        values = summaries.values(vid, gate, name)
        out[name] = (fmean(values), len(values)) if values else (None, 0)
    return out


def metric_rows(
    state: LedgerState,
    vid: str,
    gate: str,
    base: str | None,
    summaries: Summaries | None = None,
) -> list[dict[str, Any]]:
    """One row per configured metric of ``gate`` (primary first): n, mean, baseline mean, Δ.
    ``summaries``: the results already read, when the caller shares them."""
    cfg = state.config.gates.get(gate)
    if cfg is None:
        return []
    names = [cfg.metric, *sorted(n for n in cfg.metrics if n != cfg.metric)]
    rows = []
    summaries = summaries or Summaries(state)
    own, based = _means(summaries, vid, gate, names), _means(summaries, base, gate, names)
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
