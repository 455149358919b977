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
    force: str | None = None,
    criterion: str | None = None,
    evidence: str | None = None,
) -> int:
    from ledger.presets.versions.phaseconds import declare_conditions, resume_criterion

    ctx = open_context(cwd)
    if force is not None and not force.strip():
        raise BadInput("--force needs a reason", "e.g. --force 'the evaluation set is retired'")
    if action == "resume" and force is None and (not criterion or not (evidence or "").strip()):
        raise BadInput(
            "phase resume names the resume criterion it meets and its evidence",
            "--criterion TEXT|N --evidence TEXT (e.g. 'independent windows now 12 >= 10'), "
            "or --force REASON",
        )
    held: list[str] = []
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
            met = resume_criterion(state.phase.resume_criteria, criterion)
            if force is None and met is None:
                listed = "; ".join(
                    f"{i}. {c}" for i, c in enumerate(state.phase.resume_criteria, 1)
                )
                raise Refused(
                    f"[resume-criterion] {criterion!r} is none of the recorded resume "
                    f"criteria: {listed or '(none)'}",
                    "--criterion N (or its text) --evidence TEXT, or --force REASON",
                )
            front = state.phase.model_copy(
                update={
                    "state": "active",
                    "resumed_on": met if force is None else f"forced: {force.strip()}",
                    "resume_evidence": (evidence or "").strip() or None,
                }
            )
        else:
            conditions = declare_conditions(state)
            failed = [c for c in conditions if not c.held]
            if failed and force is None:
                raise Refused(
                    "[phase-conditions] a phase transition needs its three conditions; "
                    + "; ".join(f"{c.key} {c.text()}" for c in failed),
                    "go on with the loop, or --force REASON (recorded with the phase)",
                )
            held[:] = [f"{c.key} {c.text()}" for c in conditions]
            front = PhaseFront(
                state="parked",
                declared_after=last,
                reason=reason or "",
                exhausted=list(exhausted),
                resume_criteria=list(resume_criteria),
                conditions={c.key: c.text() for c in conditions},
                force=force.strip() if failed and force is not None else None,
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
        body += ["", "## Conditions", ""] + [
            f"- {key}: {text}" for key, text in sorted(front.conditions.items())
        ]
        if front.force:
            body.append(f"- forced: {front.force}")
        if front.state == "active" and front.resumed_on:
            body += ["", "## Resumed", "", f"- on: {front.resumed_on}"]
            if front.resume_evidence:
                body.append(f"- evidence: {front.resume_evidence}")
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
        for line in held:
            output.say(f"  {line}")
    return 0
