"""The standard-library distributions (ledger.core.distributions) against scipy.

scipy is the oracle only: the package never imports it. Every function the
statistics use is compared on a grid of degrees of freedom (1 to 1000, and a few
fractional ones, as walk-forward windows give), the alphas a gate may configure,
and noncentralities and powers around the ones an MDE needs, to 1e-9 relative.
The implementation reaches about 1e-12 on this grid; 1e-9 leaves room for the
oracle's own error (scipy's quadrature below, and its Student-t near df = 1e6).
"""

from __future__ import annotations

import itertools
import math
import subprocess
import sys
from pathlib import Path

import pytest

from ledger.core import distributions

scipy_stats = pytest.importorskip("scipy.stats")
scipy_integrate = pytest.importorskip("scipy.integrate")

ROOT = Path(__file__).resolve().parent.parent
TOL = 1e-9
DFS = [1.0, 2.0, 3.0, 4.0, 5.0, 7.0, 10.0, 17.0, 30.0, 100.0, 250.0, 1000.0]
FRACTIONAL = [1.5, 2.105, 7.391]  # Satterthwaite dfs of overlapping windows
ALPHAS = [0.001, 0.01, 0.05, 0.1, 0.2]
POWERS = [0.5, 0.8, 0.95, 0.99]


def close(mine: float, oracle: float, tol: float = TOL) -> bool:
    return abs(mine - oracle) <= tol * abs(oracle)


@pytest.mark.parametrize("df", DFS + FRACTIONAL)
def test_t_quantile_matches_scipy(df: float) -> None:
    ps = [p for a in ALPHAS for p in (1 - a / 2, a / 2, 1 - a)]
    ps += [1 - 0.05 / (2 * m) for m in range(2, 9)]  # Holm's step-down over matrix cells
    ps += [0.975, 0.6, 0.3]  # compare's 95% interval; the central part
    bad = [
        (p, got, want)
        for p in ps
        if not close(
            got := distributions.t_quantile(p, df), want := float(scipy_stats.t.ppf(p, df))
        )
    ]
    assert not bad, bad


@pytest.mark.parametrize("df", DFS + FRACTIONAL)
def test_t_tails_match_scipy(df: float) -> None:
    ts = [0.0, 1e-6, 0.1, 0.5, 1.0, 1.7, 2.0, 3.0, 5.0, 10.0, 40.0, 1e3, 1e6]
    bad = [
        (t, got, want)
        for t in ts + [-t for t in ts]
        if not close(got := distributions.t_sf(t, df), want := float(scipy_stats.t.sf(t, df)))
        or not close(distributions.t_cdf(t, df), float(scipy_stats.t.cdf(t, df)))
    ]
    assert not bad, bad


def test_z_quantile_matches_scipy() -> None:
    ps = [p for a in ALPHAS for p in (1 - a / 2, a / 2)] + POWERS + [1e-12, 0.3]
    for p in ps:
        assert close(distributions.z_quantile(p), float(scipy_stats.norm.ppf(p))), p


def oracle_assurance(nc: float, k: float, df: float) -> float:
    """The assurance as the code had it with scipy: Student-t's noncentral tail averaged
    over the chi distribution of s/σ, by adaptive quadrature, split where the integrand
    turns (the chi mode, where nc·a/√df crosses k) for the quadrature's sake."""

    def integrand(a: float) -> float:
        return float(scipy_stats.nct.sf(k, df, nc * a / math.sqrt(df)) * scipy_stats.chi.pdf(a, df))

    mode = math.sqrt(max(df - 1.0, 0.0))
    top = mode + 10.0
    cuts = {0.0, max(mode - 8.0, 0.0), mode, top}
    if nc > 0 and k * math.sqrt(df) / nc < top:
        cuts.add(k * math.sqrt(df) / nc)
    edges = [*sorted(cuts), math.inf]
    parts = [
        scipy_integrate.quad(integrand, lo, hi, epsabs=1e-16, epsrel=1e-13, limit=500)[0]
        for lo, hi in itertools.pairwise(edges)
    ]
    return math.fsum(parts)


@pytest.mark.filterwarnings("ignore")  # scipy's quadrature and nct warn on far tails
@pytest.mark.parametrize("df", [1.0, 2.0, 3.0, 5.0, 10.0, 30.0, 100.0, 1000.0, 2.105])
def test_assurance_matches_scipy(df: float) -> None:
    bad = []
    for alpha in ALPHAS:
        k = distributions.t_quantile(1 - alpha / 2, df)
        for nc in (0.0, 0.5 * k, k + 0.84, 3 * (k + 0.84)):
            got, want = distributions.assurance(nc, k, df), oracle_assurance(nc, k, df)
            if not close(got, want):
                bad.append((alpha, nc, got, want))
    assert not bad, bad


@pytest.mark.parametrize("df", [0.5, 1.0, 2.0, 30.0, 1000.0])
def test_assurance_is_one_half_at_nc_equal_to_k(df: float) -> None:
    """An exact identity where the oracle cannot follow: at nc = k the event
    √df·Z + k·(A − B) > 0 is symmetric, so its probability is 1/2 whatever k. (For
    df 0.5 at alpha 0.001, k ≈ 4e5, scipy's nct gives 0.48 here, so that corner is
    left out of the grids above.)"""
    for k in (0.3, 2.0, 12.7, 636.6, 4.1e5):
        assert abs(distributions.assurance(k, k, df) - 0.5) < 1e-12, k


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("df", [1.0, 2.0, 3.0, 5.0, 10.0, 30.0, 100.0, 1000.0, 7.391])
def test_power_nc_matches_scipy(df: float) -> None:
    """The noncentrality solves the oracle's assurance = power: the oracle's miss,
    divided by the slope there, is the relative error of nc."""
    bad = []
    for alpha, power in [(a, 0.8) for a in ALPHAS] + [(0.05, p) for p in POWERS if p != 0.8]:
        k = distributions.t_quantile(1 - alpha / 2, df)
        nc = distributions.power_nc(k, df, power)
        _, slope = distributions._assurance(nc, k, df)
        error = abs(oracle_assurance(nc, k, df) - power) / (slope * nc)
        if error > TOL:
            bad.append((alpha, power, nc, error))
    assert not bad, bad


def test_power_nc_with_a_known_sigma_is_the_normal_answer() -> None:
    for k in (1.0, 2.0, 3.3):
        for power in POWERS:
            want = k + float(scipy_stats.norm.ppf(power))
            assert close(distributions.power_nc(k, None, power), want)


def test_the_statistics_import_no_scipy() -> None:
    """A verb that computes an MDE pays for no scipy (it used to cost about a second)."""
    probe = (
        "import sys; from ledger.core import stats;"
        "stats.mde(1.0, 5, 0.05, 0.8, 30); stats.holm_ks(3, 0.05);"
        "print(any(m.split('.')[0] in ('scipy', 'numpy') for m in sys.modules))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "False"
