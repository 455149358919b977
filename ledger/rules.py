"""Every discipline rule, shared by the CLI, the hooks and verdicts.

Pure: a state (and, for history rules, a list of commits) goes in, findings
come out. Nothing here reads the repository or prints; callers decide whether
a finding refuses (exit 1) or warns.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ledger.baseline import ESTABLISHES, IMPROVED, standing_baseline
from ledger.state import LedgerState, Version

GOODHART = "goodhart-tripwire"
STAGNATION = "stagnation"
EVAL_NOISE = "eval-noise"
SUBSYSTEM_LOOP = "subsystem-patching-loop"
DRIFT = "drifted-high-water"


@dataclass(frozen=True)
class Finding:
    rule: str
    message: str
    fix: str = ""
    evidence: dict[str, object] = field(default_factory=dict)

    def line(self) -> str:
        text = f"[{self.rule}] {self.message}"
        return f"{text} (fix: {self.fix})" if self.fix else text


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


def _improved_any(version: Version) -> bool:
    """Did the version break (or, as the first, set) some gate's baseline?"""
    conclusion = version.front.conclusion
    if conclusion is None:
        return False
    if any(g.outcome == ESTABLISHES for g in conclusion.gates):
        return True
    return conclusion.verdict == "confirmed" and any(
        g.outcome == IMPROVED for g in conclusion.gates
    )


def triggers(state: LedgerState) -> list[Finding]:
    """Which reflection triggers fire, with their evidence. Tripwire first."""
    cfg = state.config.triggers
    recent = since_reflection(state)
    fired: list[Finding] = []

    # 0. Goodhart tripwire: a streak of refutations on one gate.
    streak: list[Version] = []
    for version in recent:
        if version.verdict == "refuted" and (
            not streak or streak[-1].front.gate == version.front.gate
        ):
            streak.append(version)
        elif version.verdict == "refuted":
            streak = [version]
        else:
            streak = []
        if len(streak) >= cfg.consecutive_refutations:
            ids = [v.id for v in streak]
            fired.append(
                Finding(
                    GOODHART,
                    f"{len(streak)} consecutive refutations on gate '{version.front.gate}': "
                    + ", ".join(ids),
                    "git ledger reflect",
                    {"gate": version.front.gate, "versions": ids},
                )
            )
            break

    # 1. Stagnation: N versions in a row broke no gate's baseline.
    run: list[str] = []
    for version in recent:
        run = [] if _improved_any(version) else [*run, version.id]
    if len(run) >= cfg.stagnation_versions:
        fired.append(
            Finding(
                STAGNATION,
                f"{len(run)} consecutive versions broke no gate's baseline: {', '.join(run)}",
                "git ledger reflect",
                {"versions": run},
            )
        )

    # 2. Eval-noise flag: a gate registered as unaffected moved anyway.
    for version in recent:
        gates = version.front.conclusion.gates if version.front.conclusion else []
        for stat in gates:
            if (
                stat.gate in version.front.noop_gates
                and stat.delta is not None
                and (abs(stat.delta) > cfg.noop_tolerance)
            ):
                fired.append(
                    Finding(
                        EVAL_NOISE,
                        f"{version.id}: gate '{stat.gate}' was registered as unaffected but moved "
                        f"by {stat.delta:+.4g} (tolerance {cfg.noop_tolerance:g})",
                        "git ledger reflect",
                        {"version": version.id, "gate": stat.gate, "delta": stat.delta},
                    )
                )

    # 3. Subsystem patching loop: the failing gate static while bets patch one subsystem.
    k = cfg.subsystem_k
    if len(recent) >= k:
        window = recent[-k:]
        gate = window[-1].front.gate
        subsystems = {v.front.subsystem for v in window[1:]}
        if (
            all(v.front.gate == gate and not _improved_any(v) for v in window)
            and len(subsystems) == 1
            and None not in subsystems
        ):
            ids = [v.id for v in window]
            fired.append(
                Finding(
                    SUBSYSTEM_LOOP,
                    f"gate '{gate}' static for {k} versions ({', '.join(ids)}) while the last "
                    f"{k - 1} bets patch subsystem '{subsystems.pop()}'",
                    "git ledger reflect",
                    {"gate": gate, "versions": ids},
                )
            )

    # 4. Drifted high-water: a gate's best is old and still unmatched.
    after = last_reflection(state)
    for gate in sorted(state.config.gates):
        best = standing_baseline(state, gate)
        if best is None:
            continue
        start = max(
            state.version_key(best.id),
            state.version_key(after) if after else state.version_key(best.id),
        )
        since = [v.id for v in state.versions if v.concluded and state.version_key(v.id) > start]
        if len(since) > cfg.drift_versions:
            fired.append(
                Finding(
                    DRIFT,
                    f"gate '{gate}': the best ({best.id}) is {len(since)} versions old and unmatched",
                    "git ledger reflect",
                    {"gate": gate, "best": best.id, "versions_since": since},
                )
            )
    return fired


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
            else "git ledger reflect, fill the six sections, commit it"
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
