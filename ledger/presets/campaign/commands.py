"""Campaign verbs: contract, arm, candidate record, benchmark adjust, mistake add, finish, deliver."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from ledger.core import gitcli, output
from ledger.core.context import Context, open_preset
from ledger.core.errors import BadInput, Refused
from ledger.core.model.documents import decode_text, dump_json
from ledger.core.repobase import write_atomic
from ledger.core.store import Snapshot, Transition
from ledger.presets.campaign import loop as campaign
from ledger.presets.campaign import rules
from ledger.presets.campaign.loop import Campaign, Candidate

CONTRACT_SKELETON = """\
# Contract

## What is measured

- speed: ... (higher is better, unit ...)
- accel_mem_gb, peak_cpu_gb: ... (lower is better)
- correctness: max abs error against the reference (lower is better)

## What may change

- ...

## What may not change

- the measuring script, except through `git ledger benchmark adjust`
"""


def _ctx(cwd: Path) -> Context:
    return open_preset(cwd, "campaign")


def _say(as_json: bool, data: dict[str, object], text: str) -> None:
    if as_json:
        output.emit_json(data)
    else:
        output.say(text)


def contract(cwd: Path, file: Path | None, as_json: bool) -> int:
    ctx = _ctx(cwd)
    workdir = ctx.store.require_workdir()
    target = f"{ctx.dir}/{campaign.CONTRACT}"
    source = file or workdir / target
    if not source.is_file():
        if (workdir / target).is_symlink():
            raise BadInput(
                f"{target} is a symbolic link: the contract is written as a file of its own",
                f"remove {target}, then retry",
            )
        write_atomic(workdir / target, CONTRACT_SKELETON)
        raise Refused(
            f"wrote a skeleton {target}", "fill it in, then run 'git ledger contract' again"
        )
    data = source.read_bytes()
    text = decode_text(data, str(source))
    if text.strip() == CONTRACT_SKELETON.strip():
        raise Refused(f"{target} is still the skeleton", "say what is measured and what may change")
    ctx.require_committed_config()

    def build(snap: Snapshot) -> Transition:
        if snap.read(target) is not None:
            raise Refused("the contract is already committed", "a contract is fixed at setup")
        return Transition(
            kind="contract",
            step="contract",
            subject="docs(campaign): the contract",
            writes={target: data},
        )

    commit_id, _ = ctx.store.transact(build)
    _say(as_json, {"commit": commit_id, "path": target}, f"committed {target} ({commit_id[:10]})")
    return 0


def arm(cwd: Path, force: str | None, as_json: bool) -> int:
    """Arm the campaign for its owner; refused until the contract and a base are on record."""
    ctx = _ctx(cwd)
    owner = campaign.owner_id(ctx.config, ctx.store)
    if force is not None and not force.strip():
        raise BadInput("--force needs a reason", "--force 'the previous session is gone'")

    def build(snap: Snapshot) -> Transition:
        camp = campaign.load(ctx.config, snap)
        if camp.contract is None:
            raise Refused("no contract is committed yet", "git ledger contract")
        if camp.base() is None:
            raise Refused(
                "no base is recorded in this benchmark epoch",
                "git ledger candidate record --commit SHA --verdict base --measure ...",
            )
        current = camp.owner or {}
        forced = list(current.get("forced", []))
        body = ""
        if current.get("armed") and current.get("owner") != owner:
            if force is None:
                raise Refused(
                    f"the campaign is armed by {current.get('owner')}, not {owner}",
                    "take it over only with --force REASON (recorded)",
                )
            forced.append({"from": str(current.get("owner")), "to": owner, "reason": force.strip()})
            body = f"taken over from {current.get('owner')}: {force.strip()}"
        elif current.get("armed"):
            raise Refused(f"the campaign is already armed by {owner}", "git ledger next")
        entry = {"armed": True, "owner": owner, "forced": forced}
        return Transition(
            kind="arm",
            step="arm",
            subject=f"chore(campaign): armed by {owner}",
            body=body,
            writes={f"{ctx.dir}/{campaign.OWNER}": dump_json(entry).encode()},
        )

    commit_id, _ = ctx.store.transact(build)
    _say(
        as_json,
        {"commit": commit_id, "owner": owner, "forced": force is not None},
        f"campaign armed by {owner} ({commit_id[:10]})",
    )
    return 0


def _is_transition(ctx: Context, sha: str) -> bool:
    from ledger.core.store import TRAILER_TRANSITION

    for info in ctx.store.walk(sha):
        return bool(info.trailer(TRAILER_TRANSITION))
    return False


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
) -> int:
    ctx = _ctx(cwd)
    if verdict not in campaign.VERDICTS:
        raise BadInput(f"unknown verdict {verdict!r}", f"one of {', '.join(campaign.VERDICTS)}")
    if verdict in ("rejected", "promoted") and not (reason or "").strip():
        raise BadInput(f"a {verdict} candidate needs --reason", f"say why it was {verdict}")
    values = campaign.parse_measures(ctx.config, measures, aliases)
    sha = ctx.store.resolve(commit)
    if sha is None:
        raise BadInput(f"unknown commit {commit!r}", "give the candidate's commit (sha or ref)")
    if _is_transition(ctx, sha):
        raise BadInput(
            f"{sha[:10]} is a ledger transition, not a candidate",
            "commit the candidate's code, then record that commit",
        )

    def build(snap: Snapshot) -> Transition:
        camp = campaign.load(ctx.config, snap, ctx.store)
        if camp.contract is None:
            raise Refused("no contract is committed yet", "git ledger contract")
        widened = rules.tolerance_widened(camp)
        if widened is not None:
            raise Refused.of([widened])
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
        )
        if verdict == "promoted":
            problems = rules.promotion_problems(camp, new)
            if problems:
                raise Refused.of(problems)
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

    commit_id, _ = ctx.store.transact(build)
    _say(
        as_json,
        {"commit": commit_id, "candidate": sha, "verdict": verdict},
        f"recorded candidate {sha[:10]} as {verdict} ({commit_id[:10]})",
    )
    return 0


def close(cwd: Path, summary: str, as_json: bool) -> int:
    """Write latest-report.md from the entries, with ``status: closed``."""
    ctx = _ctx(cwd)
    if not summary.strip():
        raise BadInput("--summary is empty", "say in a sentence what the campaign achieved")

    def build(snap: Snapshot) -> Transition:
        camp = campaign.load(ctx.config, snap)
        if camp.base() is None:
            raise Refused(
                "no base is recorded in this benchmark epoch",
                "git ledger candidate record --commit SHA --verdict base --measure ...",
            )
        return Transition(
            kind="report",
            step="report",
            subject="docs(campaign): the closed report",
            writes={f"{ctx.dir}/{campaign.REPORT}": campaign.report_text(camp, summary).encode()},
        )

    commit_id, _ = ctx.store.transact(build)
    _say(
        as_json,
        {"commit": commit_id, "path": f"{ctx.dir}/{campaign.REPORT}"},
        f"wrote {ctx.dir}/{campaign.REPORT} (status: closed) ({commit_id[:10]})",
    )
    return 0


def benchmark_adjust(cwd: Path, reason: str, as_json: bool) -> int:
    ctx = _ctx(cwd)
    if not reason.strip():
        raise BadInput("--reason is empty", "say how the measuring script changed")

    def build(snap: Snapshot) -> Transition:
        camp = campaign.load(ctx.config, snap)
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
    _say(
        as_json,
        {"commit": commit_id, "step": transition.step},
        f"benchmark adjusted ({transition.step}); earlier numbers are invalidated: record a fresh base "
        "and re-measure the head",
    )
    return 0


def mistake_add(cwd: Path, text: str, caught_by: str, should_have: str, as_json: bool) -> int:
    ctx = _ctx(cwd)
    for name, value in (
        ("TEXT", text),
        ("--caught-by", caught_by),
        ("--should-have-caught", should_have),
    ):
        if not value.strip():
            raise BadInput(f"{name} is empty")

    def build(snap: Snapshot) -> Transition:
        camp = campaign.load(ctx.config, snap)
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
    _say(as_json, {"commit": commit_id}, f"mistake recorded ({commit_id[:10]})")
    return 0


def _outstanding(ctx: Context, camp: Campaign) -> list[rules.Finding]:
    snap = ctx.store.snapshot()
    required = {
        f"{ctx.dir}/{p}": snap.read(f"{ctx.dir}/{p}") is not None
        for p in campaign.table(ctx.config).required_records
    }
    return rules.finish_outstanding(camp, required)


def _changed(workdir: Path, sha: str) -> list[str]:
    out = gitcli.output(
        ["diff-tree", "--no-commit-id", "--name-only", "-r", "-z", "--root", sha], workdir
    )
    return [p for p in out.split("\0") if p]


def out_of_scope(ctx: Context, camp: Campaign) -> list[dict[str, Any]]:
    """Candidate commits touching files outside ``[campaign] scope``."""
    if not campaign.table(ctx.config).scope:
        return []
    workdir = ctx.store.require_workdir()
    found: list[dict[str, Any]] = []
    for sha in dict.fromkeys(c.commit for c in camp.candidates if c.verdict != "base"):
        outside = campaign.out_of_scope(ctx.config, _changed(workdir, sha))
        if outside:
            found.append({"commit": sha, "paths": outside})
    return found


def finish(cwd: Path, as_json: bool) -> int:
    ctx = _ctx(cwd)
    camp = campaign.load(ctx.config, ctx.store.snapshot(), ctx.store)
    outstanding = _outstanding(ctx, camp)
    scope = out_of_scope(ctx, camp)
    if not as_json:
        for item in scope:
            output.say(
                f"out of scope: {str(item['commit'])[:10]} changed {', '.join(item['paths'])} "
                "(outside [campaign] scope)"
            )
    if outstanding:
        if as_json:
            output.emit_json(
                {
                    "finished": False,
                    "outstanding": [
                        {"rule": f.rule, "message": f.message, "fix": f.fix} for f in outstanding
                    ],
                    "out_of_scope": scope,
                }
            )
        else:
            for finding in outstanding:
                output.say(f"outstanding: {finding.line()}")
        return 1
    disarmed = None
    if camp.owner and camp.owner.get("armed"):
        data = dump_json({**camp.owner, "armed": False}).encode()

        def build(snap: Snapshot) -> Transition:
            return Transition(
                kind="finish",
                step="finish",
                subject="chore(campaign): finished and disarmed",
                writes={f"{ctx.dir}/{campaign.OWNER}": data},
            )

        disarmed, _ = ctx.store.transact(build)
    _say(
        as_json,
        {"finished": True, "outstanding": [], "disarmed": disarmed, "out_of_scope": scope},
        "finish: every item is resolved" + ("; campaign disarmed" if disarmed else ""),
    )
    return 0


def _benchmark_commits(ctx: Context, base: str) -> list[str]:
    """Commits after the base that changed the measuring script, oldest first."""
    script = campaign.table(ctx.config).benchmark_script
    if not script:
        return []
    out = gitcli.output(
        ["rev-list", "--reverse", f"{base}..HEAD", "--", script], ctx.store.require_workdir()
    )
    return [sha for sha in out.split() if not _is_transition(ctx, sha)]


def deliver(cwd: Path, branch: str | None, as_json: bool) -> int:
    """One clean branch from the base commit: the kept promoted commits and the commits
    that changed the benchmark script, in history order, then the closed report and the
    records. Built from committed files only, in a temporary worktree that is removed."""
    ctx = _ctx(cwd)
    snap = ctx.store.snapshot()
    camp = campaign.load(ctx.config, snap, ctx.store)
    outstanding = _outstanding(ctx, camp)
    if outstanding:
        raise Refused(
            f"finish does not pass ({len(outstanding)} outstanding; first: {outstanding[0].line()})",
            "git ledger finish",
        )
    base = camp.base()
    if base is None:
        raise Refused("no base recorded")
    name = branch or "campaign/deliver"
    from ledger.core.model.ids import check_safe

    for part in name.split("/"):
        check_safe(part, "branch name")
    workdir = ctx.store.require_workdir()
    if (
        gitcli.run(
            ["rev-parse", "-q", "--verify", f"refs/heads/{name}"], workdir, check=False
        ).returncode
        == 0
    ):
        raise BadInput(f"branch {name} already exists", "pass --branch NEW-NAME")
    wanted = set(camp.promoted_commits()) | set(_benchmark_commits(ctx, base.commit))
    order = gitcli.output(
        ["rev-list", "--reverse", "--topo-order", f"{base.commit}..HEAD"], workdir
    )
    picks = [sha for sha in order.split() if sha in wanted]
    picks += [sha for sha in camp.promoted_commits() if sha not in picks]  # off this branch
    keep = {
        f"{ctx.dir}/{campaign.REPORT}": snap.read(f"{ctx.dir}/{campaign.REPORT}"),
        f"{ctx.dir}/{campaign.JSONL}": snap.read(f"{ctx.dir}/{campaign.JSONL}"),
        f"{ctx.dir}/{campaign.CSV}": snap.read(f"{ctx.dir}/{campaign.CSV}"),
    }
    with tempfile.TemporaryDirectory(prefix="ledger-deliver-") as tmp:
        temp = Path(tmp) / "wt"
        gitcli.run(["worktree", "add", "-q", "-b", name, str(temp), base.commit], workdir)
        try:
            for sha in picks:
                proc = gitcli.run(
                    ["cherry-pick", "--allow-empty", "-x", sha], temp, check=False, clean_env=True
                )
                if proc.returncode != 0:
                    gitcli.run(["cherry-pick", "--abort"], temp, check=False)
                    raise Refused(
                        f"commit {sha[:10]} does not apply on the delivery branch",
                        "resolve by hand; the candidates' history is untouched",
                    )
            # Scaffolding and owner state stay out: only the closed report and the records.
            gitcli.run(
                ["rm", "-r", "-q", "--ignore-unmatch", "--", ctx.dir, ctx.config_file],
                temp,
                clean_env=True,
            )
            for rel, data in keep.items():
                if data is None:
                    continue
                write_atomic(temp / rel, data, durable=False)  # a scratch clone
                gitcli.run(["add", "--", rel], temp, clean_env=True)
            gitcli.run(
                [
                    "-c",
                    "core.hooksPath=/dev/null",
                    "commit",
                    "-q",
                    "--allow-empty",
                    "-m",
                    "docs(campaign): the closed report and records",
                ],
                temp,
                clean_env=True,
            )
        except Exception:
            gitcli.run(["worktree", "remove", "--force", str(temp)], workdir, check=False)
            gitcli.run(["branch", "-D", name], workdir, check=False)
            raise
        gitcli.run(["worktree", "remove", "--force", str(temp)], workdir)
    gitcli.run(["worktree", "prune"], workdir, check=False)
    tip = gitcli.output(["rev-parse", f"refs/heads/{name}"], workdir).strip()
    record = dump_json({"branch": name, "commit": tip, "commits": picks}).encode()

    def delivered(snap: Snapshot) -> Transition:
        return Transition(
            kind="deliver",
            step="deliver",
            subject=f"docs(campaign): delivered on {name}",
            writes={f"{ctx.dir}/{campaign.DELIVERED}": record},
        )

    ctx.store.transact(delivered)
    _say(
        as_json,
        {"branch": name, "commits": picks},
        f"delivered {len(picks)} commit(s) on branch {name}",
    )
    return 0
