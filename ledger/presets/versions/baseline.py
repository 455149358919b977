"""The standing baseline per gate, and one version's evidence against it.

The standing baseline of a gate is the best confirmed distribution so far (the
first concluded version with results on a gate establishes it). A comparison
is a :class:`GateStat`: n nominal and effective, means, σ and where it came
from, Δ, SE, the threshold and its source, and the outcome in words.
"""

from __future__ import annotations

import math
import weakref
from dataclasses import dataclass, field
from datetime import date

from ledger.core import baselinecache, stats
from ledger.core.model.config import GateConfig
from ledger.core.model.entries import GateStat
from ledger.core.model.trusted import construct
from ledger.core.state import LedgerState, Result, Version

ESTABLISHES = "establishes the baseline"
IMPROVED = stats.IMPROVED
REGRESSED = stats.REGRESSED
NOISE = stats.NOISE
DIAGNOSTIC = "diagnostic only, no adjudication"
NOT_COMPARABLE = "not comparable"
NO_RESULTS = "no results"


def _per_key(results: list[Result], metric: str) -> dict[str, float]:
    """One value per seed or window: replicates of the same seed are averaged, since
    they measure the evaluation's own noise, not another draw of the seed."""
    groups: dict[str, list[float]] = {}
    for r in results:
        if metric in r.metrics:
            groups.setdefault(r.key, []).append(r.metrics[metric])
    return {k: sum(v) / len(v) for k, v in groups.items()}


@dataclass(frozen=True)
class EvalNoise:
    """The evaluation's own noise on a gate, from re-measurements of concluded versions."""

    gate: str
    sigma: float
    pairs: int
    versions: tuple[str, ...]


def eval_noise(state: LedgerState, gate: str) -> EvalNoise | None:
    """σ of one measurement from re-measuring a seed or window already on record.

    Each re-measurement and the recorded value of the same seed are two draws of
    the same code on the same split, so their difference has variance 2σ²:
    σ = √(Σd² / 2N). Re-measurements never enter a verdict (``results_for``
    leaves them out); this estimate is what they feed.
    """
    cfg = state.config.gates.get(gate)
    if cfg is None:
        return None
    diffs: list[float] = []
    versions: list[str] = []
    for version in state.versions:
        again = state.results_for(version.id, gate, remeasured=True)
        if not again:
            continue
        recorded = _per_key(state.results_for(version.id, gate), cfg.metric)
        for r in again:
            value = r.data.metrics.get(cfg.metric)
            if value is not None and r.key in recorded:
                diffs.append(value - recorded[r.key])
                if version.id not in versions:
                    versions.append(version.id)
    if not diffs:
        return None
    return EvalNoise(gate, stats.rms(diffs) / math.sqrt(2.0), len(diffs), tuple(versions))


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


def _history(state: LedgerState, gate: str) -> dict[str, Version | None]:
    """For every version: the standing best on ``gate`` before it, and under ``""`` the
    best now. The first concluded version with results establishes it; a later one
    takes it only if it is confirmed and its Δ on *this* gate is beyond noise."""
    cfg = state.config.gates.get(gate)
    memo = _memo(state)
    cache_key = memo.keys.get(gate)
    if cache_key is None:
        cache_key = baselinecache.config_key(gate, state.config) if cfg is not None else ""
        memo.keys[gate] = cache_key
    found = memo.walks.get((gate, cache_key))
    if found is not None:
        return found
    out: dict[str, Version | None] = {}
    best: Version | None = None
    # Resumed from the longest prefix an earlier process walked (ledger.core.baselinecache).
    known_chain, known_best = (
        baselinecache.load(state.state_dir, cache_key)
        if state.state_dir and cache_key
        else ([], [])
    )
    chain: list[str] = []
    bests: list[str | None] = []
    previous = ""
    for i, version in enumerate(state.versions):
        out[version.id] = best
        mine = state.results_for(version.id, gate) if cfg is not None else []
        previous = baselinecache.link(previous, _fingerprint(state, version, mine))
        chain.append(previous)
        if i < len(known_chain) and known_chain[i] == previous:
            held = known_best[i]
            if held is None or state.version(held) is not None:
                best = state.version(held) if held is not None else None
                bests.append(held)
                continue
        known_chain = []  # diverged (or never walked): compare from here on
        if (
            cfg is not None
            and version.concluded
            and _values(mine, cfg.metric)
            and (
                best is None
                or (
                    version.verdict == "confirmed"
                    and compare(state, version.id, gate, best).outcome == IMPROVED
                )
            )
        ):
            best = version
        bests.append(best.id if best is not None else None)
    out[""] = best
    memo.walks[(gate, cache_key)] = out
    if state.state_dir and cache_key and known_chain[: len(chain)] != chain:
        baselinecache.save(state.state_dir, cache_key, chain, bests)
    return out


