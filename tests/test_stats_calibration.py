"""Calibration of the verdicts (seeded, deterministic, fast).

The simulations live in bench/calibration.py: every simulated version is a
ledger state judged by the code ``conclude`` and ``matrix conclude`` run. The
figures are printed in the run's "figures" section (and by
``python -m bench.calibration``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from datetime import date, timedelta

import pytest

from bench import calibration
from ledger.core import stats

SIMS = 1000


def test_paired_seeds_sharing_a_split_are_calibrated(figure: Callable[[str], None]) -> None:
    r = calibration.paired_seeds(SIMS)
    figure(
        f"calibration: {r.design}: no effect confirmed {r.null_confirmed:.1%}; at MDE {r.mde:.4g} "
        f"{r.mde_confirmed:.1%}; at the reported MDE {r.reported_mde:.4g} "
        f"{r.reported_mde_confirmed:.1%}; unpaired MDE {r.unpaired_mde:.4g}"
    )
    assert r.null_confirmed <= 0.05
    assert r.mde_confirmed >= 0.80
    assert r.reported_mde_confirmed >= 0.80
    # Sharing the split, pairing removes its variance: the MDE is far below the pooled one.
    assert r.unpaired_mde is not None and r.mde < r.unpaired_mde / 2


@pytest.mark.parametrize(
    ("windows", "length", "step"),
    [(12, 90, 45), (5, 90, 15)],  # half overlapping; the issue's five windows (n_eff ≈ 1.37)
)
def test_walk_forward_with_overlapping_windows_is_calibrated_on_n_eff(
    windows: int, length: int, step: int, figure: Callable[[str], None]
) -> None:
    r = calibration.walk_forward(SIMS, n=windows, length=length, step=step)
    figure(
        f"calibration: {r.design}: no effect confirmed {r.null_confirmed:.1%}; at MDE {r.mde:.4g} "
        f"{r.mde_confirmed:.1%}; at the reported MDE {r.reported_mde:.4g} "
        f"{r.reported_mde_confirmed:.1%}"
    )
    assert r.null_confirmed <= 0.05
    assert r.mde_confirmed >= 0.80
    assert r.reported_mde_confirmed >= 0.80


@pytest.mark.parametrize("cells", [3, 5, 8])
def test_matrix_family_wise_false_winner_rate(cells: int, figure: Callable[[str], None]) -> None:
    rate = calibration.matrix(cells, SIMS)
    figure(f"calibration: matrix of {cells} cells, no effect: family-wise false winner {rate:.1%}")
    assert rate <= 0.05


def test_matrix_thresholds_never_fall_as_cells_are_added() -> None:
    table = {"3": 2.5, "5": 3.0}
    previous = 0.0
    for m in range(2, 13):
        for df in (None, 4.0, 50.0):
            ks = stats.matrix_ks(m, df, alpha=0.05, sigma_k=2.0, small_n=30, table=table)
            single, _ = stats.critical_k(df, sigma_k=2.0, alpha=0.05, small_n=30)
            assert min(ks) >= single
            assert min(ks) >= (2.5 if m <= 3 else 3.0)
        lowest = min(stats.matrix_ks(m, None, alpha=0.05, sigma_k=2.0, small_n=30, table=table))
        assert lowest >= previous
        previous = lowest


def test_the_issue_walk_forward_arc_is_not_accepted_on_nominal_n() -> None:
    """Five 90-day windows offset by 15 days: n_eff ≈ 1.37; Δ=+2.2 with a spread of ~80
    must not be 'improved' on nominal n."""
    start = date(2024, 1, 1)
    spans = [
        (start + timedelta(days=15 * i), start + timedelta(days=15 * i + 90)) for i in range(5)
    ]
    design = stats.window_design(spans, 5)
    assert design.n_eff == pytest.approx(stats.effective_n(spans))
    assert 1.3 < design.n_eff < 1.45
    gains = [90.0, -80.0, 60.0, -50.0, -9.0]
    found = stats.compare_windows(
        gains, design, sign=1.0, bar={"mean": 0.0}, sigma_k=2.0, alpha=0.05, power=0.8, small_n=30
    )
    assert found.outcome != stats.IMPROVED
    assert found.se is None or found.se > 80 / math.sqrt(5)


def test_paired_when_seeds_are_shared_unpaired_when_none_or_off() -> None:
    base = {"1": 10.0, "2": 12.0, "3": 8.0, "4": 11.0}
    new = {k: v + 0.5 + 0.01 * i for i, (k, v) in enumerate(base.items())}
    kw = {"sign": 1.0, "floor": None, "sigma_k": 2.0, "alpha": 0.05, "power": 0.8, "small_n": 30}
    paired = stats.compare_keyed(base, new, **kw)  # type: ignore[arg-type]
    assert paired is not None and paired.pairing == "paired" and paired.outcome == stats.IMPROVED
    assert paired.df == 3
    off = stats.compare_keyed(base, new, pairing="off", **kw)  # type: ignore[arg-type]
    assert off is not None and off.pairing == "unpaired" and off.outcome == stats.NOISE
    disjoint = stats.compare_keyed(base, {f"x{k}": v for k, v in new.items()}, **kw)  # type: ignore[arg-type]
    assert disjoint is not None and disjoint.pairing == "unpaired"
    assert paired.mde is not None and off.mde is not None and paired.mde < off.mde


def test_statistics_are_finite_for_huge_values() -> None:
    s = stats.sample([1e300, -1e300, 5e299])
    assert math.isfinite(s.mean) and s.sd is not None and math.isfinite(s.sd)
    kw = {"sign": 1.0, "floor": None, "sigma_k": 2.0, "alpha": 0.05, "power": 0.8, "small_n": 30}
    found = stats.compare_keyed({"1": 1e149, "2": -1e149}, {"1": 1e149, "2": 1e149}, **kw)  # type: ignore[arg-type]
    assert found is not None
    assert all(math.isfinite(x) for x in (found.delta, found.se or 0, found.threshold or 0))


def test_walk_forward_needs_the_pre_registered_bar_and_the_threshold() -> None:
    design = stats.window_design(None, 8)
    kw = {"sign": 1.0, "sigma_k": 2.0, "alpha": 0.05, "power": 0.8, "small_n": 30}
    gains = [5.0, 6.0, 4.5, 5.5, 6.5, 5.0, 4.0, -1.0]
    passes = stats.compare_windows(gains, design, bar={"mean": 0.0}, **kw)  # type: ignore[arg-type]
    assert passes.outcome == stats.IMPROVED
    short_min = stats.compare_windows(gains, design, bar={"mean": 0.0, "min": 0.0}, **kw)  # type: ignore[arg-type]
    assert short_min.outcome == stats.NOISE and "min Δ -1 < 0" in short_min.note
    short_p25 = stats.compare_windows(gains, design, bar={"p25": 4.9}, **kw)  # type: ignore[arg-type]
    assert short_p25.outcome == stats.NOISE and "p25" in short_p25.note
    small = [0.1, -0.1, 0.2, 0.0, 0.1, 0.05, -0.05, 0.1]
    within = stats.compare_windows(small, design, bar={"mean": 0.0, "min": -1.0}, **kw)  # type: ignore[arg-type]
    assert within.outcome == stats.NOISE and "within" in within.note
