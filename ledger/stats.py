"""Honest statistics: noise floor, thresholds, effective N, MDE, walk-forward bars.

Every function returns the numbers *and* where they came from, because a
verdict must state n, the noise floor, the threshold and why. scipy is
imported lazily (a hook with no ledger work must not pay for it), and no
distribution is hand-written.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date


@dataclass(frozen=True)
class Sample:
    n: int
    mean: float
    sd: float | None  # None when n < 2


def sample(values: Sequence[float]) -> Sample:
    n = len(values)
    if n == 0:
        raise ValueError("empty sample")
    mean = math.fsum(values) / n
    if n < 2:
        return Sample(n, mean, None)
    var = math.fsum((v - mean) ** 2 for v in values) / (n - 1)
    return Sample(n, mean, math.sqrt(var))


def t_quantile(p: float, df: float) -> float:
    from scipy import stats

    return float(stats.t.ppf(p, df))


def z_quantile(p: float) -> float:
    from scipy import stats

    return float(stats.norm.ppf(p))


@dataclass(frozen=True)
class Threshold:
    sigma: float
    sigma_source: str
    se: float
    k: float
    value: float
    source: str


def noise_sigma(base: Sample, new: Sample, floor: float | None) -> tuple[float, str] | None:
    """σ from replicate seeds (pooled) where there are any, else the configured floor."""
    parts = [(s.n - 1, s.sd) for s in (base, new) if s.sd is not None and s.n >= 2]
    if parts:
        dof = sum(d for d, _ in parts)
        pooled = math.sqrt(sum(d * sd * sd for d, sd in parts) / dof)
        if floor is not None and pooled < floor:
            return (
                floor,
                f"configured noise_floor {floor:g} (replicates gave σ={pooled:.4g}, lower)",
            )
        return pooled, f"pooled σ of replicate seeds (df={dof})"
    if floor is not None:
        return floor, f"configured noise_floor {floor:g} (no replicates)"
    return None


def threshold(
    base: Sample,
    new: Sample,
    *,
    floor: float | None,
    sigma_k: float,
    alpha: float,
    small_n: int,
    n_eff_base: float | None = None,
    n_eff_new: float | None = None,
) -> Threshold | None:
    """Δ must exceed k·SE; k = sigma_k, or the Student-t quantile when n is small."""
    found = noise_sigma(base, new, floor)
    if found is None:
        return None
    sigma, sigma_source = found
    nb = n_eff_base if n_eff_base is not None else base.n
    nn = n_eff_new if n_eff_new is not None else new.n
    se = sigma * math.sqrt(1.0 / nb + 1.0 / nn)
    dof = nb + nn - 2
    measured = "replicate" in sigma_source and "configured" not in sigma_source
    if measured and dof >= 1 and dof < small_n:
        t = t_quantile(1 - alpha / 2, dof)
        if t > sigma_k:
            return Threshold(
                sigma,
                sigma_source,
                se,
                t,
                t * se,
                f"Student-t q{1 - alpha / 2:g}(df={dof:g})={t:.3f} × SE (small n)",
            )
    return Threshold(sigma, sigma_source, se, sigma_k, sigma_k * se, f"sigma_k={sigma_k:g} × SE")


def mde(sigma: float, n_eff: float, alpha: float, power: float, small_n: int) -> float:
    """Minimum detectable effect: (q_{1-α/2} + q_{power})·σ·sqrt(2/n_eff)."""
    dof = 2 * n_eff - 2
    if 1 <= dof < small_n:
        q = t_quantile(1 - alpha / 2, dof) + t_quantile(power, dof)
    else:
        q = z_quantile(1 - alpha / 2) + z_quantile(power)
    return q * sigma * math.sqrt(2.0 / max(n_eff, 1e-9))


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


def rule_sigma(m: int, table: dict[str, float]) -> float | None:
    """The documented default rule: the k of the smallest listed cell count ≥ m."""
    fitting = sorted((int(n), k) for n, k in table.items() if int(n) >= m)
    return fitting[0][1] if fitting else None


def holm_ks(m: int, alpha: float) -> list[float]:
    """Holm step-down critical z values for m two-sided comparisons (largest first)."""
    return [z_quantile(1 - alpha / (2 * (m - i))) for i in range(m)]


def adjusted_passes(
    zs: dict[str, float], alpha: float, table: dict[str, float]
) -> dict[str, tuple[float, bool]]:
    """Per cell: the adjusted k and whether it passes (Holm step-down, floored by the rule)."""
    m = len(zs)
    if m == 0:
        return {}
    floor = rule_sigma(m, table) or 0.0
    ks = holm_ks(m, alpha)
    out: dict[str, tuple[float, bool]] = {}
    still = True
    for i, (name, z) in enumerate(sorted(zs.items(), key=lambda kv: -kv[1])):
        k = max(floor, ks[i])
        passed = still and z > k
        still = passed
        out[name] = (k, passed)
    return out
