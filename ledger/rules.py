"""Every discipline rule, shared by the CLI, the hooks and verdicts.

Pure: a state (and, for history rules, a list of commits) goes in, findings
come out. Nothing here reads the repository or prints; callers decide whether
a finding refuses (exit 1) or warns.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ledger.baseline import ESTABLISHES, IMPROVED, standing_baseline
from ledger.campaign import Campaign, Candidate
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
            gate_cfg = state.config.gates.get(stat.gate)
            # Per gate where set: one tolerance cannot fit metrics of different scales.
            tolerance = cfg.noop_tolerance
            if gate_cfg is not None and gate_cfg.noop_tolerance is not None:
                tolerance = gate_cfg.noop_tolerance
            if (
                stat.gate in version.front.noop_gates
                and stat.delta is not None
                and (abs(stat.delta) > tolerance)
            ):
                fired.append(
                    Finding(
                        EVAL_NOISE,
                        f"{version.id}: gate '{stat.gate}' was registered as unaffected but moved "
                        f"by {stat.delta:+.4g} (tolerance {tolerance:g})",
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


# --- campaign ------------------------------------------------------------------


def promotion_problems(camp: Campaign, new: Candidate) -> list[Finding]:
    """Why ``new`` may not be promoted: it must improve or hold the target against the
    promoted head beyond the noise floor, stay within the correctness tolerance fixed
    at setup, and say why it won when another candidate's gain was equal."""
    from ledger.campaign import table

    cfg = table(camp.config)
    target = cfg.target_metric
    head = camp.head()
    found: list[Finding] = []
    if head is None:
        return [
            Finding(
                "promotion-needs-base",
                "no base is recorded in this benchmark epoch",
                "git ledger candidate record --verdict base ...",
            )
        ]
    value, ref = new.number(target), head.number(target)
    if value is None or ref is None:
        found.append(
            Finding(
                "promotion-evidence",
                f"'{target}' is N/A for {new.commit[:10]} or the head",
                "measure the target metric, or record the candidate as held",
            )
        )
    else:
        sign = 1.0 if cfg.directions.get(target, "higher") == "higher" else -1.0
        if (value - ref) * sign < -cfg.noise_floor:
            found.append(
                Finding(
                    "promotion-evidence",
                    f"'{target}' {value:g} is worse than the head {head.commit[:10]} ({ref:g}) beyond the "
                    f"noise floor {cfg.noise_floor:g}",
                    "record it as rejected with a reason",
                )
            )
        for other in camp.current():
            other_value = other.number(target)
            if (
                other.verdict in ("promoted", "held")
                and other.commit != new.commit
                and other_value is not None
                and abs(other_value - value) <= cfg.noise_floor
                and "invasive" not in new.notes.lower()
            ):
                found.append(
                    Finding(
                        "equal-gains",
                        f"{other.commit[:10]} ({other.verdict}) has an equal '{target}' "
                        f"({other_value:g} vs {value:g})",
                        "say in --notes why the less invasive one won",
                    )
                )
                break
    correctness = new.number("correctness")
    if "correctness" in cfg.measurements:
        if correctness is None:
            found.append(
                Finding(
                    "correctness",
                    "correctness is N/A: a promotion needs it measured",
                    "measure correctness",
                )
            )
        elif abs(correctness) > cfg.correctness_tolerance:
            found.append(
                Finding(
                    "correctness",
                    f"correctness {correctness:g} exceeds the tolerance "
                    f"{cfg.correctness_tolerance:g} fixed at setup",
                    "fix the candidate; the tolerance stays",
                )
            )
    return found


def tolerance_widened(camp: Campaign) -> Finding | None:
    """The tolerance in ledger.toml must equal the one it held when the contract was committed."""
    from ledger.campaign import table

    frozen = camp.setup_tolerance
    if frozen is None:
        return None
    current = table(camp.config).correctness_tolerance
    if current != frozen:
        return Finding(
            "tolerance-frozen",
            f"[campaign] correctness_tolerance is {current:g} but it was {frozen:g} when the "
            "contract was committed",
            f"restore correctness_tolerance = {frozen:g} (widen-to-pass is not allowed)",
        )
    return None


def finish_outstanding(camp: Campaign, required_present: dict[str, bool]) -> list[Finding]:
    """Everything that keeps the campaign from being finished, each with its fix."""
    from ledger.campaign import render_views, table

    cfg = table(camp.config)
    found: list[Finding] = []
    if camp.contract is None:
        found.append(Finding("contract", "the contract is not committed", "git ledger contract"))
    base = camp.base()
    if base is None:
        fix = "git ledger candidate record --verdict base --commit SHA ..."
        why = (
            "no base is recorded"
            if camp.epoch == 0
            else f"no fresh base since benchmark adjustment {camp.epoch}"
        )
        found.append(Finding("base", why, fix))
    for c in camp.candidates:
        if c.verdict == "rejected" and not c.reason.strip():
            found.append(
                Finding(
                    "rejection-reason",
                    f"{c.path}: rejected without a reason",
                    f"git ledger candidate record --commit {c.commit[:10]} --verdict rejected --reason ...",
                )
            )
        for name in cfg.measurements:
            value = c.measurements.get(name)
            if value is None or (isinstance(value, str) and not value.startswith("N/A:")):
                found.append(
                    Finding(
                        "measurement",
                        f"{c.path}: '{name}' is neither a number nor explained",
                        "record the candidate again with every measurement",
                    )
                )
    rendered = render_views(camp)
    for name, data in rendered.items():
        if camp.views.get(name) != data:
            found.append(
                Finding(
                    "views",
                    f"{camp.config.dir}/{name} is out of step with the candidate files",
                    "regenerate it: git ledger candidate record rewrites the views",
                )
            )
    if camp.epoch > 0:
        previous = camp.previous_head()
        if previous is not None and not any(
            c.commit == previous.commit and c.epoch == camp.epoch for c in camp.candidates
        ):
            found.append(
                Finding(
                    "stale-numbers",
                    f"the head {previous.commit[:10]} was measured before benchmark adjustment "
                    f"{camp.epoch}",
                    f"git ledger candidate record --commit {previous.commit[:10]} --verdict held "
                    "--reason re-measured ... (re-measured)",
                )
            )
    for path, error in camp.problems:
        found.append(Finding("entry-schema", f"{path}: {error}", f"fix or restore {path}"))
    report = camp.report or ""
    if not any(line.strip().lower() == "status: closed" for line in report.splitlines()):
        found.append(
            Finding(
                "report",
                f"{camp.config.dir}/latest-report.md has no line 'status: closed'",
                "git ledger close --summary TEXT (or write it, end it with 'status: closed', "
                "commit it)",
            )
        )
    from ledger.campaign import unnamed_adjustments

    missing = unnamed_adjustments(camp)
    if missing:
        found.append(
            Finding(
                "report-adjustments",
                f"{camp.config.dir}/latest-report.md does not name benchmark adjustment(s) "
                f"{', '.join(str(n) for n in missing)}",
                "git ledger close --summary TEXT (or add a line 'adjustment N: ...')",
            )
        )
    for path, present in sorted(required_present.items()):
        if not present:
            found.append(
                Finding(
                    "required-record",
                    f"{path} is required by [campaign] required_records",
                    f"add {path} and commit it",
                )
            )
    tol = tolerance_widened(camp)
    if tol is not None:
        found.append(tol)
    return found
