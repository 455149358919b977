"""Replays of the loop's failure arcs: each trigger fires (or stays silent) at the
version where the history says it should.

The ledger state is built in memory version by version, each conclusion computed
by the verdict code itself (ledger.presets.versions.verdicts.evidence), and the trigger rules are
asked after every step, as `git ledger status` would ask them.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from ledger.core.model.config import LedgerConfig
from ledger.core.model.entries import (
    Conclusion,
    MatrixCell,
    MatrixFront,
    Provenance,
    ReflectionFront,
    ResultFile,
    VersionFront,
)
from ledger.core.state import LedgerState, Reflection, Result, Version, cell_versions
from ledger.presets.versions import rules
from ledger.presets.versions.baseline import standing_baseline
from ledger.presets.versions.verdicts import evidence

CONFIG = LedgerConfig.model_validate(
    {
        "gates": {
            "recent": {"metric": "score", "metrics": {"score": "$.score"}},
            "crisis": {"metric": "score", "metrics": {"score": "$.score"}},
        }
    }
)
SEEDS = ("1", "2", "3", "4")
SPLIT = {"1": 1.0, "2": -1.0, "3": 0.5, "4": -0.5}  # each seed's split, shared by all versions
PROV = Provenance(source_sha256="0" * 64, source_name="eval.json", code_commit=None, dirty=False)


@dataclass
class Loop:
    """A loop replayed in memory; ``fired`` records the rules due after each step."""

    versions: list[Version] = field(default_factory=list)
    results: list[Result] = field(default_factory=list)
    reflections: list[Reflection] = field(default_factory=list)
    matrices: list[tuple[str, MatrixFront]] = field(default_factory=list)
    fired: dict[str, list[str]] = field(default_factory=dict)

    def state(self) -> LedgerState:
        cells = [v for p, m in self.matrices for v in cell_versions(p, m)]
        state = LedgerState(
            config=CONFIG,
            commit_id=None,
            versions=[*self.versions, *cells],
            results=list(self.results),
            reflections=list(self.reflections),
            matrices=list(self.matrices),
        )
        state.versions.sort(key=lambda v: state.version_key(v.id))
        return state

    def measure(self, vid: str, gate: str, mean: float) -> None:
        rng = random.Random(f"{vid}-{gate}")
        for seed in SEEDS:
            value = mean + SPLIT[seed] + rng.gauss(0, 0.2)
            data = ResultFile(
                version=vid, gate=gate, seed=seed, metrics={"score": value}, provenance=PROV
            )
            self.results.append(Result(data, f"training_log/results/{vid}/{gate}/seed-{seed}.json"))

    def version(
        self,
        vid: str,
        gate: str,
        means: dict[str, float],
        verdict: str,
        *,
        parent: str | None = None,
        subsystem: str | None = None,
        noop: tuple[str, ...] = (),
    ) -> None:
        """Register, measure and conclude one version with the verdict the numbers allow."""
        if parent is None and self.versions:
            parent = self.versions[-1].id
        front = VersionFront(
            id=vid,
            parent=parent,
            bet=f"bet {vid}",
            gate=gate,
            falsifier="no gain",
            subsystem=subsystem,
            noop_gates=list(noop),
        )
        self.versions.append(Version(front, f"training_log/{vid}.md", "h"))
        for g, mean in means.items():
            self.measure(vid, g, mean)
        gates = evidence(self.state(), vid)
        conclusion = Conclusion(verdict=verdict, next="go on", gates=gates)  # type: ignore[arg-type]
        self.versions[-1] = Version(
            front.model_copy(update={"conclusion": conclusion}), f"training_log/{vid}.md", "h"
        )
        self.fired[vid] = [f.rule for f in rules.triggers(self.state())]

    def reflect(self, after: str, exhausted: tuple[str, ...] = ()) -> None:
        front = ReflectionFront(id=f"REFLECTION_{after}", after=after, exhausted=list(exhausted))
        self.reflections.append(Reflection(front, f"training_log/REFLECTION_{after}.md", ()))
        assert rules.triggers(self.state()) == [], "a complete reflection answers what fired"

    def firing_at(self, rule: str) -> list[str]:
        return [vid for vid, names in self.fired.items() if rule in names]


def test_goodhart_streak_fires_at_the_third_and_is_not_reset_by_a_reflection_on_the_same_bet() -> (
    None
):
    loop = Loop()
    loop.version("V1", "recent", {"recent": 10.0}, "confirmed")
    loop.version("V2", "recent", {"recent": 10.0}, "refuted", subsystem="carry")
    loop.version("V3", "recent", {"recent": 10.0}, "refuted", subsystem="carry")
    # A within-noise result labelled inconclusive counts like a refutation.
    loop.version("V4", "recent", {"recent": 10.05}, "inconclusive", subsystem="carry")
    assert loop.firing_at(rules.GOODHART) == ["V4"]
    loop.reflect("V4")
    # Same gate, same subsystem after the reflection: the count goes on (4 bets), fires again.
    loop.version("V5", "recent", {"recent": 10.0}, "refuted", subsystem="carry")
    assert rules.GOODHART in loop.fired["V5"]
    loop.reflect("V5")
    # A new subsystem after the reflection starts a new count.
    loop.version("V6", "recent", {"recent": 10.0}, "refuted", subsystem="sizing")
    loop.version("V7", "recent", {"recent": 10.0}, "refuted", subsystem="sizing")
    assert rules.GOODHART not in loop.fired["V6"] + loop.fired["V7"]
    loop.version("V8", "recent", {"recent": 10.0}, "refuted", subsystem="sizing")
    assert rules.GOODHART in loop.fired["V8"]


def test_goodhart_counts_refutations_since_the_gate_last_improved_across_other_gates() -> None:
    loop = Loop()
    loop.version("V1", "recent", {"recent": 10.0, "crisis": 10.0}, "confirmed")
    loop.version("V2", "recent", {"recent": 10.0}, "refuted")
    loop.version("V3", "crisis", {"crisis": 14.0}, "confirmed")  # another gate improves
    loop.version("V4", "recent", {"recent": 10.0}, "refuted")
    assert loop.firing_at(rules.GOODHART) == []
    loop.version("V5", "recent", {"recent": 10.0}, "refuted")
    assert loop.firing_at(rules.GOODHART) == ["V5"]
    assert rules.STAGNATION not in loop.fired["V4"]  # V3 moved crisis's baseline


def test_stagnation_fires_at_the_third_bet_that_moves_no_baseline_whatever_its_label() -> None:
    loop = Loop()
    loop.version("V1", "recent", {"recent": 10.0}, "confirmed")
    loop.version("V2", "recent", {"recent": 15.0}, "confirmed")
    loop.version("V3", "crisis", {"crisis": 10.0}, "refuted")  # establishes crisis: not stagnant
    loop.version("V4", "recent", {"recent": 15.05}, "inconclusive")
    loop.version("V5", "crisis", {"crisis": 10.0}, "inconclusive")
    assert loop.firing_at(rules.STAGNATION) == []
    loop.version("V6", "recent", {"recent": 15.0}, "refuted")
    assert loop.firing_at(rules.STAGNATION) == ["V6"]


def test_eval_noise_measures_the_noop_gate_against_the_parent_not_the_best() -> None:
    loop = Loop()
    loop.version("V1", "recent", {"recent": 10.0, "crisis": 5000.0}, "confirmed")
    # crisis far below its best (V1) but unchanged against the parent V2: silent.
    loop.version("V2", "recent", {"recent": 15.0, "crisis": 3000.0}, "confirmed")
    loop.version("V3", "recent", {"recent": 20.0, "crisis": 3000.0}, "confirmed", noop=("crisis",))
    assert loop.firing_at(rules.EVAL_NOISE) == []
    # crisis back at its best, so "equal to the best", but it moved by +2000 against V3.
    loop.version("V4", "recent", {"recent": 25.0, "crisis": 5000.0}, "confirmed", noop=("crisis",))
    assert loop.firing_at(rules.EVAL_NOISE) == ["V4"]


def test_subsystem_loop_fires_when_the_gate_is_static_for_k_bets_on_one_subsystem() -> None:
    loop = Loop()
    loop.version("V1", "crisis", {"crisis": 10.0}, "confirmed")
    loop.version("V2", "crisis", {"crisis": 10.0}, "refuted", subsystem="bias")
    loop.version("V3", "crisis", {"crisis": 10.0}, "refuted", subsystem="bias")
    assert loop.firing_at(rules.SUBSYSTEM_LOOP) == []
    loop.version("V4", "crisis", {"crisis": 10.0}, "refuted", subsystem="bias")
    assert loop.firing_at(rules.SUBSYSTEM_LOOP) == ["V4"]


def test_drift_counts_from_the_high_water_mark_whatever_reflections_came_between() -> None:
    """Best set at V1, reflections at V3 and V5: drift fires at V7 (6 versions), not V10."""
    loop = Loop()
    loop.version("V1", "recent", {"recent": 20.0}, "confirmed")
    subsystems = ["a", "b", "c", "d", "e", "f", "g", "h", "i"]
    for i in range(2, 11):
        vid = f"V{i}"
        loop.version(vid, "recent", {"recent": 10.0}, "refuted", subsystem=subsystems[i - 2])
        if loop.fired[vid]:
            loop.reflect(vid)
    assert loop.firing_at(rules.DRIFT) == ["V7"]


def test_a_version_confirmed_on_one_gate_does_not_take_another_gate_within_noise() -> None:
    loop = Loop()
    loop.version("V1", "recent", {"recent": 10.0, "crisis": 10.0}, "confirmed")
    loop.version("V2", "recent", {"recent": 15.0, "crisis": 10.1}, "confirmed")
    state = loop.state()
    best_recent = standing_baseline(state, "recent")
    best_crisis = standing_baseline(state, "crisis")
    assert best_recent is not None and best_recent.id == "V2"
    assert best_crisis is not None and best_crisis.id == "V1"
    # ... so crisis's high-water stays at V1 and its drift keeps counting from V1.
    for i in range(3, 8):
        loop.version(f"V{i}", "recent", {"recent": 15.0 + 5 * i, "crisis": 10.0}, "confirmed")
    assert loop.firing_at(rules.DRIFT) == ["V7"]
    assert loop.firing_at(rules.STAGNATION) == []


def _matrix(loop: Loop, mid: str, cells: dict[str, float], winner: str | None) -> None:
    base = standing_baseline(loop.state(), "recent")
    assert base is not None
    front = MatrixFront(
        id=mid,
        baselines={"recent": base.id},
        cells=[
            MatrixCell(
                name=n,
                slug=n.lower(),
                bet=f"cell {n}",
                gate="recent",
                falsifier="f",
                branch=f"ledger/{mid}.{n}-{n.lower()}",
            )
            for n in cells
        ],
    )
    loop.matrices.append((f"training_log/{mid}-matrix.md", front))
    for name, mean in cells.items():
        loop.measure(f"{mid}.{name}", "recent", mean)
    state = loop.state()
    comparison = {n: evidence(state, f"{mid}.{n}")[0] for n in cells}
    verdicts = {n: ("confirmed" if n == winner else "refuted") for n in cells}
    done = front.model_copy(
        update={"concluded": True, "winner": winner, "verdicts": verdicts, "comparison": comparison}
    )
    loop.matrices[-1] = (loop.matrices[-1][0], done)
    loop.fired[mid] = [f.rule for f in rules.triggers(loop.state())]


def test_a_matrixs_cells_count_one_by_one() -> None:
    loop = Loop()
    loop.version("V1", "recent", {"recent": 10.0}, "confirmed")
    loop.version("V2", "recent", {"recent": 10.0}, "refuted")
    _matrix(loop, "V3", {"A": 10.0, "B": 10.0, "C": 10.0}, None)
    # Issue 26: three cells within noise are three bets, as if run sequentially: with
    # V2, four bets on 'recent' without improving it; the tripwire fires at the matrix.
    assert [u.id for u in rules.units(loop.state())] == ["V1", "V2", "V3.A", "V3.B", "V3.C"]
    assert loop.firing_at(rules.GOODHART) == ["V3"]


def test_the_next_version_after_a_matrix_has_the_winner_as_parent() -> None:
    from ledger.presets.versions.register import choose_id

    loop = Loop()
    loop.version("V1", "recent", {"recent": 10.0}, "confirmed")
    _matrix(loop, "V2", {"A": 20.0, "B": 10.0, "C": 10.0}, "A")
    state = loop.state()
    assert choose_id(state, None, None) == ("V3", "V2.A")
    best = standing_baseline(state, "recent")
    assert best is not None and best.id == "V2.A"
    loop2 = Loop()
    loop2.version("V1", "recent", {"recent": 10.0}, "confirmed")
    _matrix(loop2, "V2", {"A": 10.0, "B": 10.0}, None)
    assert choose_id(loop2.state(), None, None) == ("V3", "V1")


def test_an_exhausted_subsystem_is_listed_from_complete_reflections() -> None:
    loop = Loop()
    loop.version("V1", "recent", {"recent": 10.0}, "confirmed")
    loop.reflect("V1", exhausted=("carry",))
    assert rules.exhausted_subsystems(loop.state()) == {"carry": "REFLECTION_V1"}


def test_stagnation_counts_bets_that_did_not_improve_their_own_gate() -> None:
    """V2 bet on recent and stayed within noise there; confirmed anyway (an override), it
    moved crisis's baseline. It still did not do what it bet on: stagnation fires at V4."""
    loop = Loop()
    loop.version("V1", "recent", {"recent": 10.0, "crisis": 10.0}, "confirmed")
    loop.version("V2", "recent", {"recent": 10.05, "crisis": 15.0}, "confirmed")
    best = standing_baseline(loop.state(), "crisis")
    assert best is not None and best.id == "V2"
    loop.version("V3", "recent", {"recent": 10.0}, "refuted")
    assert loop.firing_at(rules.STAGNATION) == []
    loop.version("V4", "recent", {"recent": 10.0}, "refuted")
    assert loop.firing_at(rules.STAGNATION) == ["V4"]
    assert loop.firing_at(rules.GOODHART) == ["V4"]


def test_goodhart_restarts_when_the_gate_improves_whichever_bet_improved_it() -> None:
    """V4 bet on crisis and also moved recent's best beyond noise: recent last improved at
    V4, so the refutations on recent before it no longer count."""
    loop = Loop()
    loop.version("V1", "recent", {"recent": 10.0, "crisis": 10.0}, "confirmed")
    loop.version("V2", "recent", {"recent": 10.0}, "refuted")
    loop.version("V3", "recent", {"recent": 10.0}, "refuted")
    loop.version("V4", "crisis", {"crisis": 15.0, "recent": 15.0}, "confirmed")
    best = standing_baseline(loop.state(), "recent")
    assert best is not None and best.id == "V4"
    loop.version("V5", "recent", {"recent": 15.0}, "refuted")
    loop.version("V6", "recent", {"recent": 15.0}, "refuted")
    assert loop.firing_at(rules.GOODHART) == []
    loop.version("V7", "recent", {"recent": 15.0}, "refuted")
    assert loop.firing_at(rules.GOODHART) == ["V7"]
