"""The three distributions the statistics need, from the standard library.

A normal quantile (:class:`statistics.NormalDist`), a Student-t quantile, and
the noncentrality at which a rule reaches a given power. They used to be asked
of scipy, whose import cost about a second, and a cross-process memo of its
answers made up for that (a second program, STYLE.md habit 14); these are a
few hundred lines of documented numerics instead, checked against scipy to 1e-9
relative by tests/test_distributions_oracle.py (scipy is a test-only oracle).
The pure statistics that use them are in :mod:`ledger.core.stats`.

Methods:

- Student-t tails through the regularized incomplete beta function,
  ``P(T > t) = I_x(df/2, 1/2) / 2`` with ``x = df / (df + t²)``, whose
  continued fraction is evaluated by the modified Lentz algorithm (Numerical
  Recipes, 3rd ed., §6.4 and §5.2), on the side of the symmetry
  ``I_x(a, b) = 1 - I_{1-x}(b, a)`` where it converges.
- Student-t quantiles by Newton's method on the logarithm of the tail (or of
  the central part near the median), each step kept inside a bracket and
  replaced by bisection when it leaves it; exact closed forms start df 1 and 2,
  the Cornish-Fisher expansion (Abramowitz & Stegun 26.7.5) the others.
- Power by assurance (see :func:`power_nc`) through an exact reduction of the
  three-variable integral to one dimension, integrated by the tanh-sinh rule
  (Takahasi & Mori 1974), and solved for the noncentrality by safeguarded
  Newton.
"""

from __future__ import annotations

import math
from functools import lru_cache
from statistics import NormalDist

_EPS = 2.220446049250313e-16
_TINY = 1e-300
_NORMAL = NormalDist()


def _stirling_tail(x: float) -> float:
    """log Γ(x) - ((x - 1/2) log x - x + log(2π)/2), x >= 15 (the Stirling series,
    A&S 6.1.41, to x⁻⁹: the next term is below 3e-16 there)."""
    r = 1.0 / (x * x)
    return (1 / 12 - r * (1 / 360 - r * (1 / 1260 - r * (1 / 1680 - r / 1188)))) / x


def _lbeta(a: float, b: float) -> float:
    """log B(a, b). lgamma's own rounding, of the size of log Γ itself, would cost
    about df·1e-16 relative at large df; the Stirling series keeps the large
    parts of log Γ(a) and log Γ(a + b) from being formed only to cancel."""
    small, big = min(a, b), max(a, b)
    if big < 15.0:
        return math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b)
    total = small + big
    # (big - 1/2) log(big / total), with log(big / total) = -log1p(small / big)
    shared = -(big - 0.5) * math.log1p(small / big) + _stirling_tail(big) - _stirling_tail(total)
    if small < 15.0:  # log Γ(small) as it is; log Γ(big) - log Γ(total) by Stirling
        return math.lgamma(small) + shared - small * math.log(total) + small
    return (
        0.5 * math.log(2.0 * math.pi)
        + shared
        + (small - 0.5) * math.log(small / total)
        - 0.5 * math.log(total)
        + _stirling_tail(small)
    )


def _beta_cf(a: float, b: float, x: float) -> float:
    """The continued fraction of I_x(a, b) (modified Lentz); converges fast for
    x < (a + 1) / (a + b + 2)."""
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > _TINY else _TINY)
    h = d
    for m in range(1, 100_000):
        m2 = 2 * m
        for aa in (
            m * (b - m) * x / ((qam + m2) * (a + m2)),
            -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2)),
        ):
            d = 1.0 + aa * d
            d = 1.0 / (d if abs(d) > _TINY else _TINY)
            c = 1.0 + aa / c
            c = c if abs(c) > _TINY else _TINY
            step = d * c
            h *= step
        if abs(step - 1.0) <= _EPS:
            return h
    raise ArithmeticError(f"incomplete beta did not converge (a={a}, b={b}, x={x})")


