"""Campaign verbs: contract, arm, candidate record, benchmark adjust, mistake add, finish, deliver."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from ledger import campaign, gitcli, output, rules
from ledger.campaign import Campaign, Candidate
from ledger.context import Context, open_preset
from ledger.errors import BadInput, Refused
from ledger.model.documents import decode_text, dump_json
from ledger.store import Snapshot, Transition

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
        (workdir / target).parent.mkdir(parents=True, exist_ok=True)
        (workdir / target).write_text(CONTRACT_SKELETON)
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


def arm(cwd: Path, as_json: bool) -> int:
    ctx = _ctx(cwd)
    env = campaign.table(ctx.config).owner_env
    owner = os.environ.get(env)
    if not owner:
        sig = ctx.store.signature("author")
        owner = f"{sig.name} <{sig.email}>"

    def build(snap: Snapshot) -> Transition:
        return Transition(
            kind="arm",
            step="arm",
            subject=f"chore(campaign): armed by {owner}",
            writes={
                f"{ctx.dir}/{campaign.OWNER}": dump_json({"armed": True, "owner": owner}).encode()
            },
        )

    commit_id, _ = ctx.store.transact(build)
    _say(
        as_json,
        {"commit": commit_id, "owner": owner},
        f"campaign armed by {owner} ({commit_id[:10]})",
    )
    return 0


def candidate_record(
    cwd: Path,
    *,
    commit: str,
    verdict: str,
    reason: str | None,
    measurements: dict[str, str | None],
    notes: str | None,
    as_json: bool,
) -> int:
    ctx = _ctx(cwd)
    cfg = campaign.table(ctx.config)
    if verdict not in campaign.VERDICTS:
        raise BadInput(f"unknown verdict {verdict!r}", f"one of {', '.join(campaign.VERDICTS)}")
    if verdict == "rejected" and not (reason or "").strip():
        raise BadInput("a rejection needs --reason", "say why the candidate was rejected")
    values = {
        name: campaign.parse_measurement(name, measurements.get(name)) for name in cfg.measurements
    }
    sha = ctx.store.resolve(commit)
    if sha is None:
        raise BadInput(f"unknown commit {commit!r}")

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


def finish(cwd: Path, as_json: bool) -> int:
    ctx = _ctx(cwd)
    camp = campaign.load(ctx.config, ctx.store.snapshot(), ctx.store)
    outstanding = _outstanding(ctx, camp)
    if outstanding:
        if as_json:
            output.emit_json(
                {
                    "finished": False,
                    "outstanding": [
                        {"rule": f.rule, "message": f.message, "fix": f.fix} for f in outstanding
                    ],
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
        {"finished": True, "outstanding": [], "disarmed": disarmed},
        "finish: every item is resolved" + ("; campaign disarmed" if disarmed else ""),
    )
    return 0


def deliver(cwd: Path, branch: str | None, as_json: bool) -> int:
    """One clean branch from the base commit with only the promoted commits, in order."""
    ctx = _ctx(cwd)
    camp = campaign.load(ctx.config, ctx.store.snapshot(), ctx.store)
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
    from ledger.model.ids import check_safe

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
    temp = Path(tempfile.mkdtemp(prefix="ledger-deliver-")) / "wt"
    gitcli.run(["worktree", "add", "-q", "-b", name, str(temp), base.commit], workdir)
    try:
        for sha in camp.promoted_commits():
            proc = gitcli.run(
                ["cherry-pick", "--allow-empty", "-x", sha], temp, check=False, clean_env=True
            )
            if proc.returncode != 0:
                gitcli.run(["cherry-pick", "--abort"], temp, check=False)
                raise Refused(
                    f"promoted commit {sha[:10]} does not apply on the delivery branch",
                    "resolve by hand; the candidates' history is untouched",
                )
        report = workdir / ctx.dir / campaign.REPORT
        shutil.copy(report, temp / "CAMPAIGN_REPORT.md")
        gitcli.run(["add", "CAMPAIGN_REPORT.md"], temp, clean_env=True)
        gitcli.run(
            [
                "-c",
                "core.hooksPath=/dev/null",
                "commit",
                "-q",
                "-m",
                "docs(campaign): the closed report",
            ],
            temp,
            clean_env=True,
        )
    except Exception:
        gitcli.run(["worktree", "remove", "--force", str(temp)], workdir, check=False)
        gitcli.run(["branch", "-D", name], workdir, check=False)
        raise
    gitcli.run(["worktree", "remove", "--force", str(temp)], workdir)
    _say(
        as_json,
        {"branch": name, "commits": camp.promoted_commits()},
        f"delivered {len(camp.promoted_commits())} promoted commit(s) on branch {name}",
    )
    return 0
