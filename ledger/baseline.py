"""The standing baseline per gate, and one version's evidence against it.

The standing baseline of a gate is the best confirmed distribution so far (the
first concluded version with results on a gate establishes it). A comparison
is a :class:`GateStat`: n nominal and effective, means, σ and where it came
from, Δ, SE, the threshold and its source, and the outcome in words.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

from ledger import stats
from ledger.model.config import GateConfig
from ledger.model.entries import GateStat
from ledger.state import LedgerState, Result, Version

ESTABLISHES = "establishes the baseline"
IMPROVED = "improved"
REGRESSED = "regressed"
NOISE = "within noise"
DIAGNOSTIC = "diagnostic only, no adjudication"
NOT_COMPARABLE = "not comparable"
NO_RESULTS = "no results"


def _per_key(results: list[Result], metric: str) -> dict[str, float]:
    """One value per seed or window: replicates of the same seed are averaged, since
    they measure the evaluation's own noise, not another draw of the seed."""
    groups: dict[str, list[float]] = {}
    for r in results:
        if metric in r.data.metrics:
            groups.setdefault(r.key, []).append(r.data.metrics[metric])
    return {k: sum(v) / len(v) for k, v in groups.items()}


def _values(results: list[Result], metric: str) -> list[float]:
    return list(_per_key(results, metric).values())


def _conditions(results: list[Result]) -> set[tuple[tuple[str, str], ...]]:
    return {tuple(sorted(r.data.provenance.conditions.items())) for r in results}


def _sign(direction: str) -> float:
    return 1.0 if direction == "higher" else -1.0


def _window_dates(results: list[Result]) -> list[tuple[date, date]] | None:
    spans = []
    for r in results:
        if not r.data.window_start or not r.data.window_end:
            return None
        try:
            spans.append(
                (date.fromisoformat(r.data.window_start), date.fromisoformat(r.data.window_end))
            )
        except ValueError:
            return None
    return spans


def standing_baseline(state: LedgerState, gate: str, before: str | None = None) -> Version | None:
    """The best confirmed version on ``gate`` among those ordered before ``before``."""
    cfg = state.config.gates.get(gate)
    if cfg is None:
        return None
    limit = state.version_key(before) if before else None
    best: tuple[float, Version] | None = None
    first_seen = False
    for version in state.versions:
        if limit is not None and state.version_key(version.id) >= limit:
            break
        if not version.concluded or version.id == before:
            continue
        values = _values(state.results_for(version.id, gate), cfg.metric)
        if not values:
            continue
        establishes = not first_seen
        first_seen = True
        if version.verdict != "confirmed" and not establishes:
            continue
        score = stats.sample(values).mean * _sign(cfg.direction_of(cfg.metric))
        if best is None or score > best[0]:
            best = (score, version)
    return best[1] if best else None


def compare(state: LedgerState, version: str, gate: str, baseline: Version | None) -> GateStat:
    """Evidence for ``version`` on ``gate`` against ``baseline``."""
    cfg: GateConfig = state.config.gates[gate]
    st = state.config.stats
    metric = cfg.metric
    direction = cfg.direction_of(metric)
    mine = [r for r in state.results_for(version, gate) if metric in r.data.metrics]
    stat = GateStat(
        gate=gate,
        metric=metric,
        direction=direction,
        unit=cfg.unit_of(metric),
        mode=cfg.mode,
        n=0,
        n_eff=0,
        mean=None,
        outcome=NO_RESULTS,
    )
    if not mine:
        return stat
    new = stats.sample(_values(mine, metric))
    spans = _window_dates(mine) if cfg.mode == "walk-forward" else None
    n_eff = stats.effective_n(spans) if spans else float(new.n)
    stat = stat.model_copy(update={"n": new.n, "n_eff": round(n_eff, 3), "mean": new.mean})
    if baseline is None:
        measured = new.sd is not None
        return stat.model_copy(
            update={
                "sigma": new.sd if measured else cfg.noise_floor,
                "sigma_source": "replicate seeds" if measured else "configured noise_floor",
                "outcome": ESTABLISHES,
            }
        )
    theirs = [r for r in state.results_for(baseline.id, gate) if metric in r.data.metrics]
    base = stats.sample(_values(theirs, metric))
    stat = stat.model_copy(
        update={
            "baseline_version": baseline.id,
            "baseline_n": base.n,
            "baseline_mean": base.mean,
            "delta": new.mean - base.mean,
        }
    )
    if _conditions(mine) != _conditions(theirs):
        return stat.model_copy(
            update={
                "outcome": NOT_COMPARABLE,
                "comparable": False,
                "note": f"run conditions differ: {version} {sorted(_conditions(mine))} vs "
                f"{baseline.id} {sorted(_conditions(theirs))}; not counted",
            }
        )
    sign = _sign(direction)
    if cfg.mode == "walk-forward":
        return _walk_forward(stat, cfg, st.min_windows, st.sigma_k, mine, theirs, sign, n_eff)
    thr = stats.threshold(
        base,
        new,
        floor=cfg.noise_floor,
        sigma_k=st.sigma_k,
        alpha=st.alpha,
        small_n=st.small_n,
    )
    if thr is None:
        return stat.model_copy(
            update={
                "outcome": NOISE,
                "note": "no replicates and no noise_floor configured: nothing can be adjudicated",
            }
        )
    gain = (new.mean - base.mean) * sign
    outcome = IMPROVED if gain > thr.value else REGRESSED if gain < -thr.value else NOISE
    note = ""
    if outcome == NOISE:
        floor = stats.mde(thr.sigma, min(n_eff, base.n), st.alpha, st.power, st.small_n)
        note = f"MDE at this n is {floor:.4g}: an effect smaller than that is unadjudicable"
    return stat.model_copy(
        update={
            "sigma": thr.sigma,
            "sigma_source": thr.sigma_source,
            "se": thr.se,
            "threshold": thr.value,
            "threshold_source": thr.source,
            "outcome": outcome,
            "note": note,
        }
    )