def _ibeta(
    a: float, b: float, x: float, y: float, log_x: float, log_y: float
) -> tuple[float, float]:
    """(I_x(a, b), I_y(b, a)) with y = 1 - x and both logarithms given exactly:
    the two sides of the regularized incomplete beta function, the one the
    continued fraction gives to full relative precision and the other by complement."""
    if x <= 0.0:
        return 0.0, 1.0
    if y <= 0.0:
        return 1.0, 0.0
    front = math.exp(a * log_x + b * log_y - _lbeta(a, b))
    if x < (a + 1.0) / (a + b + 2.0):
        lower = front * _beta_cf(a, b, x) / a
        return lower, 1.0 - lower
    upper = front * _beta_cf(b, a, y) / b
    return 1.0 - upper, upper


def _t_parts(t: float, df: float) -> tuple[float, float]:
    """For t >= 0: (P(T > t), P(0 < T < t)), each to full relative precision
    where it is the smaller; they sum to 1/2."""
    r = t / math.sqrt(df)
    if r > 1e150:
        x, y, log_x, log_y = 1.0 / r / r, 1.0, -2.0 * math.log(r), 0.0
    elif r == 0.0:
        return 0.5, 0.0
    else:
        r2 = r * r
        x, y = 1.0 / (1.0 + r2), r2 / (1.0 + r2)
        log_x = -math.log1p(r2)
        log_y = 2.0 * math.log(r) + log_x
    tail, central = _ibeta(df / 2.0, 0.5, x, y, log_x, log_y)
    return tail / 2.0, central / 2.0


def t_sf(t: float, df: float) -> float:
    """P(T > t) for Student's t with ``df`` degrees of freedom."""
    if t >= 0:
        return _t_parts(t, df)[0]
    tail, central = _t_parts(-t, df)
    return 0.5 + central if central < tail else 1.0 - tail


def t_cdf(t: float, df: float) -> float:
    """P(T <= t) for Student's t with ``df`` degrees of freedom."""
    return t_sf(-t, df)


def t_pdf(t: float, df: float) -> float:
    return math.exp(
        -(df + 1.0) / 2.0 * math.log1p(t * t / df) - 0.5 * math.log(df) - _lbeta(df / 2.0, 0.5)
    )


def _t_guess(q: float, df: float) -> float:
    """A start for t > 0 with P(T > t) = q < 1/2: exact for df 1 and 2, else
    Cornish-Fisher about the normal quantile (A&S 26.7.5)."""
    if df == 1.0:
        return 1.0 / math.tan(math.pi * q)
    if df == 2.0:
        return (1.0 - 2.0 * q) / math.sqrt(2.0 * q * (1.0 - q))
    z = -_NORMAL.inv_cdf(q)
    z2 = z * z
    g1 = (z2 + 1.0) * z / 4.0
    g2 = ((5.0 * z2 + 16.0) * z2 + 3.0) * z / 96.0
    g3 = (((3.0 * z2 + 19.0) * z2 + 17.0) * z2 - 15.0) * z / 384.0
    g4 = ((((79.0 * z2 + 776.0) * z2 + 1482.0) * z2 - 1920.0) * z2 - 945.0) * z / 92160.0
    guess = z + g1 / df + g2 / df**2 + g3 / df**3 + g4 / df**4
    return guess if math.isfinite(guess) and guess > 0 else z


def _t_isf(q: float, df: float) -> float:
    """The t > 0 with P(T > t) = q, 0 < q < 1/2.

    Newton on log P(T > t) (or, for q >= 1/4, on log P(0 < T < t), whose target
    1/2 - q is exact there) converges in a few steps from the start; a step that
    leaves the bracket [lo, hi] known from the signs seen so far is replaced by
    bisection, and hi doubles until it is known.
    """
    tail = q < 0.25
    target = math.log(q if tail else 0.5 - q)
    lo, hi = 0.0, math.inf
    t = _t_guess(q, df)
    for _ in range(400):
        parts = _t_parts(t, df)
        value = parts[0] if tail else parts[1]
        if value <= 0.0:  # far beyond anything a double holds: come back
            hi = t
            t = (lo + hi) / 2.0
            continue
        gap = math.log(value) - target
        if gap == 0.0:
            return t
        if (gap > 0.0) == tail:
            lo = t
        else:
            hi = t
        slope = t_pdf(t, df) / value  # d(log value)/dt, up to sign
        new = t + (gap / slope if tail else -gap / slope)
        if not lo < new < hi:
            new = 2.0 * t if math.isinf(hi) else (lo + hi) / 2.0
        if abs(new - t) <= 4.0 * _EPS * new:
            return new
        t = new
    raise ArithmeticError(f"t quantile did not converge (q={q}, df={df})")


