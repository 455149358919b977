"""Honest statistics: noise floor, thresholds, effective N, MDE, walk-forward bars.

Every function returns the numbers *and* where they came from, because a
verdict must state n, the noise floor, the threshold and why. Everything here
is plain arithmetic; the few quantiles only a distribution can give come from
:mod:`ledger.core.distributions` (standard library only, checked against scipy
by the tests).

Comparisons are paired whenever the baseline and the version share seeds or
windows: the SE then comes from the per-pair differences with Student-t at
n-1 degrees of freedom, which removes the split's own variance from the
comparison. Unpaired (pooled σ) only when they share none, or with
``[stats] pairing = "off"``. Walk-forward windows that overlap are not
independent: SE, degrees of freedom and the MDE all use the effective N.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import date

from ledger.core.distributions import power_nc, t_quantile, z_quantile

# A value whose square overflows a double cannot be summarised; ingest refuses
# anything larger in magnitude, and sample() scales before squaring anyway.
MAX_ABS = 1e150
IMPROVED = "improved"
REGRESSED = "regressed"
NOISE = "within noise"
BAR_KEYS: tuple[str, ...] = ("mean", "p25", "min")


@dataclass(frozen=True)
class Sample:
    n: int
    mean: float
    sd: float | None  # None when n < 2


def sample(values: Sequence[float]) -> Sample:
    """Mean and sd, computed without overflow for any finite input."""
    n = len(values)
    if n == 0:
        raise ValueError("empty sample")
    scale = max(abs(v) for v in values) or 1.0
    scaled = [v / scale for v in values]
    mean_scaled = math.fsum(scaled) / n
    mean = mean_scaled * scale
    if n < 2:
        return Sample(n, mean, None)
    var = math.fsum((v - mean_scaled) ** 2 for v in scaled) / (n - 1)
    return Sample(n, mean, math.sqrt(var) * scale)


def rms(values: Sequence[float]) -> float:
    """Root mean square, computed without overflow for any finite input."""
    scale = max(abs(v) for v in values) or 1.0
    return math.sqrt(math.fsum((v / scale) ** 2 for v in values) / len(values)) * scale


def critical_k(
    df: float | None, *, sigma_k: float, alpha: float, small_n: int
) -> tuple[float, str]:
    """The multiple of SE a Δ must exceed: sigma_k, or the Student-t quantile when larger.

    ``df`` None means σ was not measured (a configured noise floor): sigma_k applies.
    """
    if df is not None and df > 0 and df < small_n:
        t = t_quantile(1 - alpha / 2, df)
        if t > sigma_k:
            return t, f"Student-t q{1 - alpha / 2:g}(df={df:.3g})={t:.3f} × SE"
    return sigma_k, f"sigma_k={sigma_k:g} × SE"


def mde_for_se(
    se: float, df: float | None, *, sigma_k: float, alpha: float, power: float, small_n: int
) -> float:
    """Smallest true Δ the verdict's own rule confirms with probability ``power``.

    The Δ/SE statistic is noncentral t at ``df`` (normal when σ is a configured
    floor), the critical value is critical_k(); see power_nc for the σ estimate.
    """
    k, _ = critical_k(df, sigma_k=sigma_k, alpha=alpha, small_n=small_n)
    return power_nc(k, None if df is None else round(df, 3), power) * se


def mde(
    sigma: float,
    n_eff: float,
    alpha: float,
    power: float,
    small_n: int,
    *,
    sigma_k: float = 2.0,
    paired: bool = True,
) -> float:
    """MDE at σ per measurement and n (effective) measurements per side.

    Paired: σ is the sd of per-pair differences, SE = σ/√n, df = n-1.
    Unpaired: σ is the per-measurement sd, SE = σ·√(2/n), df = 2n-2.
    """
    n = max(n_eff, 1.0)
    se = sigma / math.sqrt(n) if paired else sigma * math.sqrt(2.0 / n)
    df = n - 1 if paired else 2 * n - 2
    return mde_for_se(
        se, df if df > 0 else None, sigma_k=sigma_k, alpha=alpha, power=power, small_n=small_n
    )


@dataclass(frozen=True)
class Comparison:
    """One gate's Δ against its baseline with everything behind the verdict."""

    pairing: str  # "paired" | "unpaired" | "walk-forward"
    n: int  # pairs (paired), the version's n (unpaired), matched windows (walk-forward)
    n_eff: float
    delta: float  # raw: new - base
    gain: float  # Δ in the favourable direction
    sigma: float | None
    sigma_source: str
    se: float | None
    df: float | None
    k: float | None
    threshold: float | None
    threshold_source: str
    mde: float | None
    outcome: str
    note: str = ""
    bar: str = ""
    window_min: float | None = None


