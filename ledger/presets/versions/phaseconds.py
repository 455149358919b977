"""The three conditions of a phase transition, as the research document states them (pure).

A phase is declared when the loop's instrument, not its bets, is what binds: (1) the
stagnation or Goodhart trigger fired and a reflection concluded that the binding
constraint is the instrument (``binding_constraint: instrument`` in its front matter);
(2) the near-misses sit inside noise (the last bets on the gate neither improved nor
regressed it beyond noise); (3) the targeted regime's effective N cannot be widened
(it did not grow over those bets). ``phase declare`` records which held and refuses
without ``--force REASON`` when one did not; ``next`` never proposes a declaration.
"""

from __future__ import annotations

from dataclasses import dataclass

from ledger.core.model.entries import GateStat
from ledger.core.state import LedgerState
from ledger.core.stats import NOISE
from ledger.presets.versions import rules

TRIGGER = "trigger-and-reflection"
NEAR_MISSES = "near-misses-inside-noise"
EFFECTIVE_N = "effective-n-capped"


@dataclass(frozen=True)
class Condition:
    key: str
    held: bool
    evidence: str

    def text(self) -> str:
        return f"{'held' if self.held else 'not held'}: {self.evidence}"


def _target(unit: rules.Unit) -> GateStat | None:
    conclusion = unit.versions[0].front.conclusion
    if conclusion is None:
        return None
    return next((g for g in conclusion.gates if g.gate == unit.gate), None)


def declare_conditions(state: LedgerState) -> list[Condition]:
    tripped = [
        (uid, f) for uid, f in rules.firings(state) if f.rule in (rules.GOODHART, rules.STAGNATION)
    ]
    if tripped:
        uid, finding = tripped[-1]
        key = state.version_key(uid)
        found = [
            r.front.id
            for r in state.reflections
            if r.complete
            and state.version_key(r.front.after) >= key
            and (r.front.binding_constraint or "").strip().lower() == "instrument"
        ]
        first = Condition(
            TRIGGER,
            bool(found),
            f"[{finding.rule}] fired at {uid}; "
            + (
                f"{found[0]} concluded the binding constraint is the instrument"
                if found
                else "no complete reflection after it says 'binding_constraint: instrument'"
            ),
        )
        gate = str(finding.evidence.get("gate") or "")
    else:
        first = Condition(TRIGGER, False, "neither the stagnation nor the Goodhart trigger fired")
        gate = ""
    bets = [u for u in rules.units(state) if not gate or u.gate == gate]
    recent = bets[-max(state.config.triggers.stagnation_versions, 1) :]
    stats = [(u.id, _target(u)) for u in recent]
    outside = [uid for uid, s in stats if s is None or s.outcome != NOISE]
    second = Condition(
        NEAR_MISSES,
        bool(recent) and not outside,
        f"the last {len(recent)} bet(s) on '{gate or 'their gate'}' "
        + (
            "all sit inside noise"
            if recent and not outside
            else f"not all inside noise ({', '.join(outside) or 'none concluded'})"
        ),
    )
    n_eff = [s.n_eff for _, s in stats if s is not None]
    widened = len(n_eff) >= 2 and max(n_eff[1:]) > n_eff[0]
    third = Condition(
        EFFECTIVE_N,
        len(n_eff) >= 2 and not widened,
        f"effective N over those bets: {', '.join(f'{n:g}' for n in n_eff) or 'none'}"
        + (" (it grew: it can still be widened)" if widened else ""),
    )
    return [first, second, third]


def resume_criterion(recorded: list[str], named: str | None) -> str | None:
    """The recorded criterion ``named`` is (its text, or its 1-based number); None: none."""
    if named is None:
        return None
    wanted = named.strip()
    if wanted.isdigit() and 1 <= int(wanted) <= len(recorded):
        return recorded[int(wanted) - 1]
    return next((c for c in recorded if c.strip().lower() == wanted.lower()), None)
