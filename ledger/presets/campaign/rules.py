"""The campaign loop's rules: promotion, the frozen tolerance, what keeps ``finish`` open.

Pure: a campaign (its entries, read once) goes in, findings come out.
"""

from __future__ import annotations

from ledger.core.findings import Finding as Finding
from ledger.core.model.configfrozen import FrozenSetting
from ledger.presets.campaign.loop import Campaign, Candidate

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ledger.core.store import Snapshot


def is_remeasure(camp: Campaign, new: Candidate) -> bool:
    """``new`` re-measures the head of an earlier benchmark epoch (after ``benchmark
    adjust``): the same code measured again, not a comparison."""
    previous = camp.previous_head()
    return (
        new.verdict == "held"
        and previous is not None
        and new.commit == previous.commit
        and not any(c.commit == previous.commit for c in camp.current())
    )


def awaiting_remeasure(camp: Campaign) -> Finding | None:
    """After ``benchmark adjust`` no candidate is compared until the base and the head
    are both measured in the new epoch: the rule ``candidate record`` refuses with and
    ``next`` proposes the re-measurement on."""
    previous = camp.previous_head()
    if camp.base() is None or previous is None:
        return None
    if any(c.commit == previous.commit for c in camp.current()):
        return None
    return Finding(
        "stale-head",
        f"the head {previous.commit[:10]} was measured before benchmark adjustment "
        f"{camp.epoch}: no candidate is compared with numbers of another epoch",
        f"git ledger candidate record --commit {previous.commit[:12]} --verdict held "
        f"--reason 're-measured after benchmark adjustment {camp.epoch}' --measure ...",
    )


def promotion_problems(camp: Campaign, new: Candidate) -> list[Finding]:
    """Why ``new`` may not be promoted (or held): its target must improve beyond noise
    against the promoted head (held: stay within noise of it), stay within the
    correctness tolerance fixed at setup, and say why it won when another candidate's
    gain was equal. The comparison is :func:`ledger.presets.campaign.judge.judge`."""
    from ledger.presets.campaign.judge import IMPROVED, NOISE, judge
    from ledger.presets.campaign.loop import table

    cfg = table(camp.config)
    target = cfg.target_metric
    head = camp.head()
    found: list[Finding] = []
    if head is None:
        return [
            Finding(
                "promotion-needs-base",
                "no base is recorded in this benchmark epoch",
                "git ledger candidate record --verdict base ...",
            )
        ]
    if new.verdict != "base" and not is_remeasure(camp, new):
        stale = awaiting_remeasure(camp)
        if stale is not None:
            return [stale]
    verdict = judge(camp, new, head)
    value = new.number(target)
    if verdict is None or value is None:
        found.append(
            Finding(
                "promotion-evidence",
                f"'{target}' is N/A for {new.commit[:10]} or the head",
                "measure the target metric, or record the candidate as rejected",
            )
        )
    elif new.verdict == "promoted" and not (
        verdict.outcome == IMPROVED
        # Equal to a kept rival (not the base): the less-invasive rule below decides,
        # on the sizes and kinds of the two changes as git measured them.
        or (verdict.outcome == NOISE and head.verdict != "base")
    ):
        fix = (
            "record it as held (--verdict held --reason ...)"
            if verdict.outcome == NOISE
            else "record it as rejected with a reason"
        )
        found.append(
            Finding(
                "promotion-evidence",
                f"'{target}' of {new.commit[:10]} against the head {head.commit[:10]}: "
                f"{verdict.line()}; a promotion needs improved beyond noise",
                fix,
            )
        )
    elif new.verdict == "held" and not is_remeasure(camp, new) and verdict.outcome != NOISE:
        why = (
            "there is no noise estimate; give repeats (--measure "
            f"{target}=a,b,c) or configure [campaign] noise_floor"
            if verdict.diagnostic
            else "record it as promoted or rejected with a reason"
        )
        found.append(
            Finding(
                "held-evidence",
                f"'{target}' of {new.commit[:10]} is not within noise of the head "
                f"{head.commit[:10]}: {verdict.line()}",
                why,
            )
        )
    if new.verdict == "promoted" and value is not None:
        found += less_invasive_problems(camp, new)
    correctness = new.number("correctness")
    if "correctness" in cfg.measurements:
        if correctness is None:
            found.append(
                Finding(
                    "correctness",
                    "correctness is N/A: a promotion needs it measured",
                    "measure correctness",
                )
            )
        elif abs(correctness) > cfg.correctness_tolerance:
            found.append(
                Finding(
                    "correctness",
                    f"correctness {correctness:g} exceeds the tolerance "
                    f"{cfg.correctness_tolerance:g} fixed at setup",
                    "fix the candidate; the tolerance stays",
                )
            )
    return found