def _fingerprint(state: LedgerState, version: Version, mine: list[Result]) -> str:
    """What the walk reads of one version: id, verdict, and its results on the gate."""
    blobs = ",".join(sorted(f"{r.path}={state.files.get(r.path, '')}" for r in mine))
    return f"{version.id}\0{version.concluded}\0{version.verdict}\0{blobs}"


_Walks = dict[tuple[str, str], dict[str, Version | None]]


@dataclass
class _Memo:
    state: weakref.ref[LedgerState]
    marker: tuple[int, int, int]  # a change of the lists in place starts afresh
    walks: _Walks  # per (gate, configuration key); shared by states over the same lists
    keys: dict[str, str] = field(default_factory=dict)  # gate -> key, this state's config


_CACHE: dict[int, _Memo] = {}


def _memo(state: LedgerState) -> _Memo:
    """The walks this process already made of ``state``'s entries.

    A state made from another by ``dataclasses.replace`` with only a configuration of
    its own holds the very same lists of versions and results, and shares its walks
    while the other is alive: conclude judges under the configuration frozen at the
    registration and renders its views under today's, and when the two agree on the
    gate it walks once (a pass over every version's results on the gate).
    """
    marker = (len(state.versions), len(state.results), sum(v.concluded for v in state.versions))
    mine = _CACHE.get(id(state))
    if mine is not None and mine.state() is state and mine.marker == marker:
        return mine
    walks: _Walks = {}
    for memo in list(_CACHE.values()):
        other = memo.state()
        if (
            other is not None
            and memo.marker == marker
            and other.versions is state.versions
            and other.results is state.results
        ):
            walks = memo.walks
            break
    mine = _CACHE[id(state)] = _Memo(weakref.ref(state), marker, walks)
    if len(_CACHE) > 64:
        for key in [k for k, v in _CACHE.items() if v.state() is None]:
            del _CACHE[key]
    return mine


def high_water_marks(state: LedgerState, gate: str) -> list[str]:
    """The versions that set the standing best on ``gate``, in order (the first one
    establishes it; each later one moved it beyond noise)."""
    if gate not in state.config.gates:
        return []
    history = _history(state, gate)
    marks: list[str] = []
    previous: Version | None = None
    for version in state.versions:
        best = history[version.id]
        if best is not None and best is not previous:
            marks.append(best.id)
        previous = best
    now = history[""]
    if now is not None and now is not previous:
        marks.append(now.id)
    return marks


def standing_baseline(state: LedgerState, gate: str, before: str | None = None) -> Version | None:
    """The standing best on ``gate`` among the versions ordered before ``before``."""
    if gate not in state.config.gates:
        return None
    history = _history(state, gate)
    if before is None:
        return history[""]
    if before in history:
        return history[before]
    limit = state.version_key(before)
    best = None
    for version in state.versions:
        if state.version_key(version.id) >= limit:
            return history[version.id]
        best = version
    return history[""] if best is not None else None


