"""``git ledger conclude``: the verdict with the statistics behind it, and the baseline update."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from ledger.core import output
from ledger.core.context import Context, open_context
from ledger.core.errors import BadInput, Refused
from ledger.core.markdown import conclusion_block, gate_table
from ledger.core.model.documents import decode_text, parse_document, set_block
from ledger.core.model.entries import VERDICTS, Conclusion, GateStat
from ledger.core.model.ids import parse_version
from ledger.core.state import LedgerState, Version
from ledger.core.store import Snapshot, Transition
from ledger.core.verify import require_clean, reserved_ids
from ledger.presets.versions import readiness
from ledger.presets.versions.reading import Reading, read
from ledger.presets.versions.runrecords import RunRecords
from ledger.presets.versions.verdicts import contradiction, regressions, summary
from ledger.presets.versions.views import readme_update
from ledger.presets.versions.yellow import yellow_flag


def allowed(target: GateStat, effect: float | None) -> dict[str, str | None]:
    """Per verdict: None if the numbers allow it, else why not (bench/calibration.py)."""
    return {v: contradiction(v, target, effect) for v in VERDICTS}


@dataclass(frozen=True)
class Plan:
    """What conclude would do on a tip: the version's reading, and the refusals that
    stand before any verdict, in the order conclude meets them (each with whether
    ``--override`` may pass it)."""

    reading: Reading
    refusals: tuple[tuple[Refused, bool], ...]
    commits: tuple[str, ...] = ()  # the version's code commits, oldest first

    def blocking(self, override: str | None) -> Refused | None:
        """The refusal conclude raises before the verdict (None: it goes on)."""
        return next((exc for exc, may in self.refusals if not may or override is None), None)

    def not_ready(self) -> str | None:
        """Why the results are not ready, recorded with an overriding conclusion."""
        return next((exc.message for exc, may in self.refusals if may), None)


def plan(ctx: Context, snap: Snapshot, vid: str, records: list[dict[str, object]]) -> Plan:
    """Conclude's checks on ``snap``, up to the verdict: the code the dry run shares."""
    state = ctx.state(snap)
    version = state.version(vid)
    if version is None:
        # Registered once (deleted or broken since): a refusal, not a typo.
        if vid in reserved_ids(ctx.store, ctx.config, ctx.config_file):
            require_clean(ctx.store, ctx.config, ctx.config_file, vid, snap.commit_id)
            raise Refused(
                f"{vid}'s registration no longer parses or was withdrawn", "register the next id"
            )
        raise state.no_version(vid)
    refusals: list[tuple[Refused, bool]] = []
    if version.front.void:
        refusals.append(
            (Refused(f"{vid} is void ({version.front.void})", "register a new version"), False)
        )
    elif version.concluded:
        refusals.append(
            (
                Refused(
                    f"{vid} is already concluded ({version.verdict})", "register a new version"
                ),
                False,
            )
        )
    registration: str | None
    try:
        registration = require_clean(ctx.store, ctx.config, ctx.config_file, vid, snap.commit_id)
    except Refused as exc:
        refusals.append((exc, False))
        found = readiness.history_of(state, ctx.store, [vid]).get(vid)
        registration = found[0] if found else None
    commits = readiness.code_commits(ctx.store, vid, registration) if registration else None
    reading = read(ctx.store, state, vid, registration, commits, records)
    try:  # seeds that were started and have no results say which and how
        readiness.check_results(state, vid, reading.missing, reading.flags)
    except Refused as exc:
        refusals.append((exc, True))
    if not reading.results:
        refusals.append(
            (
                Refused(
                    f"{vid} has no results on its gate '{reading.gate}': nothing to conclude",
                    f"measure it (git ledger run/record {vid} ...), or "
                    f"git ledger void {vid} --reason ...",
                ),
                False,
            )
        )
    return Plan(reading, tuple(refusals), tuple(commits or ()))


def _not_a_cell(ctx: Context, vid: str) -> None:
    if parse_version(vid, ctx.config.ledger.id_prefix).cell:
        raise BadInput(
            f"{vid} is a matrix cell", "cells are concluded together: git ledger matrix conclude"
        )


