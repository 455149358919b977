"""The campaign loop (preset ``campaign``): candidates measured against a fixed contract.

Order of the loop: contract, base, arm, candidates (promoted, rejected or held,
benchmark adjustments and mistakes on the way), the closed report, ``finish``,
``deliver``. The entries and their rules live in :mod:`ledger.presets.campaign.loop`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ledger.core.actions import proposal
from ledger.core.loops import Preset

if TYPE_CHECKING:
    from pathlib import Path

    from ledger.core.context import Context
    from ledger.core.facts import FactFn
    from ledger.core.findings import Finding
    from ledger.core.model.config import LedgerConfig
    from ledger.core.model.configfrozen import FrozenSetting
    from ledger.core.state import LedgerState
    from ledger.core.store import Snapshot, Store
    from ledger.presets.campaign import loop as campaign


DELIVERY_BRANCH = "campaign/deliver"


def _action(action: str, command: str, reason: str, **extra: Any) -> dict[str, Any]:
    """One step of this loop's ``next``: the shape every loop's step has
    (:func:`ledger.core.actions.proposal`), with this loop's own keys."""
    return {**proposal(action, command, reason), **extra}


def measure_flags(config: LedgerConfig) -> str:
    from ledger.presets.campaign import loop as campaign

    if campaign.table(config).run:
        # The tool measures ([campaign] run), with provenance: never numbers typed in.
        return "--run"
    return " ".join(f"--measure {n}=X" for n in campaign.table(config).measurements)


def _less_invasive(ctx: Context, camp: campaign.Campaign, sha: str, bar: dict[str, Any]) -> str:
    """The kept candidates ``sha`` must beat beyond noise to be promoted: those the
    less-invasive rule (:func:`ledger.presets.campaign.rules.less_invasive_problems`)
    would prefer on an equal gain, measured on the same function."""
    from dataclasses import replace

    from ledger.presets.campaign import evidence, invasive
    from ledger.presets.campaign.rules import equal_gain_rivals

    kind, diff = evidence.measure_change(ctx, sha, None)
    rivals = equal_gain_rivals(camp)
    stub = replace(rivals[-1], commit=sha, kind=kind, diff=diff, larger_diff_reason="")
    smaller = [
        c for c in rivals if invasive.against(stub, c) in (invasive.MORE_KIND, invasive.MORE)
    ]
    if not smaller:
        return ""
    bar["less_invasive"] = [{"commit": c.commit, "kind": c.kind, "diff": c.diff} for c in smaller]
    named = ", ".join(f"{c.commit[:10]} ({invasive.size(c)})" for c in smaller[-3:])
    return (
        f"; [less-invasive] {sha[:10]} is a {invasive.size(stub)}: it is promoted only if "
        f"it beats {named} beyond noise (on an equal gain the less invasive change wins)"
    )