@lru_cache(maxsize=1024)
def t_quantile(p: float, df: float) -> float:
    """The p-quantile of Student's t with ``df`` > 0 degrees of freedom."""
    if math.isnan(p) or math.isnan(df) or df <= 0 or not 0.0 <= p <= 1.0:
        return math.nan
    if p in (0.0, 1.0):
        return math.inf if p else -math.inf
    if p == 0.5:
        return 0.0
    if p > 0.5:
        return _t_isf(1.0 - p, df)  # 1 - p is exact for p >= 1/2 (Sterbenz)
    return -_t_isf(p, df)


@lru_cache(maxsize=1024)
def z_quantile(p: float) -> float:
    """The p-quantile of the standard normal (Wichura's AS 241, in the standard library)."""
    if not 0.0 < p < 1.0:
        return math.nan if not 0.0 <= p <= 1.0 else (math.inf if p else -math.inf)
    return _NORMAL.inv_cdf(p)


# --- power by assurance -------------------------------------------------------------


@lru_cache(maxsize=16)
def _tanh_sinh(h: float, span: float) -> tuple[tuple[float, float, float], ...]:
    """Tanh-sinh nodes on [0, 1] as (offset from 0, offset from 1, weight).

    Both offsets are computed directly, so a node close to either end keeps its
    distance to it; the rule is truncated where the offsets fall below 1e-300.
    """
    nodes = []
    j = 0
    while True:
        s = j * h
        u = math.pi / 2.0 * math.sinh(s)
        weight = h * math.pi / 4.0 * math.cosh(s) / math.cosh(u) ** 2 if u < 350 else 0.0
        near = 1.0 / (1.0 + math.exp(2.0 * u)) if u < 350 else 0.0
        if near < _TINY or s > span:
            break
        far = 1.0 / (1.0 + math.exp(-2.0 * u))
        nodes.append((far, near, weight))
        if j:
            nodes.append((near, far, weight))
        j += 1
    return tuple(nodes)


def _log_sin2(theta: float, a: float, b: float, from_a: float, from_b: float) -> float:
    """log sin 2θ for a node of [a, b] in [0, π/2], ``from_a``/``from_b`` its exact
    distances to the ends: 1 - 2 sin²(θ - π/4) near the mode, sin 2d near an end
    at distance d (where p may be singular, df < 1), so neither rounds to 0 or 1."""
    mid = 2.0 * math.sin(theta - math.pi / 4) ** 2
    if mid < 0.5:
        return math.log1p(-mid)
    edge = min(theta, math.pi / 2 - theta)
    if a == 0.0 and from_a < from_b:
        edge = from_a
    elif b == math.pi / 2 and from_b < from_a:
        edge = from_b
    return math.log(math.sin(2.0 * edge)) if edge > 0.0 else -math.inf


def assurance(nc: float, k: float, df: float) -> float:
    """P(Δ/SE > k), averaged over σ's sampling distribution; see :func:`power_nc`."""
    return _assurance(nc, k, df)[0]


