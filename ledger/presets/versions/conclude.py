"""``git ledger conclude``: the verdict with the statistics behind it, and the baseline update."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from ledger.core import output
from ledger.core.context import open_context
from ledger.core.errors import BadInput, Refused
from ledger.core.markdown import conclusion_block, gate_table
from ledger.core.model.documents import decode_text, parse_document, set_block
from ledger.core.model.entries import VERDICTS, Conclusion, GateStat
from ledger.core.model.ids import parse_version
from ledger.core.state import Version
from ledger.core.store import Snapshot, Transition
from ledger.core.verify import frozen_config, require_clean, reserved_ids
from ledger.presets.versions import readiness
from ledger.presets.versions.runner import RunRecords
from ledger.presets.versions.verdicts import contradiction, evidence, summary
from ledger.presets.versions.views import readme_update


def allowed(target: GateStat, effect: float | None) -> dict[str, str | None]:
    """Per verdict: None if the numbers allow it, else why not."""
    return {v: contradiction(v, target, effect) for v in VERDICTS}


def dry_run(cwd: Path, vid: str, as_json: bool) -> int:
    """What the numbers allow, per gate, without writing anything."""
    ctx = open_context(cwd)
    state = ctx.state()
    version = state.version(vid)
    if version is None:
        raise state.no_version(vid)
    gates = evidence(state, vid)
    target = gates[0]
    verdicts = allowed(target, version.front.effect)
    if as_json:
        output.emit_json(
            {
                "id": vid,
                "gate": target.gate,
                "allowed": [v for v, why in verdicts.items() if why is None],
                "refused": {v: why for v, why in verdicts.items() if why is not None},
                "gates": [g.model_dump(mode="json", exclude_none=True) for g in gates],
            }
        )
        return 0
    output.say(f"{vid} (dry run, nothing written); targeted gate '{target.gate}':")
    for v, why in verdicts.items():
        output.say(f"  {v}: " + ("allowed" if why is None else f"contradicted: {why}"))
    for g in gates:
        role = "targeted" if g is target else "also measured"
        output.say(f"  [{role}] {summary('inconclusive', g)}")
    return 0


def run(
    cwd: Path,
    vid: str,
    *,
    verdict: str,
    next_text: str,
    note: str | None,
    override: str | None,
    as_json: bool,
    wait: bool = False,
) -> int:
    ctx = open_context(cwd)
    if parse_version(vid, ctx.config.ledger.id_prefix).cell:
        raise BadInput(
            f"{vid} is a matrix cell", "cells are concluded together: git ledger matrix conclude"
        )
    if verdict not in VERDICTS:
        raise BadInput(f"unknown verdict {verdict!r}", "use confirmed, refuted or inconclusive")
    if not next_text.strip():
        raise BadInput("--next is empty", "say what the loop does next")
    if override is not None and not override.strip():
        raise BadInput("--override needs a reason")
    if override is not None and ("\n" in override.strip() or "\r" in override):
        raise BadInput("--override must be one line (it becomes a commit trailer)")
    ctx.require_committed_config()
    records = RunRecords(ctx).all()
    readiness.wait_or_refuse(records, vid, wait=wait)
    if wait:
        records = RunRecords(ctx).all()

    def build(snap: Snapshot) -> Transition:
        state = ctx.state(snap)
        version = state.version(vid)
        if version is None:
            # Registered once (deleted or broken since): a refusal, not a typo.
            if vid in reserved_ids(ctx.store, ctx.config, ctx.config_file):
                require_clean(ctx.store, ctx.config, ctx.config_file, vid, snap.commit_id)
                raise Refused(
                    f"{vid}'s registration no longer parses or was withdrawn",
                    "register the next id",
                )
            raise state.no_version(vid)
        if version.front.void:
            raise Refused(f"{vid} is void ({version.front.void})", "register a new version")
        if version.concluded:
            raise Refused(
                f"{vid} is already concluded ({version.verdict})", "register a new version"
            )
        registration = require_clean(ctx.store, ctx.config, ctx.config_file, vid, snap.commit_id)
        not_ready: str | None = None
        try:  # first: seeds that were started and have no results say which and how
            readiness.check_results(ctx.store, state, vid, records, registration)
        except Refused as exc:
            if override is None:
                raise
            not_ready = exc.message  # overridden: recorded with the conclusion
        if not state.results_for(vid, version.front.gate):
            raise Refused(
                f"{vid} has no results on its gate '{version.front.gate}': nothing to conclude",
                f"measure it (git ledger run/record {vid} ...), or git ledger void {vid} --reason ...",
            )
        state = frozen_config(ctx, state, registration)
        gates = evidence(state, vid)
        target = gates[0]
        problem = contradiction(verdict, target, version.front.effect)
        if problem and override is None:
            raise Refused(
                f"[verdict-contradicted] '{verdict}' is contradicted by the numbers: {problem}",
                "conclude with the verdict the statistics support, or --override REASON (recorded forever)",
            )
        conclusion = Conclusion(
            verdict=verdict,  # type: ignore[arg-type]
            next=next_text.strip(),
            note=note,
            override=override if (problem or not_ready) else None,
            evidence=summary(
                verdict, target, version.front.effect, override if (problem or not_ready) else None
            ),
            gates=gates,
        )
        if override is not None and not problem and not not_ready:
            conclusion = conclusion.model_copy(
                update={
                    "note": ((note + " ") if note else "")
                    + f"(--override given but not needed: {override})"
                }
            )
        path = version.path
        doc = parse_document(decode_text(snap.read(path) or b"", path), path)
        front = dict(doc.front)
        front["conclusion"] = conclusion.model_dump(mode="json", exclude_none=True)
        body = set_block(doc.body, "gates", gate_table(gates))
        body = set_block(body, "conclusion", conclusion_block(conclusion))
        writes: dict[str, bytes | None] = {
            path: doc.replace(front=front, body=body).render().encode()
        }
        concluded = Version(
            version.front.model_copy(update={"conclusion": conclusion}), path, version.hypothesis
        )
        after = replace(state, versions=[concluded if v.id == vid else v for v in state.versions])
        writes.update(readme_update(snap, after))
        scope = version.front.subsystem or version.front.gate
        trailers = (("Ledger-Override", conclusion.override),) if conclusion.override else ()
        return Transition(
            kind="conclude",
            step=vid,
            subject=f"docs({scope}): {vid} log entry + baseline update",
            body=f"Verdict: {verdict}\n{conclusion.evidence}\nNext: {conclusion.next}",
            writes=writes,
            trailers=trailers,
        )

    commit_id, transition = ctx.store.transact(build)
    if as_json:
        output.emit_json({"id": vid, "commit": commit_id, "verdict": verdict})
    else:
        output.say(f"concluded {vid}: {verdict} ({commit_id[:10]})")
        body = transition.body.splitlines()
        if len(body) > 1:
            output.say(f"  {body[1]}")
    return 0
