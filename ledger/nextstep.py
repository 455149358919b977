"""The single next action of the loop, from the repository alone.

After a crash or a context reset, a person or an agent asks ``git ledger
next`` and gets one action with the exact command; this module decides it
from the ledger state (pure).
"""

from __future__ import annotations

from dataclasses import dataclass

from ledger import rules
from ledger.state import LedgerState


@dataclass(frozen=True)
class NextAction:
    action: str
    command: str
    reason: str

    def as_dict(self) -> dict[str, str]:
        return {"action": self.action, "command": self.command, "reason": self.reason}


def next_action(state: LedgerState) -> NextAction:
    if state.problems:
        path, error = state.problems[0]
        return NextAction("fix-entry", f"$EDITOR {path}", f"{path} does not parse: {error}")
    prefix = state.config.ledger.id_prefix
    gates = sorted(state.config.gates)
    gate = gates[0] if gates else "GATE"
    opened = state.open_versions()
    if opened:
        version = opened[0]
        have = state.results_for(version.id, version.front.gate)
        if not have:
            run = f"git ledger run {version.id} --gate {version.front.gate} --seeds 1,2,3"
            if state.config.run.command is None:
                run = f"git ledger record {version.id} --gate {version.front.gate} --seed 1 RESULTS.json"
            return NextAction(
                "measure", run, f"{version.id} is registered; commit its code, then measure it"
            )
        return NextAction(
            "conclude",
            f"git ledger conclude {version.id} --verdict confirmed|refuted|inconclusive --next TEXT",
            f"{version.id} has {len(have)} result(s) on '{version.front.gate}'",
        )
    if state.phase is not None and state.phase.state == "parked":
        return NextAction(
            "resume-phase",
            "git ledger phase resume",
            "the campaign is parked; resume once the criteria in CAMPAIGN_STATUS.md hold",
        )
    fired, incomplete = rules.reflection_pending(state)
    if fired:
        if incomplete:
            return NextAction(
                "complete-reflection",
                f"$EDITOR {state.config.dir}/{incomplete}.md && git commit",
                f"{incomplete} has empty sections; a complete reflection lifts the block",
            )
        return NextAction(
            "reflect",
            "git ledger reflect",
            "triggers fired: " + "; ".join(f.message for f in fired),
        )
    cite = rules.uncited_reflection(state)
    last = state.versions[-1].id if state.versions else None
    suggested = f"{prefix}{state.version_key(last).number + 1}" if last else f"{prefix}1"
    cmd = f"git ledger register {suggested} --bet TEXT --gate {gate} --files a.py --falsifier TEXT"
    if cite:
        cmd += f" --cites {cite}"
    reason = "no version yet" if last is None else f"{last} is concluded"
    refuted = state.versions[-1] if state.versions else None
    if refuted is not None and refuted.verdict == "refuted" and refuted.front.matrix is None:
        rid = refuted.id
        revert = (
            f"git revert --no-edit $(git log --format=%H --grep='^Ledger-Step: {rid}$' "
            f"-- . ':(exclude){state.config.dir}')"
        )
        return NextAction(
            "revert-or-build-on",
            revert,
            f"{rid} was refuted and its code is still on the branch: revert its code commits "
            f"(this command, if not done yet), or build on it with a stated reason: {cmd} "
            f"--parent {rid} (say in the bet why refuted code stays)",
        )
    return NextAction("register", cmd, f"{reason}: pre-register the next bet before any code")
