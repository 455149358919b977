"""``git ledger phase declare|resume``: park the loop with explicit resume criteria."""

from __future__ import annotations

from pathlib import Path

from ledger.core import output
from ledger.core.context import open_context
from ledger.core.errors import BadInput, Refused
from ledger.core.model.documents import Document
from ledger.core.model.entries import PhaseFront
from ledger.core.state import PHASE_FILE
from ledger.core.store import Snapshot, Transition
from ledger.presets.versions.views import render_baseline


def run(
    cwd: Path,
    action: str,
    *,
    reason: str | None,
    exhausted: tuple[str, ...],
    resume_criteria: tuple[str, ...],
    as_json: bool,
) -> int:
    ctx = open_context(cwd)
    if action == "declare":
        if not reason or not reason.strip():
            raise BadInput("phase declare needs --reason", "say why the loop is parked")
        if not resume_criteria:
            raise BadInput(
                "phase declare needs at least one --resume-criterion",
                "say what must hold before registration resumes",
            )

    def build(snap: Snapshot) -> Transition:
        state = ctx.state(snap)
        current = state.phase.state if state.phase else "active"
        if action == "declare" and current == "parked":
            raise Refused("the loop is already parked", "git ledger phase resume")
        if action == "resume" and current != "parked":
            raise Refused("the loop is not parked", "nothing to resume")
        if state.open_versions():
            raise Refused(f"{state.open_versions()[0].id} is still open", "conclude it first")
        last = state.versions[-1].id if state.versions else None
        if action == "resume" and state.phase is not None:
            front = state.phase.model_copy(update={"state": "active"})
        else:
            front = PhaseFront(
                state="parked",
                declared_after=last,
                reason=reason or "",
                exhausted=list(exhausted),
                resume_criteria=list(resume_criteria),
            )
        body = [
            "",
            "# Campaign status",
            "",
            f"**Phase: {front.state}**" + (f" (after {last})" if last else ""),
            "",
            f"Reason: {front.reason}",
            "",
            "## Standing baseline",
            "",
            render_baseline(state).rstrip(),
            "",
            "## Exhausted",
            "",
        ]
        body += [f"- {item}" for item in front.exhausted] or ["- (none listed)"]
        body += ["", "## Resume criteria", ""] + [f"- {item}" for item in front.resume_criteria]
        text = Document(front=front.model_dump(mode="json"), body="\n".join(body) + "\n").render()
        return Transition(
            kind="phase",
            step=f"phase-{action}",
            subject=f"docs(ledger): phase {'parked' if action == 'declare' else 'resumed'}",
            writes={f"{ctx.dir}/{PHASE_FILE}": text.encode()},
        )

    commit_id, _ = ctx.store.transact(build)
    if as_json:
        output.emit_json(
            {"commit": commit_id, "phase": "parked" if action == "declare" else "active"}
        )
    else:
        output.say(f"phase {'parked' if action == 'declare' else 'resumed'} ({commit_id[:10]})")
    return 0
