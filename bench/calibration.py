"""Calibration of the verdict statistics by simulation (seeded, deterministic).

Every simulated version goes through the same functions the verdict uses
(ledger.stats.compare_keyed, compare_windows, adjusted_passes); numpy only
draws the data. Prints, per design, the rate at which a version with no true
effect is confirmed, the rate at an effect equal to the reported MDE, and for
matrices the family-wise false-winner rate.

    python -m bench.calibration [--sims 1000]
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from datetime import date, timedelta

import numpy as np

from ledger import stats

ALPHA = 0.05
POWER = 0.8
SIGMA_K = 2.0
SMALL_N = 30


@dataclass(frozen=True)
class Rates:
    design: str
    sims: int
    null_confirmed: float
    mde: float
    mde_confirmed: float
    reported_mde: float
    reported_mde_confirmed: float
    unpaired_mde: float | None = None


def _keyed(values: np.ndarray) -> dict[str, float]:
    return {str(i + 1): float(v) for i, v in enumerate(values)}


def _paired_draws(
    rng: np.random.Generator, sims: int, n: int, delta: float, split_sd: float, noise_sd: float
) -> tuple[np.ndarray, np.ndarray]:
    """Baseline and version per seed; both share the seed's split (split_sd)."""
    split = rng.normal(0.0, split_sd, (sims, n))
    base = 10.0 + split + rng.normal(0.0, noise_sd, (sims, n))
    new = 10.0 + delta + split + rng.normal(0.0, noise_sd, (sims, n))
    return base, new


def _confirmed_seeds(base: np.ndarray, new: np.ndarray) -> tuple[float, float]:
    """(confirmed rate, median MDE the evidence reported)."""
    hits = 0
    mdes = []
    for b, v in zip(base, new, strict=True):
        found = stats.compare_keyed(
            _keyed(b),
            _keyed(v),
            sign=1.0,
            floor=None,
            sigma_k=SIGMA_K,
            alpha=ALPHA,
            power=POWER,
            small_n=SMALL_N,
        )
        hits += found is not None and found.outcome == stats.IMPROVED
        if found is not None and found.mde is not None:
            mdes.append(found.mde)
    return hits / len(base), float(np.median(mdes))


def paired_seeds(sims: int = 1000, n: int = 5, seed: int = 17) -> Rates:
    """Seeds sharing a split: the split's variance dominates, the eval's own noise is small."""
    rng = np.random.default_rng(seed)
    split_sd, noise_sd = 1.0, 0.3
    base, new = _paired_draws(rng, sims, n, 0.0, split_sd, noise_sd)
    null, reported = _confirmed_seeds(base, new)
    sd_diff = noise_sd * np.sqrt(2.0)
    mde = stats.mde(sd_diff, n, ALPHA, POWER, SMALL_N, sigma_k=SIGMA_K, paired=True)
    sd_each = float(np.hypot(split_sd, noise_sd))
    unpaired = stats.mde(sd_each, n, ALPHA, POWER, SMALL_N, sigma_k=SIGMA_K, paired=False)
    at_mde = _confirmed_seeds(*_paired_draws(rng, sims, n, mde, split_sd, noise_sd))[0]
    at_reported = _confirmed_seeds(*_paired_draws(rng, sims, n, reported, split_sd, noise_sd))[0]
    return Rates(f"paired seeds (n={n})", sims, null, mde, at_mde, reported, at_reported, unpaired)


def _windows(n: int, length: int, step: int) -> list[tuple[date, date]]:
    start = date(2020, 1, 1)
    return [
        (start + timedelta(days=i * step), start + timedelta(days=i * step + length))
        for i in range(n)
    ]


