"""Calibration of the verdicts by simulation (seeded, deterministic).

Every simulated version is a ledger state (a concluded baseline V1 and the
version V2 with their result entries, seeds or dated windows) judged by the
code ``conclude`` runs: ledger.presets.versions.verdicts.evidence for the statistics and
ledger.presets.versions.conclude.allowed for whether "confirmed" is contradicted; a
simulated matrix's cells are compared by ledger.presets.versions.baseline.compare and decided by
ledger.presets.versions.matrix.adjudicate, as ``matrix conclude`` decides them. numpy
only draws the numbers.

Prints, per design, the rate at which a version with no true effect is
confirmed, the rate at an effect equal to the MDE the evidence reports (and at
the MDE for the true σ), and for matrices the family-wise false-winner rate.

    python -m bench.calibration [--sims 1000]
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from datetime import date, timedelta

import numpy as np

from ledger.core import stats
from ledger.core.model.config import LedgerConfig
from ledger.core.model.entries import Conclusion, GateStat, Provenance, ResultFile, VersionFront
from ledger.core.state import LedgerState, Result, Version
from ledger.presets.versions.baseline import compare
from ledger.presets.versions.conclude import allowed
from ledger.presets.versions.matrix import adjudicate
from ledger.presets.versions.verdicts import evidence


def config(pairing: str = "auto") -> LedgerConfig:
    """Seeds with a measured σ (no noise floor), and walk-forward with the bar mean Δ > 0."""
    return LedgerConfig.model_validate(
        {
            "stats": {"pairing": pairing},
            "gates": {
                "seeds": {"metric": "score", "metrics": {"score": "$.score"}},
                "wf": {
                    "metric": "score",
                    "mode": "walk-forward",
                    "bar": {"mean": 0.0},
                    "metrics": {"score": "$.score"},
                },
            },
        }
    )


CONFIG = config()
STATS = CONFIG.stats
PROVENANCE = Provenance(
    source_sha256="0" * 64, source_name="sim.json", code_commit=None, dirty=False
)
BASELINE = Version(
    VersionFront(
        id="V1",
        bet="the baseline",
        gate="seeds",
        falsifier="-",
        conclusion=Conclusion(verdict="confirmed", next="-"),
    ),
    "training_log/V1.md",
    "",
)
OPEN = {
    gate: Version(
        VersionFront(id="V2", parent="V1", bet="the bet", gate=gate, falsifier="-"),
        "training_log/V2.md",
        "",
    )
    for gate in ("seeds", "wf")
}


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


def _results(
    vid: str, gate: str, values: np.ndarray, spans: list[tuple[date, date]] | None = None
) -> list[Result]:
    out = []
    for i, value in enumerate(values):
        key = str(i + 1)
        span = spans[i] if spans else None
        data = ResultFile(
            version=vid,
            gate=gate,
            seed=None if span else key,
            window=f"w{key}" if span else None,
            window_start=span[0].isoformat() if span else None,
            window_end=span[1].isoformat() if span else None,
            metrics={"score": float(value)},
            provenance=PROVENANCE,
        )
        out.append(Result(data, f"training_log/results/{vid}/{gate}/{key}.json"))
    return out


def _state(
    cfg: LedgerConfig,
    gate: str,
    base: np.ndarray,
    new: dict[str, np.ndarray],
    spans: list[tuple[date, date]] | None = None,
) -> LedgerState:
    """V1 concluded with ``base``; each of ``new``'s ids measured on ``gate``."""
    results = _results("V1", gate, base, spans)
    for vid, values in new.items():
        results += _results(vid, gate, values, spans)
    versions = [BASELINE, OPEN[gate]] if "V2" in new else [BASELINE]
    return LedgerState(config=cfg, commit_id=None, versions=versions, results=results)


def judge(state: LedgerState) -> tuple[bool, GateStat]:
    """What ``conclude V2 --verdict confirmed`` would say: allowed?, and the evidence."""
    target = evidence(state, "V2")[0]
    return allowed(target, None)["confirmed"] is None, target


def _rates(
    base: np.ndarray,
    new: np.ndarray,
    gate: str,
    cfg: LedgerConfig = CONFIG,
    spans: list[tuple[date, date]] | None = None,
) -> tuple[float, float]:
    """(rate at which confirmed is allowed, median MDE the evidence reported)."""
    hits = 0
    mdes = []
    for b, v in zip(base, new, strict=True):
        ok, target = judge(_state(cfg, gate, b, {"V2": v}, spans))
        hits += ok
        if target.mde is not None:
            mdes.append(target.mde)
    return hits / len(base), float(np.median(mdes))


SPLIT_SD, NOISE_SD = 1.0, 0.3  # the split's variance dominates, the eval's own is small