def equal_gain_rivals(camp: Campaign) -> list[Candidate]:
    """The candidates of this benchmark epoch a promotion may tie with (promoted or held):
    a promotion whose target is within noise of one of them must be the less invasive
    change (:func:`less_invasive_problems`), so ``next`` names them while any exist."""
    return [c for c in camp.current() if c.verdict in ("promoted", "held")]


def equal_gain_ties(camp: Campaign, new: Candidate) -> list[Candidate]:
    """The kept candidates of this epoch whose target is within noise of ``new``'s (the
    judgement :func:`ledger.presets.campaign.judge.judge` states)."""
    from ledger.presets.campaign.judge import NOISE, judge

    ties = []
    for other in equal_gain_rivals(camp):
        verdict = judge(camp, new, other) if other.commit != new.commit else None
        if verdict is not None and verdict.outcome == NOISE:
            ties.append(other)
    return ties


def less_invasive_problems(camp: Campaign, new: Candidate) -> list[Finding]:
    """Less invasive wins by measure: promoted over an equal-gain rival, ``new`` must
    not be code against a setting or a dependency, nor a larger diff (unless its
    ``--larger-diff-reason`` says why), and when neither is smaller its ``--notes``
    say why it won. ``next`` states the rivals a known commit must beat on
    :func:`ledger.presets.campaign.invasive.against` too."""
    from ledger.presets.campaign import invasive
    from ledger.presets.campaign.loop import table

    found: list[Finding] = []
    for other in equal_gain_ties(camp, new):
        standing = invasive.against(new, other)
        rival = f"{other.commit[:10]} ({other.verdict}, {invasive.size(other)})"
        equal = f"an equal gain in '{table(camp.config).target_metric}' within noise"
        if standing == invasive.MORE_KIND:
            found.append(
                Finding(
                    "less-invasive",
                    f"{new.commit[:10]} is a code change and {rival} has {equal}: "
                    f"a code change is not promoted over a {other.kind} change",
                    "record it as held or rejected; the less invasive change stays the head",
                )
            )
        elif standing == invasive.MORE and not new.larger_diff_reason.strip():
            found.append(
                Finding(
                    "less-invasive",
                    f"{new.commit[:10]} ({invasive.size(new)}) is larger than {rival}, "
                    f"which has {equal}: the smaller diff is promoted",
                    "record it as held or rejected, or say why the larger change must win: "
                    "--larger-diff-reason TEXT",
                )
            )
        elif standing in (invasive.EQUAL, invasive.UNKNOWN) and not new.notes.strip():
            found.append(
                Finding(
                    "equal-gains",
                    f"{rival} has {equal} and a change as large as {new.commit[:10]}'s",
                    "say in --notes why this one won",
                )
            )
        if found:
            break
    return found


def frozen_settings(camp: Campaign) -> list[FrozenSetting]:
    """The numbers of ledger.toml the campaign froze: the correctness tolerance at the
    contract; the noise floor and the directions when it was first armed (``camp`` read
    with its store: :func:`ledger.presets.campaign.loop.load`)."""
    found: list[FrozenSetting] = []
    if camp.setup_tolerance is not None:
        found.append(
            FrozenSetting(
                "campaign.correctness_tolerance",
                camp.setup_tolerance,
                "when the contract was committed",
            )
        )
    armed = camp.armed_table
    if armed is not None:
        when = "when the campaign was armed"
        found.append(FrozenSetting("campaign.noise_floor", armed.noise_floor, when))
        found += [
            FrozenSetting(f"campaign.directions.{name}", str(direction), when)
            for name, direction in sorted(armed.directions.items())
        ]
    return found


def _current(camp: Campaign, setting: FrozenSetting) -> object:
    from ledger.presets.campaign.loop import table

    cfg = table(camp.config)
    if setting.key.startswith("campaign.directions."):
        return cfg.directions.get(setting.name)
    return getattr(cfg, setting.name, None)