def _floored(sd: float | None, floor: float | None, what: str) -> tuple[float, str, bool] | None:
    """(σ, source, measured) from a replicate sd, floored by the configured noise floor."""
    if sd is not None and sd > 0:
        if floor is not None and sd < floor:
            return floor, f"configured noise_floor {floor:g} ({what} gave σ={sd:.4g}, lower)", False
        return sd, what, True
    if floor is not None:
        return floor, f"configured noise_floor {floor:g} (no replicates)", False
    return None


def _decide(gain: float, threshold: float) -> str:
    return IMPROVED if gain > threshold else REGRESSED if gain < -threshold else NOISE


def compare_keyed(
    base: Mapping[str, float],
    new: Mapping[str, float],
    *,
    sign: float,
    floor: float | None,
    sigma_k: float,
    alpha: float,
    power: float,
    small_n: int,
    pairing: str = "auto",
) -> Comparison | None:
    """Seeds mode: paired over the shared seeds when there are any, else unpaired.

    None: nothing can be adjudicated (no replicates and no noise floor).
    """
    shared = sorted(set(base) & set(new))
    if shared and pairing != "off":
        diffs = [new[key] - base[key] for key in shared]
        d = sample(diffs)
        found = _floored(d.sd, floor, f"sd of {d.n} paired differences")
        if found is None:
            return None
        unmatched = len(set(base) ^ set(new))
        return _seeds_comparison(
            "paired",
            d.n,
            d.mean,
            found,
            found[0] / math.sqrt(d.n),
            float(d.n - 1),
            f"paired over {d.n} shared seeds",
            f"{unmatched} unmatched seed(s) not in the paired comparison" if unmatched else "",
            sign=sign,
            sigma_k=sigma_k,
            alpha=alpha,
            power=power,
            small_n=small_n,
        )
    b = sample(list(base.values()))
    m = sample(list(new.values()))
    parts = [(s.n - 1, s.sd) for s in (b, m) if s.sd is not None]
    pooled = None
    dof = 0
    if parts:
        dof = sum(d for d, _ in parts)
        pooled = math.sqrt(sum(d * (sd / 1.0) ** 2 for d, sd in parts) / dof) if dof else None
    found = _floored(pooled, floor, f"pooled σ of replicate seeds (df={dof})")
    if found is None:
        return None
    why = "no shared seeds" if pairing != "off" else '[stats] pairing = "off"'
    return _seeds_comparison(
        "unpaired",
        m.n,
        m.mean - b.mean,
        found,
        found[0] * math.sqrt(1.0 / b.n + 1.0 / m.n),
        float(b.n + m.n - 2),
        f"unpaired ({why})",
        "",
        sign=sign,
        sigma_k=sigma_k,
        alpha=alpha,
        power=power,
        small_n=small_n,
    )


def _seeds_comparison(
    pairing: str,
    n: int,
    delta: float,
    found: tuple[float, str, bool],
    se: float,
    df_measured: float,
    basis: str,
    note: str,
    *,
    sign: float,
    sigma_k: float,
    alpha: float,
    power: float,
    small_n: int,
) -> Comparison:
    """A seeds-mode comparison (paired or not) from its Δ, σ and SE.

    The t quantile takes ``df_measured`` only when σ was measured: a configured
    noise floor has no degrees of freedom (see :func:`critical_k`).
    """
    sigma, source, measured = found
    df = df_measured if measured else None
    k, k_source = critical_k(df, sigma_k=sigma_k, alpha=alpha, small_n=small_n)
    return Comparison(
        pairing=pairing,
        n=n,
        n_eff=float(n),
        delta=delta,
        gain=delta * sign,
        sigma=sigma,
        sigma_source=source,
        se=se,
        df=df,
        k=k,
        threshold=k * se,
        threshold_source=f"{basis}: {k_source}",
        mde=mde_for_se(se, df, sigma_k=sigma_k, alpha=alpha, power=power, small_n=small_n),
        outcome=_decide(delta * sign, k * se),
        note=note,
    )


