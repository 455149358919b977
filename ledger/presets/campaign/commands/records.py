"""The campaign's records: ``candidate record``, ``benchmark adjust``, ``mistake add``.

Each is one entry file and the regenerated views in one transition; a
candidate is refused before it is written when the rules (one base per
benchmark epoch, promotion bars, the setup tolerance) say no.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from ledger.core.errors import BadInput, Refused
from ledger.core.historyguard import require_verified_history
from ledger.core.model.documents import dump_json
from ledger.core.store import Snapshot, Transition
from ledger.presets.campaign import loop as campaign
from ledger.presets.campaign import rules
from ledger.presets.campaign.commands.common import is_transition, open_campaign, require_owner, say
from ledger.presets.campaign.judge import judge
from ledger.presets.campaign.loop import Candidate


def candidate_record(
    cwd: Path,
    *,
    commit: str,
    verdict: str,
    reason: str | None,
    measures: tuple[str, ...],
    aliases: dict[str, str | None],
    notes: str | None,
    as_json: bool,
    kind: str | None = None,
    larger_diff_reason: str | None = None,
    run: bool = False,
    repeats: int | None = None,
) -> int:
    ctx = open_campaign(cwd)
    if verdict not in campaign.VERDICTS:
        raise BadInput(f"unknown verdict {verdict!r}", f"one of {', '.join(campaign.VERDICTS)}")
    if verdict in ("rejected", "promoted", "held") and not (reason or "").strip():
        raise BadInput(f"a {verdict} candidate needs --reason", f"say why it was {verdict}")
    given = measures or any(v is not None for v in aliases.values())
    if given and run:
        raise BadInput("--run measures the candidate itself", "give --run or the measurements")
    if repeats is not None and not run:
        raise BadInput("--repeats is the number of runs of --run", "add --run, or drop --repeats")
    sha = ctx.store.resolve(commit)
    if sha is None:
        raise BadInput(f"unknown commit {commit!r}", "give the candidate's commit (sha or ref)")
    if is_transition(ctx, sha):
        raise BadInput(
            f"{sha[:10]} is a ledger transition, not a candidate",
            "commit the candidate's code, then record that commit",
        )
    # Never judged against a head forged past the hooks (a verdict flipped by hand).
    require_verified_history(ctx)
    from ledger.presets.campaign.evidence import measure_change

    change_kind, diff = measure_change(ctx, sha, kind)
    provenance = None
    if run:
        # The command it starts is the one on record, never an uncommitted edit of it.
        ctx.require_committed_config()
        from ledger.presets.campaign import runner
        from ledger.presets.campaign.evidence import instrument, script_blob_differs

        now = campaign.load(ctx.config, ctx.store.snapshot())
        blob, overlay = instrument(ctx, now, sha)
        # Refused before anything runs, and again when it is recorded (the same rule).
        stale = script_blob_differs(ctx, now, blob)
        if stale is not None:
            raise Refused.of([stale])
        measures, provenance = runner.measure(ctx, sha, repeats, blob, overlay)
        aliases = {}
    values, repeats_of = campaign.parse_repeats(ctx.config, measures, aliases)

    def build(snap: Snapshot) -> Transition:
        camp = campaign.load(ctx.config, snap, ctx.store)
        require_owner(ctx, camp.owner)
        if camp.contract is None:
            raise Refused("no contract is committed yet", "git ledger contract")
        widened = rules.tolerance_widened(camp)
        if widened is not None:
            raise Refused.of([widened])
        from ledger.presets.campaign.evidence import script_changed

        changed = script_changed(ctx, camp)
        if changed is not None:
            raise Refused.of([changed])
        if provenance is not None:
            from ledger.presets.campaign.evidence import script_blob_differs

            stale = script_blob_differs(ctx, camp, provenance["script_blob"])
            if stale is not None:
                raise Refused.of([stale])
        existing_base = camp.base()
        if verdict == "base" and existing_base is not None:
            raise BadInput(
                f"a base is already recorded in this benchmark epoch ({existing_base.commit[:10]})",
                "only one base per epoch; after 'benchmark adjust' record a fresh one",
            )
        if verdict != "base" and existing_base is None:
            raise Refused(
                "no base is recorded in this benchmark epoch",
                "git ledger candidate record --commit SHA --verdict base --measure ...",
            )
        path = campaign.candidate_path(ctx.config, sha, camp.epoch)
        if snap.read(path) is not None:
            raise BadInput(f"{sha[:10]} is already recorded in this benchmark epoch", f"see {path}")
        seq = max((c.seq for c in camp.candidates), default=0) + 1
        new = Candidate(
            path=path,
            commit=sha,
            seq=seq,
            epoch=camp.epoch,
            verdict=verdict,
            reason=(reason or "").strip(),
            measurements=values,
            notes=(notes or "").strip(),
            repeats=repeats_of,
            kind=change_kind,
            diff=diff,
            larger_diff_reason=(larger_diff_reason or "").strip(),
            provenance=provenance,
        )
        if verdict in ("promoted", "held"):
            from ledger.presets.campaign.evidence import measured_with

            problems = measured_with(ctx, camp, sha) + rules.promotion_problems(camp, new)
            if problems:
                raise Refused.of(problems)
        if verdict != "base":
            # The comparison as recorded: the report states n, σ, Δ and the threshold.
            judged = judge(camp, new)
            if judged is not None:
                new = replace(new, comparison=judged.as_dict())
                judgements.append(judged.line())
        camp.candidates.append(new)
        writes: dict[str, bytes | None] = {path: campaign.candidate_bytes(new)}
        writes.update(campaign.view_writes(camp))
        return Transition(
            kind="candidate",
            step=sha[:12],
            subject=f"docs(campaign): candidate {sha[:10]} {verdict}",
            body=new.reason,
            writes=writes,
        )

    judgements: list[str] = []
    commit_id, _ = ctx.store.transact(build)
    line = f"recorded candidate {sha[:10]} as {verdict} ({commit_id[:10]})"
    say(
        as_json,
        {
            "commit": commit_id,
            "candidate": sha,
            "verdict": verdict,
            "measurements": values,
            "provenance": provenance,
            "comparison": judgements[-1] if judgements else None,
        },
        line + (f"\n{judgements[-1]}" if judgements else ""),
    )
    return 0


def benchmark_adjust(cwd: Path, reason: str, as_json: bool) -> int:
    ctx = open_campaign(cwd)
    if not reason.strip():
        raise BadInput("--reason is empty", "say how the measuring script changed")
    require_verified_history(ctx)

    def build(snap: Snapshot) -> Transition:
        camp = campaign.load(ctx.config, snap)
        require_owner(ctx, camp.owner)
        epoch = camp.epoch + 1
        camp.epochs.append({"epoch": epoch, "reason": reason.strip()})
        writes: dict[str, bytes | None] = {
            f"{ctx.dir}/benchmark/adjust-{epoch:03d}.json": dump_json(
                {"epoch": epoch, "reason": reason.strip()}
            ).encode(),
        }
        writes.update(campaign.view_writes(camp))
        return Transition(
            kind="benchmark-adjust",
            step=f"epoch-{epoch}",
            subject=f"docs(campaign): benchmark adjustment {epoch}",
            body=reason.strip(),
            writes=writes,
        )

    commit_id, transition = ctx.store.transact(build)
    say(
        as_json,
        {"commit": commit_id, "step": transition.step},
        f"benchmark adjusted ({transition.step}); earlier numbers are invalidated: record a fresh base "
        "and re-measure the head",
    )
    return 0


def mistake_add(cwd: Path, text: str, caught_by: str, should_have: str, as_json: bool) -> int:
    ctx = open_campaign(cwd)
    for name, value in (
        ("TEXT", text),
        ("--caught-by", caught_by),
        ("--should-have-caught", should_have),
    ):
        if not value.strip():
            raise BadInput(f"{name} is empty")
    require_verified_history(ctx)

    def build(snap: Snapshot) -> Transition:
        camp = campaign.load(ctx.config, snap)
        require_owner(ctx, camp.owner)
        seq = len(camp.mistakes) + 1
        entry = {
            "seq": seq,
            "text": text.strip(),
            "caught_by": caught_by.strip(),
            "should_have_caught": should_have.strip(),
        }
        camp.mistakes.append(entry)
        writes: dict[str, bytes | None] = {
            f"{ctx.dir}/mistakes/{campaign.mistake_name(seq, text)}": dump_json(entry).encode()
        }
        writes.update(campaign.view_writes(camp))
        return Transition(
            kind="mistake",
            step=f"mistake-{seq}",
            subject=f"docs(campaign): mistake {seq}",
            body=text.strip(),
            writes=writes,
        )

    commit_id, _ = ctx.store.transact(build)
    say(as_json, {"commit": commit_id}, f"mistake recorded ({commit_id[:10]})")
    return 0