def _walk_forward(
    stat: GateStat,
    cfg: GateConfig,
    min_windows: int,
    sigma_k: float,
    mine: list[Result],
    theirs: list[Result],
    sign: float,
    n_eff: float,
) -> GateStat:
    """Acceptance on the distribution of per-window Δ, never on one window."""
    metric = cfg.metric
    by_window = _per_key(theirs, metric)
    gains = [
        (value - by_window[key]) * sign
        for key, value in _per_key(mine, metric).items()
        if key in by_window
    ]
    floor = cfg.window_floor if cfg.window_floor is not None else -(cfg.noise_floor or 0.0)
    if len(gains) < min_windows:
        return stat.model_copy(
            update={
                "delta": (sum(gains) / len(gains) * sign) if gains else None,
                "outcome": DIAGNOSTIC,
                "threshold": floor,
                "threshold_source": f"needs ≥ {min_windows} matched windows",
                "note": f"{len(gains)} matched window(s): diagnostic only, no adjudication",
            }
        )
    dist = stats.sample(gains)
    se = (dist.sd or 0.0) / max(n_eff, 1.0) ** 0.5
    accepted = dist.mean > 0 and min(gains) >= floor
    rejected = dist.mean < -sigma_k * se
    return stat.model_copy(
        update={
            "delta": dist.mean * sign,
            "se": se,
            "sigma": dist.sd,
            "sigma_source": "spread of window Δ",
            "threshold": floor,
            "window_min_delta": min(gains) * sign,
            "threshold_source": f"bar: mean Δ > 0 and min Δ ≥ {floor:g} over {len(gains)} windows",
            "outcome": IMPROVED if accepted else REGRESSED if rejected else NOISE,
        }
    )


@dataclass(frozen=True)
class BaselineRow:
    gate: str
    metric: str
    direction: str
    version: str
    mean: float
    n: int
    sigma: float | None
    latest_version: str | None
    latest_mean: float | None
    status: str


def baseline_rows(state: LedgerState) -> list[BaselineRow]:
    rows = []
    for gate, cfg in sorted(state.config.gates.items()):
        best = standing_baseline(state, gate)
        if best is None:
            continue
        values = _values(state.results_for(best.id, gate), cfg.metric)
        best_sample = stats.sample(values)
        latest = None
        for version in reversed(state.versions):
            if version.front.matrix and version.verdict != "confirmed":
                continue  # a matrix cell that did not win was never adopted
            if version.concluded and _values(state.results_for(version.id, gate), cfg.metric):
                latest = version
                break
        status = "holds"
        latest_mean = None
        if latest is not None and latest.id != best.id:
            comparison = compare(state, latest.id, gate, best)
            latest_mean = comparison.mean
            if comparison.outcome == REGRESSED:
                status = (
                    f"REGRESSION: {latest.id} Δ={comparison.delta:+.4g} "
                    f"beyond ±{comparison.threshold:.4g}"
                )
            elif comparison.outcome == IMPROVED:
                status = f"{latest.id} better but not confirmed"
            else:
                status = f"holds ({latest.id} {comparison.outcome})"
        elif latest is not None:
            latest_mean = best_sample.mean
        rows.append(
            BaselineRow(
                gate=gate,
                metric=cfg.metric,
                direction=cfg.direction_of(cfg.metric),
                version=best.id,
                mean=best_sample.mean,
                n=best_sample.n,
                sigma=best_sample.sd if best_sample.sd is not None else cfg.noise_floor,
                latest_version=latest.id if latest else None,
                latest_mean=latest_mean,
                status=status,
            )
        )
    return rows