def walk_forward(
    sims: int = 1000, n: int = 12, length: int = 90, step: int = 45, seed: int = 18
) -> Rates:
    """Overlapping windows: each window's Δ is the mean of daily Δ over its span, so
    windows that share days are correlated exactly as their overlap says."""
    rng = np.random.default_rng(seed)
    spans = _windows(n, length, step)
    design = stats.window_design(spans, n)
    n_eff = design.n_eff
    days = (n - 1) * step + length
    daily_sd = 3.0
    sigma_window = daily_sd / np.sqrt(length)

    def gains(delta: float) -> np.ndarray:
        daily = rng.normal(delta, daily_sd, (sims, days))
        c = np.concatenate([np.zeros((sims, 1)), np.cumsum(daily, axis=1)], axis=1)
        starts = np.arange(n) * step
        return (c[:, starts + length] - c[:, starts]) / length

    def rate(g: np.ndarray) -> tuple[float, float]:
        hits = 0
        mdes = []
        for row in g:
            found = stats.compare_windows(
                [float(x) for x in row],
                design,
                sign=1.0,
                bar={"mean": 0.0},
                sigma_k=SIGMA_K,
                alpha=ALPHA,
                power=POWER,
                small_n=SMALL_N,
            )
            hits += found.outcome == stats.IMPROVED
            if found.mde is not None:
                mdes.append(found.mde)
        return hits / len(g), float(np.median(mdes))

    null, reported = rate(gains(0.0))
    se = float(sigma_window) / np.sqrt(n_eff)
    mde = stats.mde_for_se(
        float(se), design.df, sigma_k=SIGMA_K, alpha=ALPHA, power=POWER, small_n=SMALL_N
    )
    return Rates(
        f"walk-forward ({n} windows of {length}d every {step}d, n_eff={n_eff:.2f})",
        sims,
        null,
        mde,
        rate(gains(mde))[0],
        reported,
        rate(gains(reported))[0],
    )


def matrix(cells: int, sims: int = 1000, n: int = 5, seed: int = 19) -> float:
    """Family-wise false-winner rate: no cell has an effect, all share the baseline and
    its seeds; a false winner is any cell the adjusted rule lets win."""
    rng = np.random.default_rng(seed + cells)
    split_sd, noise_sd = 1.0, 0.3
    split = rng.normal(0.0, split_sd, (sims, 1, n))
    base = 10.0 + split[:, 0, :] + rng.normal(0.0, noise_sd, (sims, n))
    arms = 10.0 + split + rng.normal(0.0, noise_sd, (sims, cells, n))
    false = 0
    for s in range(sims):
        zs: dict[str, float] = {}
        dfs: dict[str, float | None] = {}
        for c in range(cells):
            found = stats.compare_keyed(
                _keyed(base[s]),
                _keyed(arms[s, c]),
                sign=1.0,
                floor=None,
                sigma_k=SIGMA_K,
                alpha=ALPHA,
                power=POWER,
                small_n=SMALL_N,
            )
            if found is not None and found.se:
                zs[chr(65 + c)] = found.gain / found.se
                dfs[chr(65 + c)] = found.df
        passes = stats.adjusted_passes(
            zs, ALPHA, {"3": 2.5, "5": 3.0}, sigma_k=SIGMA_K, small_n=SMALL_N, dfs=dfs, m=cells
        )
        false += any(passed for _, passed in passes.values())
    return false / sims


def report(sims: int = 1000) -> list[str]:
    lines = []
    for r in (paired_seeds(sims), walk_forward(sims)):
        lines.append(
            f"{r.design}: {r.sims} versions; no effect → confirmed {r.null_confirmed:.1%}; "
            f"effect = MDE at the true σ {r.mde:.4g} → confirmed {r.mde_confirmed:.1%}; "
            f"effect = median MDE the evidence reported {r.reported_mde:.4g} → confirmed "
            f"{r.reported_mde_confirmed:.1%}"
            + (f" (unpaired MDE would be {r.unpaired_mde:.4g})" if r.unpaired_mde else "")
        )
    for cells in (3, 5, 8):
        lines.append(
            f"matrix of {cells} cells: {sims} matrices with no effect → "
            f"family-wise false winner {matrix(cells, sims):.1%}"
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sims", type=int, default=1000)
    args = parser.parse_args()
    for line in report(args.sims):
        print(line)


if __name__ == "__main__":
    main()
