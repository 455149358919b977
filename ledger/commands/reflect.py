"""``git ledger triggers`` and ``git ledger reflect``: the loop stops itself when circling."""

from __future__ import annotations

from pathlib import Path

from ledger import output, rules
from ledger.context import Context, open_context
from ledger.errors import BadInput, Refused
from ledger.model.documents import Document
from ledger.model.entries import ReflectionFront
from ledger.model.ids import parse_version
from ledger.resources import read_resource, render
from ledger.state import parse_entry
from ledger.store import Snapshot, Transition, write_atomic


def run_triggers(cwd: Path, as_json: bool) -> int:
    ctx = open_context(cwd)
    state = ctx.state()
    fired = rules.triggers(state)
    if as_json:
        output.emit_json(
            [
                {"rule": f.rule, "message": f.message, "fix": f.fix, "evidence": f.evidence}
                for f in fired
            ]
        )
    else:
        for finding in fired:
            output.say(finding.line())
        if not fired:
            output.say("no trigger fires")
    return 1 if fired else 0


def run_reflect(cwd: Path, after: str | None, commit: bool, as_json: bool) -> int:
    """Write REFLECTION_<after>.md (or, with --commit, commit a filled one)."""
    ctx = open_context(cwd)
    workdir = ctx.store.require_workdir()
    state = ctx.state()
    concluded = state.concluded()
    if after is None:
        if not concluded:
            raise BadInput("nothing to reflect on: no version is concluded yet")
        after = concluded[-1].id
    parse_version(after, ctx.config.ledger.id_prefix)
    if state.version(after) is None:
        raise BadInput(f"no version {after!r} in {ctx.dir}/", "see 'git ledger status'")
    rid = f"REFLECTION_{after}"
    rel = f"{ctx.dir}/{rid}.md"
    path = workdir / rel
    if commit:
        return _commit(ctx, rid, rel, path, as_json)
    existing = state.reflection_for(after)
    if existing is not None:
        raise Refused(f"{rid} is already committed", f"edit {rel} and commit it")
    if path.exists():
        raise Refused(f"{rel} already exists in the working tree", "fill it in and commit it")
    fired = [f.rule for f in rules.triggers(state)]
    front = ReflectionFront(id=rid, after=after, triggers=fired)
    body = render(
        read_resource("templates", "reflection.md"),
        id=rid,
        after=after,
        triggers=", ".join(fired) or "none",
    )
    write_atomic(path, Document(front=front.model_dump(mode="json"), body=body).render().encode())
    if as_json:
        output.emit_json({"id": rid, "path": rel, "triggers": fired})
    else:
        output.say(
            f"wrote {rel}: fill in its six sections, then commit it "
            f"(git commit, or git ledger reflect {after} --commit)"
        )
    return 0


def _commit(ctx: Context, rid: str, rel: str, path: Path, as_json: bool) -> int:
    if not path.is_file():
        after = rid.removeprefix("REFLECTION_")
        raise BadInput(f"{rel} does not exist", f"write it first: git ledger reflect {after}")
    data = ctx.store.worktree_content(rel)  # what git would commit (autocrlf: LF)
    missing = parse_entry("reflection", data, rel)["missing"]
    if missing:
        raise Refused(
            f"[reflection-incomplete] {rel} has empty sections: {', '.join(missing)}",
            "fill every section; an incomplete reflection does not lift the block",
        )

    def build(snap: Snapshot) -> Transition:
        return Transition(
            kind="reflect", step=rid, subject=f"docs(ledger): {rid}", writes={rel: data}
        )

    commit_id, _ = ctx.store.transact(build)
    if as_json:
        output.emit_json({"id": rid, "commit": commit_id, "path": rel})
    else:
        output.say(f"committed {rel} ({commit_id[:10]})")
    return 0