def quantile(values: Sequence[float], q: float) -> float:
    """Linear-interpolated quantile (numpy's default method)."""
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q
    lo = math.floor(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


@dataclass(frozen=True)
class WindowDesign:
    """What overlapping windows are worth: effective N, the degrees of freedom of their
    spread (Satterthwaite) and the factor by which overlap shrinks the sample variance."""

    n: int
    n_eff: float
    df: float
    shrink: float


def window_design(windows: Sequence[tuple[date, date]] | None, n: int) -> WindowDesign:
    """From the overlap matrix R (ρ = shared span fraction): n_eff = n²/1'R1, and with
    A = I - J/n the spread's E[s²] = σ²·tr(AR)/(n-1), df = tr(AR)²/tr((AR)²)."""
    if not windows or len(windows) != n or n < 2:
        return WindowDesign(n, float(n), float(max(n - 1, 0)), 1.0)
    ordered = sorted(windows)
    rho = [
        [1.0 if i == j else overlap_fraction(a, b) for j, b in enumerate(ordered)]
        for i, a in enumerate(ordered)
    ]
    total = math.fsum(math.fsum(row) for row in rho)
    col = [math.fsum(rho[i][j] for i in range(n)) / n for j in range(n)]
    ar = [[rho[i][j] - col[j] for j in range(n)] for i in range(n)]
    trace = math.fsum(ar[i][i] for i in range(n))
    trace_sq = math.fsum(ar[i][j] * ar[j][i] for i in range(n) for j in range(n))
    df = trace * trace / trace_sq if trace_sq > 0 else 0.0
    return WindowDesign(n, n * n / total, df, trace / (n - 1))


def compare_windows(
    gains: Sequence[float],
    design: WindowDesign,
    *,
    sign: float,
    bar: Mapping[str, float],
    sigma_k: float,
    alpha: float,
    power: float,
    small_n: int,
    floor: float | None = None,
) -> Comparison:
    """Walk-forward: the distribution of per-window gains against the pre-registered bar,
    and its mean beyond the threshold at the effective N.

    Overlapping windows are correlated, so the sample variance of their gains is
    biased low (by design.shrink); it is corrected before the SE (σ/√n_eff) is
    formed, and the t quantile uses the spread's own degrees of freedom.

    σ is floored by the gate's ``noise_floor`` as in the seeds mode (issue 26: +5 on
    each of five windows, with a floor of 200, was "confirmed" on a σ of almost 0); a
    floored σ has no degrees of freedom, so sigma_k applies.
    """
    d = sample(list(gains))
    n = d.n
    n_eff = design.n_eff
    spread = d.sd or 0.0
    df = design.df
    checks = {"mean": d.mean, "p25": quantile(gains, 0.25), "min": min(gains)}
    failed = [
        f"{key} Δ {checks[key]:+.4g} {'≤' if key == 'mean' else '<'} {bar[key]:g}"
        for key in BAR_KEYS
        if key in bar and not (checks[key] > bar[key] if key == "mean" else checks[key] >= bar[key])
    ]
    bar_text = " and ".join(
        f"{key} Δ {'>' if key == 'mean' else '≥'} {bar[key]:g}" for key in BAR_KEYS if key in bar
    )
    # What holds with no independent spread; the measured case below adds σ and the threshold.
    unmeasured = Comparison(
        pairing="walk-forward",
        n=n,
        n_eff=n_eff,
        delta=d.mean * sign,
        gain=d.mean,
        sigma=None,
        sigma_source="windows overlap completely or do not vary: no independent spread",
        se=None,
        df=None,
        k=None,
        threshold=None,
        threshold_source=f"bar: {bar_text}",
        mde=None,
        outcome=NOISE,
        note=f"n_eff={n_eff:.3g}: nothing can be adjudicated",
        bar=bar_text,
        window_min=min(gains) * sign,
    )
    measured = design.shrink > 0 and df > 0 and spread > 0
    if not measured and (floor is None or n_eff <= 0):
        return unmeasured
    sigma = spread / math.sqrt(design.shrink) if measured else 0.0
    sigma_source = f"spread of {n} window Δ, corrected for overlap (n_eff={n_eff:.3g})"
    if floor is not None and sigma < floor:
        sigma_source = (
            f"configured noise_floor {floor:g} ({sigma_source} gave σ={sigma:.4g}, lower)"
            if measured
            else f"configured noise_floor {floor:g} (the windows give no independent spread)"
        )
        sigma, df_used = floor, None
    else:
        df_used = df
    se = sigma / math.sqrt(n_eff)
    k, k_source = critical_k(df_used, sigma_k=sigma_k, alpha=alpha, small_n=small_n)
    threshold = k * se
    beyond = _decide(d.mean, threshold)
    outcome = beyond
    note = ""
    if beyond == IMPROVED and failed:
        outcome = NOISE
        note = "mean Δ is beyond the threshold but the bar fails: " + "; ".join(failed)
    elif beyond == NOISE and not failed:
        note = f"the bar holds but mean Δ {d.mean:+.4g} is within ±{threshold:.4g} at n_eff={n_eff:.3g}"
    return replace(
        unmeasured,
        sigma=sigma,
        sigma_source=sigma_source,
        se=se,
        df=df_used,
        k=k,
        threshold=threshold,
        threshold_source=f"bar: {bar_text}; and mean Δ beyond {k_source} at n_eff={n_eff:.3g}",
        mde=mde_for_se(se, df_used, sigma_k=sigma_k, alpha=alpha, power=power, small_n=small_n),
        outcome=outcome,
        note=note,
    )


def overlap_fraction(a: tuple[date, date], b: tuple[date, date]) -> float:
    """Shared span of two windows as a fraction of their mean length."""
    start, end = max(a[0], b[0]), min(a[1], b[1])
    shared = max((end - start).days, 0)
    length = ((a[1] - a[0]).days + (b[1] - b[0]).days) / 2
    return min(shared / length, 1.0) if length > 0 else 0.0


def effective_n(windows: Sequence[tuple[date, date]]) -> float:
    """n / (1 + 2 Σ_k (1 - k/n) ρ_k), ρ_k the mean overlap of windows k apart."""
    ordered = sorted(windows)
    n = len(ordered)
    if n < 2:
        return float(n)
    total = 0.0
    for k in range(1, n):
        rho = sum(overlap_fraction(ordered[i], ordered[i + k]) for i in range(n - k)) / (n - k)
        total += (1 - k / n) * rho
    return n / (1 + 2 * total)


def rule_sigma(m: int, table: Mapping[str, float]) -> float | None:
    """The documented rule: the k of the smallest listed cell count ≥ m, and beyond the
    largest listed count that count's k (thresholds never fall as cells are added)."""
    if not table:
        return None
    listed = sorted((int(n), k) for n, k in table.items())
    fitting = [k for n, k in listed if n >= m]
    k = fitting[0] if fitting else listed[-1][1]
    # Monotone whatever the table says: never below any smaller count's k.
    return max([k, *(k2 for n2, k2 in listed if n2 <= m)])


def matrix_ks(
    m: int,
    df: float | None,
    *,
    alpha: float,
    sigma_k: float,
    small_n: int,
    table: Mapping[str, float],
) -> list[float]:
    """Holm step-down critical values for m cells (largest first), each floored by the
    documented rule and by a single version's threshold, at the cells' df."""
    single, _ = critical_k(df, sigma_k=sigma_k, alpha=alpha, small_n=small_n)
    floor = max(rule_sigma(m, table) or 0.0, single)
    out = []
    for i in range(m):
        p = 1 - alpha / (2 * (m - i))
        q = t_quantile(p, df) if df is not None and df > 0 else z_quantile(p)
        out.append(max(floor, q))
    return out


def holm_ks(m: int, alpha: float) -> list[float]:
    """Holm step-down critical z values for m two-sided comparisons (largest first)."""
    return [z_quantile(1 - alpha / (2 * (m - i))) for i in range(m)]


def adjusted_passes(
    zs: Mapping[str, float],
    alpha: float,
    table: Mapping[str, float],
    *,
    sigma_k: float = 2.0,
    small_n: int = 30,
    dfs: Mapping[str, float | None] | None = None,
    m: int | None = None,
) -> dict[str, tuple[float, bool]]:
    """Per cell: the adjusted k and whether it passes (Holm step-down over all m cells,
    floored by the rule and a single version's threshold)."""
    count = max(m or 0, len(zs))
    if not zs:
        return {}
    out: dict[str, tuple[float, bool]] = {}
    still = True
    for i, (name, z) in enumerate(sorted(zs.items(), key=lambda kv: -kv[1])):
        df = (dfs or {}).get(name)
        k = matrix_ks(count, df, alpha=alpha, sigma_k=sigma_k, small_n=small_n, table=table)[i]
        passed = still and z > k
        still = passed
        out[name] = (k, passed)
    return out