def compare(state: LedgerState, version: str, gate: str, baseline: Version | None) -> GateStat:
    """Evidence for ``version`` on ``gate`` against ``baseline``."""
    cfg: GateConfig = state.config.gates[gate]
    st = state.config.stats
    metric = cfg.metric
    direction = cfg.direction_of(metric)
    mine = [r for r in state.results_for(version, gate) if metric in r.data.metrics]
    # Built from the validated configuration, not validated again: a process that only
    # reads (next, status, show) then builds no validator (ledger.core.model.trusted).
    stat = construct(
        GateStat,
        gate=gate,
        metric=metric,
        direction=direction,
        unit=cfg.unit_of(metric),
        mode=cfg.mode,
        n=0,
        n_eff=0.0,
        mean=None,
        outcome=NO_RESULTS,
    )
    if not mine:
        return stat
    new = stats.sample(_values(mine, metric))
    spans = _window_dates(mine) if cfg.mode == "walk-forward" else None
    n_eff = stats.effective_n(spans) if spans else float(new.n)
    stat = stat.model_copy(update={"n": new.n, "n_eff": round(n_eff, 3), "mean": new.mean})
    theirs = (
        [r for r in state.results_for(baseline.id, gate) if metric in r.data.metrics]
        if baseline is not None
        else []
    )
    if baseline is None or not theirs:
        # Nothing to compare with (no baseline, or one never measured on this gate):
        # this version's numbers establish the gate.
        measured = new.sd is not None
        return stat.model_copy(
            update={
                "sigma": new.sd if measured else cfg.noise_floor,
                "sigma_source": "replicate seeds" if measured else "configured noise_floor",
                "outcome": ESTABLISHES,
            }
        )
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
        return _walk_forward(stat, cfg, state, mine, theirs, sign)
    found = stats.compare_keyed(
        _per_key(theirs, metric),
        _per_key(mine, metric),
        sign=sign,
        floor=cfg.noise_floor,
        sigma_k=st.sigma_k,
        alpha=st.alpha,
        power=st.power,
        small_n=st.small_n,
        pairing=st.pairing,
    )
    if found is None:
        return stat.model_copy(
            update={
                "outcome": NOISE,
                "note": "no replicates and no noise_floor configured: nothing can be adjudicated",
            }
        )
    return _with(stat, found)


def _with(stat: GateStat, found: stats.Comparison) -> GateStat:
    notes = [found.note] if found.note else []
    if found.outcome == NOISE and found.mde is not None:
        notes.append(
            f"MDE at this n is {found.mde:.4g} ({found.pairing}): an effect smaller than that "
            "is unadjudicable"
        )
    return stat.model_copy(
        update={
            "delta": found.delta,
            "sigma": found.sigma,
            "sigma_source": found.sigma_source,
            "se": found.se,
            "df": found.df,
            "critical_k": found.k,
            "threshold": found.threshold,
            "threshold_source": found.threshold_source,
            "mde": found.mde,
            "pairing": found.pairing,
            "bar": found.bar,
            "window_min_delta": found.window_min,
            "outcome": found.outcome,
            "note": "; ".join(notes),
        }
    )


def _walk_forward(
    stat: GateStat,
    cfg: GateConfig,
    state: LedgerState,
    mine: list[Result],
    theirs: list[Result],
    sign: float,
) -> GateStat:
    """Acceptance on the distribution of per-window Δ, never on one window."""
    st = state.config.stats
    metric = cfg.metric
    by_window = _per_key(theirs, metric)
    matched = [r for r in mine if r.key in by_window]
    gains = [(value - by_window[key]) * sign for key, value in _per_key(matched, metric).items()]
    one_per_window = list({r.key: r for r in matched}.values())
    design = stats.window_design(_window_dates(one_per_window), len(gains))
    if len(gains) < st.min_windows:
        return stat.model_copy(
            update={
                "delta": (sum(gains) / len(gains) * sign) if gains else None,
                "outcome": DIAGNOSTIC,
                "threshold_source": f"needs ≥ {st.min_windows} matched windows",
                "note": f"{len(gains)} matched window(s): diagnostic only, no adjudication",
            }
        )
    found = stats.compare_windows(
        gains,
        design,
        sign=sign,
        bar=cfg.window_bar(),
        sigma_k=st.sigma_k,
        alpha=st.alpha,
        power=st.power,
        small_n=st.small_n,
        floor=cfg.noise_floor,
    )
    return _with(stat.model_copy(update={"n_eff": round(found.n_eff, 3)}), found)


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
    latest_parent: str | None = None
    delta_vs_parent: float | None = None
    delta_vs_best: float | None = None


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
        vs_best: float | None = None
        vs_parent: float | None = None
        parent = state.version(latest.front.parent) if latest and latest.front.parent else None
        if latest is not None and parent is not None and state.results_for(parent.id, gate):
            vs_parent = compare(state, latest.id, gate, parent).delta
        if latest is not None and latest.id != best.id:
            comparison = compare(state, latest.id, gate, best)
            latest_mean = comparison.mean
            vs_best = comparison.delta
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
                latest_parent=parent.id if parent else None,
                delta_vs_parent=vs_parent,
                delta_vs_best=vs_best if latest is None or latest.id != best.id else 0.0,
            )
        )
    return rows
