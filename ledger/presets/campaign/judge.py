"""A candidate's target against the promoted head, on the statistics core
:mod:`ledger.core.stats` every loop uses (the versions loop's ``conclude`` too).

A measurement may carry repeats (``--measure speed=101,99,103``); σ comes from
them (pooled over candidate and head, unpaired: repeats are not matched runs),
floored by ``[campaign] noise_floor``; with no repeats the floor is σ. The
threshold is sigma_k (or Student-t at small n) times the SE of Δ, and the
verdict it allows is one of improved beyond noise, held within noise,
regressed. With a single value on each side and no floor configured there is no
σ at all: the comparison is the sign of Δ, diagnostic only, and it says so.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ledger.core import stats
from ledger.presets.campaign.loop import Campaign, Candidate, table
from ledger.presets.campaign.measures import describe

IMPROVED, NOISE, REGRESSED = stats.IMPROVED, stats.NOISE, stats.REGRESSED


@dataclass(frozen=True)
class Judgement:
    metric: str
    head: str  # the commit compared against
    n: int  # the candidate's values
    n_head: int
    delta: float  # candidate - head, raw
    gain: float  # Δ in the favourable direction
    sigma: float | None
    sigma_source: str
    threshold: float | None
    threshold_source: str
    outcome: str  # improved | within noise | regressed
    diagnostic: bool

    def as_dict(self) -> dict[str, Any]:
        return {
            "metric": self.metric,
            "head": self.head,
            "n": self.n,
            "n_head": self.n_head,
            "delta": self.delta,
            "sigma": self.sigma,
            "sigma_source": self.sigma_source,
            "threshold": self.threshold,
            "threshold_source": self.threshold_source,
            "outcome": self.outcome,
            "diagnostic": self.diagnostic,
        }

    def line(self) -> str:
        return describe(self.as_dict())


def values(c: Candidate, metric: str) -> list[float]:
    """The candidate's values of ``metric``: its repeats, else its one number."""
    if c.repeats.get(metric):
        return list(c.repeats[metric])
    number = c.number(metric)
    return [] if number is None else [number]


def judge(camp: Campaign, new: Candidate, head: Candidate | None = None) -> Judgement | None:
    """``new``'s target against ``head`` (default: the promoted head); None when either
    side has no number for it."""
    cfg = table(camp.config)
    metric = cfg.target_metric
    ref = head or camp.head()
    if ref is None:
        return None
    mine, theirs = values(new, metric), values(ref, metric)
    if not mine or not theirs:
        return None
    sign = 1.0 if cfg.directions.get(metric, "higher") == "higher" else -1.0
    st = camp.config.stats
    floor = cfg.noise_floor if cfg.noise_floor > 0 else None
    comparison = stats.compare_keyed(
        {f"r{i}": v for i, v in enumerate(theirs)},
        {f"r{i}": v for i, v in enumerate(mine)},
        sign=sign,
        floor=floor,
        sigma_k=st.sigma_k,
        alpha=st.alpha,
        power=st.power,
        small_n=st.small_n,
        pairing="off",  # repeats of two commits are not matched runs
    )
    delta = stats.sample(mine).mean - stats.sample(theirs).mean
    if comparison is None:
        gain = delta * sign
        outcome = IMPROVED if gain > 0 else REGRESSED if gain < 0 else NOISE
        return Judgement(
            metric, ref.commit, len(mine), len(theirs), delta, gain, None,
            "no repeats and no [campaign] noise_floor", None, "none: the sign of Δ only",
            outcome, True,
        )  # fmt: skip
    return Judgement(
        metric,
        ref.commit,
        len(mine),
        len(theirs),
        comparison.delta,
        comparison.gain,
        comparison.sigma,
        comparison.sigma_source,
        comparison.threshold,
        comparison.threshold_source,
        comparison.outcome,
        False,
    )
