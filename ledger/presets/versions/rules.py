"""Every discipline rule, shared by the CLI, the hooks and verdicts.

Pure: a state (and, for history rules, a list of commits) goes in, findings
come out. Nothing here reads the repository or prints; callers decide whether
a finding refuses (exit 1) or warns.
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass

from ledger.core.findings import Finding as Finding
from ledger.core.model.ids import VersionId
from ledger.core.state import LedgerState, Version
from ledger.presets.versions.baseline import compare, high_water_marks

GOODHART = "goodhart-tripwire"
STAGNATION = "stagnation"
EVAL_NOISE = "eval-noise"
SUBSYSTEM_LOOP = "subsystem-patching-loop"
DRIFT = "drifted-high-water"


def last_reflection(state: LedgerState) -> str | None:
    """The version after which the newest *complete* reflection was written."""
    done = [r.front.after for r in state.reflections if r.complete]
    if not done:
        return None
    return max(done, key=state.version_key)


def since_reflection(state: LedgerState) -> list[Version]:
    """Concluded versions after the newest complete reflection, in order."""
    after = last_reflection(state)
    limit = state.version_key(after) if after else None
    return [
        v
        for v in state.versions
        if v.concluded and (limit is None or state.version_key(v.id) > limit)
    ]


@dataclass(frozen=True)
class Unit:
    """One bet as the triggers count it: a version, a cell of a matrix that found no
    winner, or a matrix with a winner."""

    id: str
    gate: str
    subsystem: str | None
    versions: tuple[Version, ...]
    noop_gates: tuple[str, ...]
    parent: str | None


def units(state: LedgerState) -> list[Unit]:
    """Concluded bets in order. A matrix whose cells all missed counts cell by cell, each
    with its own gate and subsystem, as if they had run one after another (the research
    document's rule): three cells inside noise are three bets that did not move their gate,
    not one. A matrix with a winner counts once, at its winner: the bet it made paid."""
    out: list[Unit] = []
    seen: set[str] = set()
    for version in state.versions:
        if not version.concluded:
            continue
        mid = version.front.matrix
        if mid is not None:
            if mid in seen:
                continue
            cells = [v for v in state.versions if v.front.matrix == mid and v.concluded]
            winner = next((c for c in cells if c.verdict == "confirmed"), None)
            if winner is not None:
                seen.add(mid)
                out.append(
                    Unit(mid, winner.front.gate, winner.front.subsystem, tuple(cells), (), None)
                )
                continue
        out.append(
            Unit(
                version.id,
                version.front.gate,
                version.front.subsystem,
                (version,),
                tuple(version.front.noop_gates),
                version.front.parent,
            )
        )
    return out


def _marks(state: LedgerState) -> dict[str, set[str]]:
    return {gate: set(high_water_marks(state, gate)) for gate in sorted(state.config.gates)}


def _improved(unit: Unit, gate: str, marks: dict[str, set[str]]) -> bool:
    """Did the bet move ``gate``'s standing best (beyond noise), or establish it?"""
    return any(v.id in marks.get(gate, set()) for v in unit.versions)


def _reflections_between(written: list[VersionId], lo: VersionId, hi: VersionId) -> bool:
    """Is a complete reflection written after ``lo`` and before ``hi``? ``written``: the
    versions complete reflections follow, sorted (one bisection per bet, not a scan)."""
    at = bisect_left(written, lo)
    return at < len(written) and written[at] < hi


def firings(state: LedgerState) -> list[tuple[str, Finding]]:
    """Every (unit id, finding) at which a trigger fires, replaying the history in order."""
    cfg = state.config.triggers
    history = units(state)
    marks = _marks(state)
    fired: list[tuple[str, Finding]] = []
    streaks: dict[str, list[Unit]] = {}
    stagnant: list[Unit] = []
    since_mark: dict[str, list[str]] = {g: [] for g in marks}
    drift_fired: set[tuple[str, str]] = set()
    best: dict[str, str] = {}
    previous: VersionId | None = None
    written = sorted(state.version_key(r.front.after) for r in state.reflections if r.complete)
    for unit in history:
        key = state.version_key(unit.id)
        reflected = previous is not None and _reflections_between(written, previous, key)
        if reflected:
            stagnant = []
            # A reflection resets a gate's streak only if the next bet changes the gate
            # or the subsystem; carrying on with the same bet continues the count.
            for gate, streak in streaks.items():
                if streak and (unit.gate != gate or unit.subsystem != streak[-1].subsystem):
                    streaks[gate] = []
        # 0. Goodhart tripwire: bets on a gate that did not improve it beyond noise,
        # whatever their label, since the gate last improved (by any bet: one aimed at
        # another gate that also moved this one's best beyond noise restarts the count).
        for gate in streaks:
            if _improved(unit, gate, marks):
                streaks[gate] = []
        if _improved(unit, unit.gate, marks):
            streaks[unit.gate] = []
        else:
            streaks.setdefault(unit.gate, []).append(unit)
            streak = streaks[unit.gate]
            if len(streak) >= cfg.consecutive_refutations:
                ids = [u.id for u in streak]
                fired.append(
                    (
                        unit.id,
                        Finding(
                            GOODHART,
                            f"{len(streak)} bets on gate '{unit.gate}' without improving it beyond "
                            f"noise since it last improved: " + ", ".join(ids),
                            "git ledger reflect",
                            {"gate": unit.gate, "versions": ids},
                        ),
                    )
                )
        # 1. Stagnation: N bets in a row did not improve their targeted gate beyond noise,
        # whatever their label (an override-confirmed bet that moved some other gate
        # still did not do what it bet on).
        stagnant = [] if _improved(unit, unit.gate, marks) else [*stagnant, unit]
        if len(stagnant) >= cfg.stagnation_versions:
            ids = [u.id for u in stagnant]
            fired.append(
                (
                    unit.id,
                    Finding(
                        STAGNATION,
                        f"{len(ids)} consecutive bets did not improve their targeted gate "
                        "beyond noise: " + ", ".join(ids),
                        "git ledger reflect",
                        {"versions": ids},
                    ),
                )
            )
        # 2. Eval-noise flag: a gate registered as unaffected moved against the parent.
        for finding in _eval_noise(state, unit):
            fired.append((unit.id, finding))
        # 3. Subsystem patching loop: the gate static for K bets, the last K-1 one subsystem.
        k = cfg.subsystem_k
        streak = streaks.get(unit.gate, [])
        window = streak[-k:]
        subsystems = {u.subsystem for u in window[1:]}
        if len(window) == k and len(subsystems) == 1 and None not in subsystems:
            ids = [u.id for u in window]
            fired.append(
                (
                    unit.id,
                    Finding(
                        SUBSYSTEM_LOOP,
                        f"gate '{unit.gate}' static for {k} versions ({', '.join(ids)}) while the "
                        f"last {k - 1} bets patch subsystem '{next(iter(subsystems))}'",
                        "git ledger reflect",
                        {"gate": unit.gate, "versions": ids, "subsystem": next(iter(subsystems))},
                    ),
                )
            )
        # 4. Drifted high-water: versions since a gate's best was set, whatever came between.
        for gate, gate_marks in marks.items():
            setter = next((v.id for v in unit.versions if v.id in gate_marks), None)
            if setter is not None:
                best[gate] = setter
                since_mark[gate] = []
                continue
            if gate not in best:
                continue
            since_mark[gate].append(unit.id)
            if len(since_mark[gate]) > cfg.drift_versions and (gate, best[gate]) not in drift_fired:
                drift_fired.add((gate, best[gate]))
                fired.append(
                    (
                        unit.id,
                        Finding(
                            DRIFT,
                            f"gate '{gate}': the best ({best[gate]}) is {len(since_mark[gate])} "
                            "versions old and unmatched",
                            "git ledger reflect",
                            {"gate": gate, "best": best[gate], "versions_since": since_mark[gate]},
                        ),
                    )
                )
        previous = key
    return fired


def _eval_noise(state: LedgerState, unit: Unit) -> list[Finding]:
    cfg = state.config.triggers
    parent = state.version(unit.parent) if unit.parent else None
    if parent is None or not unit.noop_gates:
        return []
    found = []
    for gate in unit.noop_gates:
        gate_cfg = state.config.gates.get(gate)
        if gate_cfg is None:
            continue
        # Per gate where set: one tolerance cannot fit metrics of different scales.
        tolerance = cfg.noop_tolerance
        if gate_cfg.noop_tolerance is not None:
            tolerance = gate_cfg.noop_tolerance
        stat = compare(state, unit.id, gate, parent)
        if stat.delta is not None and abs(stat.delta) > tolerance:
            found.append(
                Finding(
                    EVAL_NOISE,
                    f"{unit.id}: gate '{gate}' was registered as unaffected but moved by "
                    f"{stat.delta:+.4g} against its parent {parent.id} (tolerance {tolerance:g})",
                    "git ledger reflect",
                    {"version": unit.id, "gate": gate, "delta": stat.delta, "parent": parent.id},
                )
            )
    return found


def triggers(state: LedgerState) -> list[Finding]:
    """Which reflection triggers are due: those that fired at a bet concluded after the
    newest complete reflection. Tripwire first, one finding per rule and gate."""
    after = last_reflection(state)
    limit = state.version_key(after) if after else None
    due: dict[tuple[str, object], Finding] = {}
    for uid, finding in firings(state):
        if limit is not None and state.version_key(uid) <= limit:
            continue
        due[(finding.rule, finding.evidence.get("gate"))] = finding
    order = [GOODHART, STAGNATION, EVAL_NOISE, SUBSYSTEM_LOOP, DRIFT]
    return sorted(due.values(), key=lambda f: order.index(f.rule))


def retired_gates(state: LedgerState) -> dict[str, str]:
    """Gates a complete Goodhart reflection retired as targets -> that reflection's id."""
    return {r.retired: r.front.id for r in state.reflections if r.complete and r.retired}


def exhausted_subsystems(state: LedgerState) -> dict[str, str]:
    """Subsystems a complete reflection's audit declared exhausted -> that reflection."""
    out: dict[str, str] = {}
    for r in state.reflections:
        if r.complete:
            for name in r.front.exhausted:
                out[name] = r.front.id
    return out


def reflection_pending(state: LedgerState) -> tuple[list[Finding], str | None]:
    """Triggers firing now, and the id of an incomplete reflection if one is committed."""
    fired = triggers(state)
    incomplete = next((r for r in state.reflections if not r.complete), None)
    return fired, (incomplete.front.id if incomplete else None)


def uncited_reflection(state: LedgerState) -> str | None:
    """The newest reflection if nothing has been registered since it (it must be cited)."""
    after = last_reflection(state)
    if after is None:
        return None
    key = state.version_key(after)
    if any(state.version_key(v.id) > key for v in state.versions):
        return None
    reflection = state.reflection_for(after)
    return reflection.front.id if reflection else None


def registration_blockers(state: LedgerState, cites: str | None) -> list[Finding]:
    """Why a new registration is refused right now (empty: it may go ahead)."""
    found: list[Finding] = []
    for version in state.open_versions():
        found.append(
            Finding(
                "one-open-version",
                f"{version.id} is still open (registered, not concluded)",
                f"git ledger conclude {version.id} --verdict ... --next ...",
            )
        )
    for matrix in state.open_matrices():
        found.append(
            Finding(
                "one-open-version",
                f"matrix {matrix.id} is still open",
                f"git ledger matrix conclude {matrix.id} --winner CELL (or --none)",
            )
        )
    if state.phase is not None and state.phase.state == "parked":
        found.append(
            Finding(
                "phase-parked",
                "a phase transition is in force: the campaign is parked",
                "git ledger phase resume (once the resume criteria in CAMPAIGN_STATUS.md hold)",
            )
        )
    fired, incomplete = reflection_pending(state)
    if fired:
        names = ", ".join(f.rule for f in fired)
        hint = (
            f"fill every section of {incomplete}.md and commit it"
            if incomplete
            else "git ledger reflect, fill every section, commit it"
        )
        found.append(Finding("reflection-due", f"a reflection is due ({names})", hint))
    pending = uncited_reflection(state)
    if pending and cites != pending and not fired:
        found.append(
            Finding(
                "cite-reflection",
                f"the latest document is {pending}; the next registration must cite it",
                f"add --cites {pending}",
            )
        )
    return found
