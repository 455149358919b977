"""``git ledger contract`` and ``arm``: what a campaign measures, fixed at setup, and
who runs it.

The contract is committed once (a skeleton is written first for a person to
fill in); arming needs the contract and a base on record, and taking over a
campaign armed by another owner needs a reason that is kept.
"""

from __future__ import annotations

from pathlib import Path

from ledger.core.errors import BadInput, Refused
from ledger.core.historyguard import require_verified_history
from ledger.core.model.documents import decode_text, dump_json
from ledger.core.repobase import write_atomic
from ledger.core.store import Snapshot, Transition
from ledger.presets.campaign import loop as campaign
from ledger.presets.campaign.commands.common import open_campaign, say

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


def contract(cwd: Path, file: Path | None, as_json: bool) -> int:
    ctx = open_campaign(cwd)
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
    require_verified_history(ctx)

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
    say(as_json, {"commit": commit_id, "path": target}, f"committed {target} ({commit_id[:10]})")
    return 0


def arm(cwd: Path, force: str | None, as_json: bool) -> int:
    """Arm the campaign for its owner; refused until the contract and a base are on record."""
    ctx = open_campaign(cwd)
    owner = campaign.owner_id(ctx.config, ctx.store)
    if force is not None and not force.strip():
        raise BadInput("--force needs a reason", "--force 'the previous session is gone'")
    require_verified_history(ctx)

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
    say(
        as_json,
        {"commit": commit_id, "owner": owner, "forced": force is not None},
        f"campaign armed by {owner} ({commit_id[:10]})",
    )
    return 0