def tolerance_widened(camp: Campaign) -> Finding | None:
    """Every frozen setting in ledger.toml must hold the value it was frozen at (the
    tolerance at the contract, the noise floor and directions at arming)."""
    for setting in frozen_settings(camp):
        current = _current(camp, setting)
        if setting.broken_by(current):
            if setting.key == "campaign.correctness_tolerance":
                return Finding(
                    "tolerance-frozen",
                    f"[campaign] correctness_tolerance is {current:g} but it was "
                    f"{setting.value:g} when the contract was committed",
                    f"{setting.restore()} (widen-to-pass is not allowed)",
                )
            return Finding(
                "config-frozen",
                f"{setting.breach(current)}: the campaign judges with it until it ends",
                setting.restore(),
            )
    return None


def finish_outstanding_at(snap: Snapshot, camp: Campaign) -> list[Finding]:
    """What keeps the campaign at ``snap`` from being finished: the rule ``finish`` and
    ``deliver`` refuse with, and the one ``next`` asks before it proposes a delivery."""
    from ledger.presets.campaign.loop import table

    base = camp.config.dir
    required = {
        f"{base}/{p}": snap.read(f"{base}/{p}") is not None
        for p in table(camp.config).required_records
    }
    return finish_outstanding(camp, required)


def finish_outstanding(camp: Campaign, required_present: dict[str, bool]) -> list[Finding]:
    """Everything that keeps the campaign from being finished, each with its fix."""
    from ledger.presets.campaign.loop import render_views, table

    cfg = table(camp.config)
    found: list[Finding] = []
    if camp.contract is None:
        found.append(Finding("contract", "the contract is not committed", "git ledger contract"))
    base = camp.base()
    if base is None:
        fix = "git ledger candidate record --verdict base --commit SHA ..."
        why = (
            "no base is recorded"
            if camp.epoch == 0
            else f"no fresh base since benchmark adjustment {camp.epoch}"
        )
        found.append(Finding("base", why, fix))
    for c in camp.candidates:
        if c.verdict == "rejected" and not c.reason.strip():
            found.append(
                Finding(
                    "rejection-reason",
                    f"{c.path}: rejected without a reason",
                    f"git ledger candidate record --commit {c.commit[:10]} --verdict rejected --reason ...",
                )
            )
        for name in cfg.measurements:
            value = c.measurements.get(name)
            if value is None or (isinstance(value, str) and not value.startswith("N/A:")):
                found.append(
                    Finding(
                        "measurement",
                        f"{c.path}: '{name}' is neither a number nor explained",
                        "record the candidate again with every measurement",
                    )
                )
    rendered = render_views(camp)
    for name, data in rendered.items():
        if camp.views.get(name) != data:
            found.append(
                Finding(
                    "views",
                    f"{camp.config.dir}/{name} is out of step with the candidate files",
                    "regenerate it: git ledger candidate record rewrites the views",
                )
            )
    if camp.epoch > 0:
        previous = camp.previous_head()
        if previous is not None and not any(
            c.commit == previous.commit and c.epoch == camp.epoch for c in camp.candidates
        ):
            found.append(
                Finding(
                    "stale-numbers",
                    f"the head {previous.commit[:10]} was measured before benchmark adjustment "
                    f"{camp.epoch}",
                    f"git ledger candidate record --commit {previous.commit[:10]} --verdict held "
                    "--reason re-measured ... (re-measured)",
                )
            )
    for path, error in camp.problems:
        found.append(Finding("entry-schema", f"{path}: {error}", f"fix or restore {path}"))
    report = camp.report or ""
    if not any(line.strip().lower() == "status: closed" for line in report.splitlines()):
        found.append(
            Finding(
                "report",
                f"{camp.config.dir}/latest-report.md has no line 'status: closed'",
                "git ledger close --summary TEXT (or write it, end it with 'status: closed', "
                "commit it)",
            )
        )
    from ledger.presets.campaign.loop import unnamed_adjustments

    missing = unnamed_adjustments(camp)
    if missing:
        found.append(
            Finding(
                "report-adjustments",
                f"{camp.config.dir}/latest-report.md does not name benchmark adjustment(s) "
                f"{', '.join(str(n) for n in missing)}",
                "git ledger close --summary TEXT (or add a line 'adjustment N: ...')",
            )
        )
    for path, present in sorted(required_present.items()):
        if not present:
            found.append(
                Finding(
                    "required-record",
                    f"{path} is required by [campaign] required_records",
                    f"add {path} and commit it",
                )
            )
    tol = tolerance_widened(camp)
    if tol is not None:
        found.append(tol)
    return found
