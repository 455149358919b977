"""``git ledger void ID --reason TEXT``: close a version whose results can no longer count.

A version found tampered (see ``git ledger verify``), or measured under a wrong
setup, would otherwise wedge the loop: ``conclude`` refuses it forever. Void
closes it: its results never count, its id is never reused, and it shows in
status, log and reports forever; the loop goes on with the next id.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from ledger.core import output
from ledger.core.context import Context, open_context
from ledger.core.errors import BadInput, Refused
from ledger.core.model.documents import decode_text, parse_document
from ledger.core.model.ids import one_line, parse_version
from ledger.core.state import Version
from ledger.core.store import Snapshot, Transition
from ledger.presets.versions.views import readme_update


def refuse_rewriting_the_past(ctx: Context, vid: str, tip: str | None, verdict: str) -> None:
    """Void never rewrites the past: a concluded version whose history verifies keeps its
    verdict. Every later verdict was judged against the baseline it set and every trigger
    counted it; voiding it would make a worse version "confirmed" after the fact, or
    silence the refutation tripwire. A concluded version with a history finding (its
    registration or results tampered) can be voided: that is what void is for."""
    from ledger.core.verify import verify

    report = verify(ctx.store, ctx.config, ctx.config_file, tip)
    reg = report.registrations.get(vid)
    if reg is not None and report.for_step(vid, reg, ctx.store):
        return
    raise Refused(
        f"{vid} is concluded ({verdict}) and its history verifies: voiding it would rewrite "
        "the past (the baseline and the triggers every later version was judged by)",
        "void is for versions whose results cannot count; register the next version, and "
        "say in its bet what it corrects",
    )


def run(cwd: Path, vid: str, reason: str, as_json: bool) -> int:
    ctx = open_context(cwd)
    parsed = parse_version(vid, ctx.config.ledger.id_prefix)
    if parsed.cell:
        raise BadInput(f"{vid} is a matrix cell", "conclude its matrix with --none instead")
    reason = one_line(reason, "--reason")

    def build(snap: Snapshot) -> Transition:
        state = ctx.state(snap)
        version = state.version(vid)
        if version is None:
            raise state.no_version(vid)
        if version.front.void:
            raise Refused(f"{vid} is already void ({version.front.void})")
        if version.front.conclusion is not None:
            refuse_rewriting_the_past(ctx, vid, snap.commit_id, version.front.conclusion.verdict)
        path = version.path
        doc = parse_document(decode_text(snap.read(path) or b"", path), path)
        front = {**doc.front, "void": reason}
        note = f"\n> **Void**: {reason} (`git ledger void`); its results never count.\n"
        writes: dict[str, bytes | None] = {
            path: doc.replace(front=front, body=doc.body.rstrip("\n") + "\n" + note)
            .render()
            .encode()
        }
        closed = Version(
            version.front.model_copy(update={"void": reason}), path, version.hypothesis
        )
        after = replace(state, versions=[closed if v.id == vid else v for v in state.versions])
        writes.update(readme_update(snap, after))
        return Transition(
            kind="void",
            step=vid,
            subject=f"docs(ledger): {vid} void",
            writes=writes,
            trailers=(("Ledger-Reason", reason),),
        )

    commit_id, _ = ctx.store.transact(build)
    if as_json:
        output.emit_json({"id": vid, "commit": commit_id, "void": reason})
    else:
        output.say(f"{vid} is void ({commit_id[:10]}): {reason}")
        output.say("next: register the next version (this id is never reused)")
    return 0
