"""``git ledger finish`` and ``close``: what is still outstanding, and the closed report.

``finish`` lists every outstanding item (and candidate commits outside
``[campaign] scope``) and disarms the campaign once none is left; ``close``
writes the report from the entries.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ledger.core import gitcli, output
from ledger.core.context import Context
from ledger.core.errors import BadInput, Refused
from ledger.core.historyguard import require_verified_history
from ledger.core.model.documents import dump_json
from ledger.core.store import Snapshot, Transition
from ledger.presets.campaign import loop as campaign
from ledger.presets.campaign import rules
from ledger.presets.campaign.commands.common import open_campaign, require_owner, say
from ledger.presets.campaign.loop import Campaign
from ledger.presets.campaign.measures import describe


def close(cwd: Path, summary: str, as_json: bool) -> int:
    """Write latest-report.md from the entries, with ``status: closed``."""
    ctx = open_campaign(cwd)
    if not summary.strip():
        raise BadInput("--summary is empty", "say in a sentence what the campaign achieved")
    require_verified_history(ctx)

    def build(snap: Snapshot) -> Transition:
        camp = campaign.load(ctx.config, snap)
        require_owner(ctx, camp.owner)
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
    say(
        as_json,
        {"commit": commit_id, "path": f"{ctx.dir}/{campaign.REPORT}"},
        f"wrote {ctx.dir}/{campaign.REPORT} (status: closed) ({commit_id[:10]})",
    )
    return 0


def outstanding_items(ctx: Context, camp: Campaign) -> list[rules.Finding]:
    """What ``finish`` and ``deliver`` refuse with, and ``next`` asks before either."""
    from ledger.presets.campaign.evidence import outstanding

    return outstanding(ctx, camp)


def changed_paths(workdir: Path, sha: str) -> list[str]:
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
        outside = campaign.out_of_scope(ctx.config, changed_paths(workdir, sha))
        if outside:
            found.append({"commit": sha, "paths": outside})
    return found


def finish(cwd: Path, as_json: bool) -> int:
    ctx = open_campaign(cwd)
    # History is one of finish's outstanding items (evidence.outstanding), listed with
    # the rest rather than refused first.
    camp = campaign.load(ctx.config, ctx.store.snapshot(), ctx.store)
    require_owner(ctx, camp.owner)
    outstanding = outstanding_items(ctx, camp)
    scope = out_of_scope(ctx, camp)
    # Verdicts that rest on single values and no noise floor: said, not refused.
    diagnostic = [
        f"{c.commit[:10]} {c.verdict}: {describe(c.comparison)}"
        for c in camp.current()
        if c.comparison and c.comparison.get("diagnostic") and c.verdict in ("promoted", "held")
    ]
    if not as_json:
        for text in diagnostic:
            output.say(f"diagnostic only: {text}")
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
                    "diagnostic": diagnostic,
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
    say(
        as_json,
        {
            "finished": True,
            "outstanding": [],
            "disarmed": disarmed,
            "out_of_scope": scope,
            "diagnostic": diagnostic,
        },
        "finish: every item is resolved" + ("; campaign disarmed" if disarmed else ""),
    )
    return 0