def dry_run(cwd: Path, vid: str, as_json: bool) -> int:
    """What conclude would say to each verdict now, without writing anything."""
    ctx = open_context(cwd)
    _not_a_cell(ctx, vid)
    records = RunRecords(ctx).evidence()
    planned = plan(ctx, ctx.store.snapshot(), vid, records)
    reading = planned.reading
    blocked = planned.blocking(None)
    try:
        readiness.wait_or_refuse(records, vid, wait=False)
    except Refused as exc:
        blocked = exc
    target = reading.target
    verdicts = {
        v: blocked.one_line() if blocked is not None else why
        for v, why in reading.allowed().items()
    }
    if as_json:
        output.emit_json(
            {
                "id": vid,
                "gate": target.gate,
                "allowed": [v for v, why in verdicts.items() if why is None],
                "refused": {v: why for v, why in verdicts.items() if why is not None},
                "blocked": blocked.one_line() if blocked is not None else None,
                "gates": [g.model_dump(mode="json", exclude_none=True) for g in reading.gates],
            }
        )
        return 0
    output.say(f"{vid} (dry run, nothing written); targeted gate '{target.gate}':")
    if blocked is not None:
        output.say(f"  refused before any verdict: {blocked.one_line()}")
    for v, why in reading.allowed().items():
        output.say(f"  {v}: " + ("allowed" if why is None else f"contradicted: {why}"))
    for g in reading.gates:
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
    _not_a_cell(ctx, vid)
    if verdict not in VERDICTS:
        raise BadInput(f"unknown verdict {verdict!r}", "use confirmed, refuted or inconclusive")
    if not next_text.strip():
        raise BadInput("--next is empty", "say what the loop does next")
    if override is not None and not override.strip():
        raise BadInput("--override needs a reason")
    if override is not None and ("\n" in override.strip() or "\r" in override):
        raise BadInput("--override must be one line (it becomes a commit trailer)")
    ctx.require_committed_config()
    records = RunRecords(ctx).evidence()
    readiness.wait_or_refuse(records, vid, wait=wait)
    if wait:
        records = RunRecords(ctx).evidence()

    flagged: dict[str, str | None] = {}
    written: dict[str, LedgerState] = {}

    def build(snap: Snapshot) -> Transition:
        planned = plan(ctx, snap, vid, records)
        refused = planned.blocking(override)
        if refused is not None:
            raise refused
        not_ready = planned.not_ready()
        reading = planned.reading
        version = reading.version
        state = reading.state
        gates = list(reading.gates)
        target = reading.target
        problem = reading.contradiction(verdict)
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
            evidence=" ".join(
                part
                for part in (
                    summary(
                        verdict,
                        target,
                        version.front.effect,
                        override if (problem or not_ready) else None,
                    ),
                    regressions(gates, target),
                )
                if part
            ),
            gates=gates,
            yellow_flag=yellow_flag(ctx, vid, list(planned.commits)),
        )
        flagged["text"] = conclusion.yellow_flag
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
        # The verdict is the registration's configuration's; the views are the ledger's
        # under today's, as every other transition, the hooks, sync and the merge driver
        # render them (under the registration's, a `config set` since then made the
        # next hand commit of a ledger file refused as views-drift).
        after = replace(after, config=ctx.config)
        writes.update(readme_update(snap, after))
        written["state"] = after  # the ledger this transition writes
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
    flag = flagged.get("text")
    if as_json:
        # The flag only when raised: the schema of a plain conclusion stays as it was.
        extra = {"yellow_flag": flag} if flag else {}
        output.emit_json({"id": vid, "commit": commit_id, "verdict": verdict, **extra})
    else:
        output.say(f"concluded {vid}: {verdict} ({commit_id[:10]})")
        body = transition.body.splitlines()
        if len(body) > 1:
            output.say(f"  {body[1]}")
        if flag:
            output.say(f"  yellow flag: {flag}")
        from ledger.presets.versions.saynext import say_next

        # The `next:` line judges the ledger just written under today's configuration,
        # without reading it again.
        now = replace(written["state"], commit_id=commit_id)
        say_next(cwd, ctx, now)
    return 0