def _paired_draws(
    rng: np.random.Generator, sims: int, n: int, delta: float, cells: int = 1
) -> tuple[np.ndarray, np.ndarray]:
    """Baseline (sims, n) and version(s) (sims, cells, n); every arm shares the seed's split."""
    split = rng.normal(0.0, SPLIT_SD, (sims, 1, n))
    base = 10.0 + split[:, 0, :] + rng.normal(0.0, NOISE_SD, (sims, n))
    arms = 10.0 + delta + split + rng.normal(0.0, NOISE_SD, (sims, cells, n))
    return base, arms


def paired_seeds(sims: int = 1000, n: int = 5, seed: int = 17) -> Rates:
    """Seeds that share a data split, compared paired (SE from per-seed differences)."""
    rng = np.random.default_rng(seed)
    base, arms = _paired_draws(rng, sims, n, 0.0)
    null, reported = _rates(base, arms[:, 0], "seeds")
    unpaired = _rates(base, arms[:, 0], "seeds", config("off"))[1]
    true_mde = stats.mde(
        NOISE_SD * np.sqrt(2.0), n, STATS.alpha, STATS.power, STATS.small_n, sigma_k=STATS.sigma_k
    )
    at_mde = _rates(*_first(_paired_draws(rng, sims, n, true_mde)), "seeds")[0]
    at_reported = _rates(*_first(_paired_draws(rng, sims, n, reported)), "seeds")[0]
    return Rates(
        f"paired seeds sharing a split (n={n})",
        sims,
        null,
        true_mde,
        at_mde,
        reported,
        at_reported,
        unpaired,
    )


def _first(draws: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    return draws[0], draws[1][:, 0]


def _windows(n: int, length: int, step: int) -> list[tuple[date, date]]:
    start = date(2020, 1, 1)
    return [
        (start + timedelta(days=i * step), start + timedelta(days=i * step + length))
        for i in range(n)
    ]


def walk_forward(
    sims: int = 1000, n: int = 12, length: int = 90, step: int = 45, seed: int = 18
) -> Rates:
    """Overlapping windows: each window's value is the mean of daily values over its span,
    so windows that share days are correlated exactly as their overlap says."""
    rng = np.random.default_rng(seed)
    spans = _windows(n, length, step)
    design = stats.window_design(spans, n)
    days = (n - 1) * step + length
    daily_sd = 3.0
    starts = np.arange(n) * step

    def window_means(daily: np.ndarray) -> np.ndarray:
        c = np.concatenate([np.zeros((sims, 1)), np.cumsum(daily, axis=1)], axis=1)
        return np.asarray((c[:, starts + length] - c[:, starts]) / length)

    def draws(delta: float) -> tuple[np.ndarray, np.ndarray]:
        base = 100.0 + window_means(rng.normal(0.0, 1.0, (sims, days)))
        return base, base + window_means(rng.normal(delta, daily_sd, (sims, days)))

    null, reported = _rates(*draws(0.0), "wf", spans=spans)
    se = daily_sd / np.sqrt(length) / np.sqrt(design.n_eff)
    true_mde = stats.mde_for_se(
        float(se),
        design.df,
        sigma_k=STATS.sigma_k,
        alpha=STATS.alpha,
        power=STATS.power,
        small_n=STATS.small_n,
    )
    return Rates(
        f"walk-forward ({n} windows of {length}d every {step}d, n_eff={design.n_eff:.2f})",
        sims,
        null,
        true_mde,
        _rates(*draws(true_mde), "wf", spans=spans)[0],
        reported,
        _rates(*draws(reported), "wf", spans=spans)[0],
    )


def matrix(cells: int, sims: int = 1000, n: int = 5, seed: int = 19) -> float:
    """Family-wise false-winner rate: no cell has an effect, all share the baseline and its
    seeds; a false winner is any cell ``matrix conclude`` would accept as the winner."""
    rng = np.random.default_rng(seed + cells)
    base, arms = _paired_draws(rng, sims, n, 0.0, cells)
    names = [chr(65 + c) for c in range(cells)]
    false = 0
    for s in range(sims):
        state = _state(
            CONFIG, "seeds", base[s], {f"V2.{x}": arms[s, c] for c, x in enumerate(names)}
        )
        comparison = {x: compare(state, f"V2.{x}", "seeds", BASELINE) for x in names}
        false += any(row["pass"] for row in adjudicate(STATS, comparison).values())
    return false / sims


def report(sims: int = 1000) -> list[str]:
    lines = []
    for r in (paired_seeds(sims), walk_forward(sims)):
        lines.append(
            f"{r.design}: {r.sims} versions; no effect → confirmed {r.null_confirmed:.1%}; "
            f"effect = the MDE the evidence reports {r.reported_mde:.4g} → confirmed "
            f"{r.reported_mde_confirmed:.1%}; effect = the MDE at the true σ {r.mde:.4g} → "
            f"confirmed {r.mde_confirmed:.1%}"
            + (f" (unpaired, the MDE would be {r.unpaired_mde:.4g})" if r.unpaired_mde else "")
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