class CampaignPreset(Preset):
    name = "campaign"
    transitions_read_whole = True  # each loads the loop from a snapshot (loop.load)
    readme_template = "ledger-README-campaign.md"  # no blocks: its views are files

    def entry_paths(self, config: LedgerConfig) -> list[str]:
        from ledger.presets.campaign import files

        base = config.dir
        return [
            f"{base}/{files.CONTRACT}",
            f"{base}/candidates/*.json",
            f"{base}/benchmark/*.json",
            f"{base}/mistakes/*.json",
            f"{base}/{files.OWNER}",
            f"{base}/{files.REPORT}",
        ]

    def problems(self, store: Store, config: LedgerConfig, snap: Snapshot) -> list[tuple[str, str]]:
        from ledger.presets.campaign import loop as campaign

        return list(campaign.load(config, snap).problems)

    def view_paths(self, config: LedgerConfig) -> list[str]:
        from ledger.presets.campaign import files

        return [f"{config.dir}/{n}" for n in (files.JSONL, files.CSV, files.MISTAKES)]

    def render_view(self, config: LedgerConfig, snap: Snapshot, path: str) -> bytes | None:
        from ledger.presets.campaign import loop as campaign

        rendered = campaign.render_views(campaign.load(config, snap))
        return rendered.get(path[len(config.dir) + 1 :])

    def init_writes(self, config: LedgerConfig, snap: Snapshot) -> dict[str, bytes | None]:
        # Generated views exist, in step, from the start.
        from ledger.presets.campaign import loop as campaign

        return campaign.view_writes(campaign.load(config, snap))

    def drafts(self) -> tuple[str, ...]:
        # Written by hand, then recorded by 'git ledger contract'.
        from ledger.presets.campaign import files

        return (files.CONTRACT,)

    def hook_findings(self, ctx: Context, staged: list[str]) -> list[Finding]:
        from ledger.core.findings import Finding
        from ledger.presets.campaign import loop as campaign
        from ledger.presets.campaign.rules import tolerance_widened

        index = ctx.store.index_snapshot()
        head = ctx.store.snapshot()
        camp = campaign.load(ctx.config, index, ctx.store)
        fix = "regenerate it with the git ledger verbs; do not edit generated views by hand"
        found = [Finding("views-drift", line, fix) for line in campaign.view_drift(camp)]
        widened = tolerance_widened(camp)
        if widened is not None and ctx.config_file in staged:
            found.append(widened)
        contract = f"{ctx.dir}/{campaign.CONTRACT}"
        if (
            contract in staged
            and head.read(contract) is not None
            and index.read(contract) != head.read(contract)
        ):
            found.append(
                Finding(
                    "contract-frozen",
                    f"{contract} is committed and fixed at setup",
                    f"git restore --staged --worktree {contract}",
                )
            )
        for prefix in ("candidates/", "benchmark/", campaign.OWNER, campaign.DELIVERED):
            touched = [p for p in staged if p.startswith(f"{ctx.dir}/{prefix}")]
            if touched:
                found.append(
                    Finding(
                        "transition-only",
                        f"{', '.join(touched[:3])} change only through the campaign verbs",
                        f"git restore --staged --worktree {' '.join(touched[:3])}",
                    )
                )
        code = [p for p in staged if not p.startswith(ctx.dir + "/")]
        before = campaign.load(ctx.config, head)
        if code and before.base() is not None and before.owner is None:
            found.append(
                Finding(
                    "campaign-armed",
                    "a candidate commit while the campaign is not armed",
                    "git ledger arm",
                )
            )
        return found

    def hook_warnings(self, ctx: Context, staged: list[str]) -> list[str]:
        from ledger.presets.campaign import loop as campaign

        code = [p for p in staged if not p.startswith(ctx.dir + "/") and p != ctx.config_file]
        outside = campaign.out_of_scope(ctx.config, code)
        if not outside:
            return []
        return [
            f"[campaign-scope] {', '.join(outside[:5])} outside [campaign] scope "
            "(finish will list this commit)"
        ]

    def code_scope(self, config: LedgerConfig) -> list[str]:
        from ledger.presets.campaign import loop as campaign

        return list(campaign.table(config).scope)

    def delivered(self, table: dict[str, Any]) -> list[str] | None:
        from ledger.presets.campaign import loop as campaign

        camp = table.get("campaign")
        required = camp.get("required_records", []) if isinstance(camp, dict) else []
        return campaign.delivered_paths([p for p in required if isinstance(p, str)])

    def delivery_problems(self, store: Store, source: str, tip: str) -> list[str]:
        from ledger.presets.campaign.commands.delivery import delivery_problems

        return delivery_problems(store, source, tip)

    def fact_kinds(self) -> list[tuple[str, FactFn]]:
        from ledger.presets.campaign.facts import FACTS

        return list(FACTS)

    def history_rules(self) -> list[dict[str, str]]:
        return [
            {
                "paths": "contract.md",
                "changed_by": "contract",
                "rule": "written once, then frozen",
                "mode": "append",
            },
            {
                "paths": "candidates/*.json",
                "changed_by": "candidate",
                "rule": "added, never edited",
                "mode": "append",
            },
            {
                "paths": "benchmark/*.json",
                "changed_by": "benchmark-adjust",
                "rule": "added only",
                "mode": "append",
            },
            {
                "paths": "mistakes/*.json",
                "changed_by": "mistake",
                "rule": "added only",
                "mode": "append",
            },
            {"paths": "owner.json", "changed_by": "arm,finish", "rule": "arm and finish only"},
            {"paths": "latest-report.md", "changed_by": "report,hand", "rule": "the report"},
            {"paths": "delivered.json", "changed_by": "deliver", "rule": "the delivery"},
            {"paths": "ledger.toml", "changed_by": "hand", "rule": "tolerance frozen at contract"},
        ]

    def headline(self, data: dict[str, Any]) -> str:
        c = data.get("campaign")
        if not isinstance(c, dict):
            return super().headline(data)
        state = (
            "armed" + (f" by {c['owner']}" if c.get("owner") else "") if c["armed"] else "not armed"
        )
        return (
            f"{c['candidates']} candidate(s) in benchmark epoch {c['epoch']}, "
            f"{state}; contract {'committed' if c['contract'] else 'not written'}, "
            f"head {str(c['head'])[:10] if c['head'] else '(none)'}"
        )

    def summary(self, ctx: Context, state: LedgerState) -> dict[str, Any]:
        from ledger.presets.campaign import loop as campaign

        camp = self._load(ctx, state)
        head = camp.head()
        base = camp.base()
        return {
            "campaign": {
                "contract": camp.contract is not None,
                "epoch": camp.epoch,
                "candidates": len(camp.candidates),
                "base": base.commit if base else None,
                "head": head.commit if head else None,
                "armed": bool(camp.owner and camp.owner.get("armed")),
                "owner": (camp.owner or {}).get("owner"),
                "report_closed": campaign.report_is_closed(camp.report),
                "adjustments": len(camp.epochs),
                "mistakes": len(camp.mistakes),
            }
        }

    def _load(self, ctx: Context, state: LedgerState) -> campaign.Campaign:
        from ledger.presets.campaign import loop as campaign

        return campaign.load(ctx.config, ctx.store.snapshot(state.commit_id), ctx.store)

    def frozen_settings(self, ctx: Context, snap: Snapshot) -> list[FrozenSetting]:
        from ledger.presets.campaign import loop as campaign
        from ledger.presets.campaign.rules import frozen_settings

        return frozen_settings(campaign.load(ctx.config, snap, ctx.store))

    def fresh_next(
        self, cwd: Path, top: Path, common: Path, data: dict[str, Any]
    ) -> dict[str, Any]:
        """A delivery names a branch no branch has yet (the ledger tree cannot say)."""
        nxt: dict[str, Any] = data["next"]
        if nxt.get("action") != "deliver":
            return nxt
        from ledger.presets.campaign.commands.delivery import free_branch

        name = free_branch(top, DELIVERY_BRANCH)
        return {**nxt, "command": f"git ledger deliver --branch {name}"}

    def next_action(self, ctx: Context, state: LedgerState) -> dict[str, Any]:
        from ledger.presets.campaign import loop as campaign
        from ledger.presets.campaign.rules import (
            awaiting_remeasure,
            equal_gain_rivals,
            tolerance_widened,
        )

        camp = self._load(ctx, state)
        cfg = campaign.table(ctx.config)
        if camp.problems:
            path, error = camp.problems[0]
            return _action("fix-entry", f"$EDITOR {path}", f"{path} does not parse: {error}")
        record = "git ledger candidate record --commit CANDIDATE"
        measures = measure_flags(ctx.config)
        if camp.contract is None:
            return _action(
                "contract",
                f"$EDITOR {ctx.dir}/{campaign.CONTRACT} && git ledger contract",
                "write what is measured and what may change; the contract is fixed once committed",
            )
        widened = tolerance_widened(camp)
        if widened is not None:
            restore = widened.fix.removesuffix(" (widen-to-pass is not allowed)")
            why = f"[{widened.rule}] {widened.message}: every candidate is refused until then"
            return _action("restore-tolerance", restore, why)
        base = camp.base()
        if base is None:
            old_base = next((c for c in reversed(camp.candidates) if c.verdict == "base"), None)
            commit = old_base.commit[:12] if old_base else "CANDIDATE"
            why = (
                "commit the base code (or take an existing commit), then measure it"
                if old_base is None
                else f"benchmark adjustment {camp.epoch} invalidated every number: "
                "re-measure the base"
            )
            return _action(
                "record-base",
                f"git ledger candidate record --commit {commit} --verdict base {measures}",
                why,
            )
        from ledger.presets.campaign import evidence

        changed = evidence.script_changed(ctx, camp)
        if changed is not None:
            return _action(
                "benchmark-adjust",
                "git ledger benchmark adjust --reason TEXT",
                f"[{changed.rule}] {changed.message}",
            )
        previous = camp.previous_head()
        if previous is not None and awaiting_remeasure(camp) is not None:
            # candidate record refuses every comparison on the same rule until then.
            return _action(
                "re-measure-head",
                f"git ledger candidate record --commit {previous.commit[:12]} --verdict held "
                f"--reason 're-measured after benchmark adjustment {camp.epoch}' {measures}",
                f"the head {previous.commit[:10]} was measured before benchmark adjustment "
                f"{camp.epoch}",
            )
        owner = camp.owner
        if owner is None:
            return _action("arm", "git ledger arm", "the contract and the base are on record")
        head = camp.head()
        bar = {
            "metric": cfg.target_metric,
            "direction": cfg.directions.get(cfg.target_metric, "higher"),
            "head": head.number(cfg.target_metric) if head else None,
            "noise_floor": cfg.noise_floor,
            "correctness_tolerance": cfg.correctness_tolerance,
        }
        if not owner.get("armed") and camp.delivered is not None:
            return _action(
                "done",
                "git ledger status",
                "the campaign is finished and delivered",
                done=True,
            )
        if not owner.get("armed"):
            outstanding = evidence.outstanding(ctx, camp)
            if outstanding:
                # deliver refuses on the same rule: a finished campaign whose report or
                # records were reverted since goes back to work, under its owner.
                return _action(
                    "arm",
                    "git ledger arm",
                    f"the campaign is disarmed but finish no longer passes "
                    f"({outstanding[0].line()}): arm it again to complete it",
                )
            return _action(
                "deliver",
                f"git ledger deliver --branch {DELIVERY_BRANCH}",
                "finish passed and the campaign is disarmed: deliver the promoted commits",
            )
        verdicts, why_only = "promoted|rejected|held", ""
        unrecorded = evidence.unrecorded_commits(ctx, camp)
        if unrecorded:
            # finish refuses on the same rule: every code commit is a measured candidate,
            # the oldest first (a newer one measured first would be measured with it).
            sha = str(unrecorded[-1].evidence["commit"])
            record = f"git ledger candidate record --commit {sha[:12]}"
            # Kept, it would carry what deliver does not ship: it can only be rejected.
            carried = evidence.measured_with(ctx, camp, sha)
            if cfg.run:
                # record --run refuses on the same rule: the script the run would use.
                stale = evidence.script_blob_differs(
                    ctx, camp, evidence.instrument(ctx, camp, sha)[0]
                )
                if stale is not None:
                    return _action(
                        "benchmark-adjust",
                        stale.fix.split(" (")[0],
                        f"[{stale.rule}] {stale.message}",
                    )
            if carried:
                verdicts = "rejected"
                why_only = f"; only 'rejected' is open to it: {carried[0].message}"
        closed = campaign.report_is_closed(camp.report)
        if closed and not unrecorded and not campaign.unnamed_adjustments(camp):
            outstanding = evidence.outstanding(ctx, camp)
            if outstanding:
                # finish refuses on these rules: say the first, as finish will.
                first = outstanding[0]
                return _action("fix-outstanding", first.fix, f"finish refuses: {first.line()}")
            return _action("finish", "git ledger finish", "the report is closed: check the loop")
        standing = [] if closed or unrecorded else evidence.standing_rejected(ctx, camp)
        if standing:
            return _action(
                "revert-rejected",
                f"git revert --no-edit {' '.join(reversed(standing))}",
                f"rejected candidate {', '.join(s[:10] for s in standing)} is still on the "
                "branch: revert it, or the next candidate is measured with it and a "
                "promotion cannot be delivered ([delivered-tree])",
            )
        if closed and not unrecorded:
            return _action(
                "close",
                "git ledger close --summary TEXT",
                "the report does not name every benchmark adjustment",
            )
        alternatives = [
            _action(
                "close",
                "git ledger close --summary TEXT",
                "done trying: write the closed report from the entries",
            ),
            _action(
                "benchmark-adjust",
                "git ledger benchmark adjust --reason TEXT",
                "the measuring script changed: every earlier number is invalidated",
            ),
            _action(
                "mistake",
                "git ledger mistake add TEXT --caught-by TEXT --should-have-caught TEXT",
                "log a mistake and what should have caught it",
            ),
        ]
        why = (
            "commit a candidate's code, measure it, record its verdict (a promotion must "
            f"improve or hold '{cfg.target_metric}' against the head)"
        )
        notes: dict[str, Any] = {}
        rivals = equal_gain_rivals(camp) if "promoted" in verdicts else []
        if rivals and unrecorded:
            why += _less_invasive(ctx, camp, str(unrecorded[-1].evidence["commit"]), bar)
        if rivals:
            # The equal-gains rule needs the notes, and only the measurement says whether
            # it applies: the command carries them whenever a promotion could tie.
            record += " --notes '<NOTES>'"
            why += (
                f"; <NOTES>: why the less invasive change won, should its '{cfg.target_metric}' "
                f"equal that of {', '.join(c.commit[:10] for c in rivals[-3:])} within the "
                "noise floor"
            )
            notes = {"placeholders": ["<NOTES>"]}
        return _action(
            "candidate",
            f"{record} --verdict {verdicts} --reason TEXT {measures}",
            why + why_only,
            bar=bar,
            alternatives=alternatives,
            **notes,
        )

    def report_section(self, ctx: Context) -> dict[str, Any]:
        from ledger.presets.campaign import loop as campaign

        camp = campaign.load(ctx.config, ctx.store.snapshot())
        return {
            "candidates": [
                {
                    **c.summary(camp.epoch),
                    "measurements": c.measurements,
                    "repeats": c.repeats,
                    "comparison": c.comparison,
                }
                for c in camp.candidates
            ],
            "adjustments": camp.adjustments(),
            "units": dict(campaign.table(ctx.config).units),
        }


PRESET = CampaignPreset()