def _assurance(nc: float, k: float, df: float) -> tuple[float, float]:
    """The assurance at ``nc`` and its derivative in ``nc``.

    With Z standard normal and A, B independent chi variables with ``df`` degrees
    of freedom, the assurance is P(√df·Z + nc·A − k·B > 0). Write (A, B) in polar
    coordinates, A = R cos θ, B = R sin θ: R is chi with 2·df degrees of freedom,
    independent of θ, and cos²θ is Beta(df/2, df/2) distributed, so θ has the
    density p(θ) = sin(2θ)^(df−1) · 2^(2−df) / B(df/2, df/2) on (0, π/2). Given
    θ the event is √2·Z/(R/√(2·df)) > −√2·ρ·sin(θ0 − θ), with ρ = |(nc, k)| and
    θ0 = atan(nc/k), and Z/(R/√(2df)) is Student's t with 2·df degrees of freedom.
    So, with S the tail of that t,

        assurance = P(θ < θ0) − ∫₀^θ0 S(√2ρ sin(θ0−θ)) p dθ + ∫_θ0^π/2 S(√2ρ sin(θ−θ0)) p dθ,

    P(θ < θ0) = I_{sin²θ0}(df/2, df/2), and both integrands are smooth, positive
    and largest at θ0. The integrals are split at the mode π/4 of p, so that each
    feature (the mode, the step at θ0, the ends where p may be singular for df < 1)
    sits at an end of an interval, where the tanh-sinh rule puts its nodes.
    """
    rho = math.hypot(nc, k)
    theta0 = math.atan2(nc, k)
    half = df / 2.0
    log_norm = (2.0 - df) * math.log(2.0) - _lbeta(half, half)
    s0 = nc / rho
    c0 = k / rho
    total = (
        _ibeta(half, half, s0 * s0, c0 * c0, 2.0 * math.log(s0), 2.0 * math.log(c0))[0]
        if nc > 0
        else 0.0
    )
    # (start, end, sign): the left of θ0 is subtracted, the right added
    quarter = math.pi / 4
    if theta0 <= quarter:
        parts = [(0.0, theta0, -1.0), (theta0, quarter, 1.0), (quarter, math.pi / 2, 1.0)]
    else:
        parts = [(0.0, quarter, -1.0), (quarter, theta0, -1.0), (theta0, math.pi / 2, 1.0)]
    terms = [total]
    slopes = []
    for a, b, sign in parts:
        width = b - a
        if width <= 0.0:
            continue
        for from_a, from_b, w in _tanh_sinh(1.0 / 32.0, 4.5):
            theta = a + width * from_a if from_a < from_b else b - width * from_b
            log_p = log_norm + (df - 1.0) * _log_sin2(theta, a, b, width * from_a, width * from_b)
            mass = w * width * math.exp(log_p) if -745.0 < log_p < 709.0 else 0.0
            if mass < 1e-20:  # the integrands are at most 1/2
                continue
            # the distance to θ0, exact where θ0 is this interval's end
            gap = width * from_a if a == theta0 else width * from_b if b == theta0 else 0.0
            z = math.sqrt(2.0) * rho * math.sin(gap or abs(theta - theta0))
            terms.append(sign * mass * _t_parts(z, 2.0 * df)[0])
            slopes.append(mass * math.sqrt(2.0) * math.cos(theta) * t_pdf(z, 2.0 * df))
    slope = math.fsum(slopes)
    return math.fsum(terms), slope


@lru_cache(maxsize=1024)
def power_nc(k: float, df: float | None, power: float) -> float:
    """Noncentrality at which the rule "Δ/SE > k" confirms with probability ``power``.

    σ known (df None): Δ/SE is normal, and the answer is k + z_power. σ estimated
    with df degrees of freedom: Δ/SE is noncentral t, and the SE a reader plugs
    the MDE into is itself an estimate, so the power is averaged over σ's sampling
    distribution (assurance: s/σ ~ sqrt(χ²_df/df)). An MDE read off one sample then
    holds on average instead of only when that sample happened to show the true σ.
    The assurance is an exact one-dimensional integral (:func:`_assurance`), solved
    for the noncentrality by Newton's method kept inside a bracket.
    """
    if df is None:
        return k + z_quantile(power)
    if t_sf(k, df) >= power:  # the assurance at nc = 0 is P(T_df > k)
        return 0.0
    # Newton on log(1 - assurance) against log(nc): the tail falls like a power of
    # nc at small df (a few steps from k + z_power to thousands), like a normal
    # tail at large df. A step that leaves the bracket bisects it.
    lo, hi = 0.0, math.inf
    nc = max(k + z_quantile(power), 1e-3)
    target = math.log1p(-power)
    for _ in range(200):
        value, slope = _assurance(nc, k, df)
        if value == power:
            return nc
        if value < power:
            lo = nc
        else:
            hi = nc
        miss = 1.0 - value
        if miss > 0.0 and slope > 0.0:
            new = nc * math.exp((math.log(miss) - target) * miss / (slope * nc))
        else:
            new = math.nan
        if not lo < new < hi:
            new = 2.0 * nc if math.isinf(hi) else (lo + hi) / 2.0
        if abs(new - nc) <= 1e-12 * new:
            return new
        nc = new
    raise ArithmeticError(f"power noncentrality did not converge (k={k}, df={df}, power={power})")
