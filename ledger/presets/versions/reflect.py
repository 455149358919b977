"""``git ledger triggers`` and ``git ledger reflect``: the loop stops itself when circling."""

from __future__ import annotations

import re
from pathlib import Path

from ledger.core import output
from ledger.core.context import Context, open_context
from ledger.core.errors import BadInput, Refused
from ledger.core.model.documents import Document
from ledger.core.model.entries import ReflectionFront
from ledger.core.model.ids import parse_version
from ledger.core.reflectiontext import DECISION_LINE
from ledger.core.resources import read_resource, render
from ledger.core.state import LedgerState, parse_entry
from ledger.core.store import Snapshot, Transition, write_atomic
from ledger.presets.versions import rules


def run_triggers(cwd: Path, as_json: bool) -> int:
    ctx = open_context(cwd)
    state = ctx.state()
    fired = rules.triggers(state)
    if as_json:
        output.emit_json(
            [
                {"rule": f.rule, "message": f.message, "fix": f.fix, "evidence": f.evidence}
                for f in fired
            ]
        )
    else:
        for finding in fired:
            output.say(finding.line())
        if not fired:
            output.say("no trigger fires")
    return 1 if fired else 0


def run_reflect(
    cwd: Path, after: str | None, commit: bool, as_json: bool, refresh: bool = False
) -> int:
    """Write REFLECTION_<after>.md (or, with --commit, commit a filled one; with --refresh,
    rebuild the evidence of an uncommitted one, keeping what was written in it)."""
    ctx = open_context(cwd)
    workdir = ctx.store.require_workdir()
    state = ctx.state()
    concluded = state.concluded()
    if after is None:
        if not concluded:
            raise BadInput("nothing to reflect on: no version is concluded yet")
        after = concluded[-1].id
    parse_version(after, ctx.config.ledger.id_prefix)
    if state.version(after) is None:
        raise state.no_version(after)
    rid = f"REFLECTION_{after}"
    rel = f"{ctx.dir}/{rid}.md"
    path = workdir / rel
    if commit and refresh:
        raise BadInput("--commit and --refresh: give one", f"git ledger reflect {after} --refresh")
    if commit:
        return _commit(ctx, rid, rel, path, as_json)
    existing = state.reflection_for(after)
    if existing is not None:
        raise Refused(f"{rid} is already committed", f"edit {rel} and commit it")
    if refresh and not path.is_file():
        raise BadInput(f"{rel} does not exist", f"write it first: git ledger reflect {after}")
    if path.exists() and not refresh:
        # Written already (a run that died before the commit): the same step again is
        # not an error; what is left is to fill it in and commit it.
        if as_json:
            output.emit_json({"id": rid, "path": rel, "existing": True})
        else:
            output.say(
                f"{rel} is already written: fill it in, then commit it "
                f"(git ledger reflect {after} --refresh rebuilds its evidence)"
            )
        return 0
    found = rules.triggers(state)
    fired = [f.rule for f in found]
    goodhart = next((f for f in found if f.rule == rules.GOODHART), None)
    target = str(goodhart.evidence.get("gate")) if goodhart is not None else None
    front = ReflectionFront(id=rid, after=after, triggers=fired, target_gate=target)
    body = render(
        read_resource("templates", "reflection.md"),
        id=rid,
        after=after,
        triggers=", ".join(fired) or "none",
        **prefill(state),
    )
    if target is not None:
        # Before the last section, the observability audit, which closes the reflection.
        last = "## Observability-gap audit\n"
        section = target_section(state, target) + "\n"
        body = body.replace(last, section + last, 1) if last in body else body + "\n" + section
    fresh = Document(front=front.model_dump(mode="json"), body=body)
    if refresh:
        from ledger.presets.versions.reflectrefresh import refreshed

        fresh = refreshed(path.read_text(encoding="utf-8"), fresh, rel)
    write_atomic(path, fresh.render().encode())
    if as_json:
        output.emit_json({"id": rid, "path": rel, "triggers": fired, "refreshed": refresh})
    elif refresh:
        output.say(
            f"refreshed the evidence in {rel} (the quoted '>' lines); what you wrote is kept. "
            f"Commit it when every section is filled (git ledger reflect {after} --commit)"
        )
    else:
        titles = re.findall(r"^## (.+)$", body, re.M)
        output.say(
            f"wrote {rel}: fill in its {len(titles)} sections ({', '.join(titles)}), then "
            f"commit it (git commit, or git ledger reflect {after} --commit)"
        )
    return 0


def _quote(lines: list[str]) -> str:
    return "\n".join(f"> {line}" for line in lines) if lines else "> (nothing on record)"


def prefill(state: LedgerState) -> dict[str, str]:
    """What the ledger knows for each section, quoted (it does not count as an answer)."""
    from ledger.core.markdown import fmt, signed
    from ledger.presets.versions.baseline import eval_noise, standing_baseline

    fired = rules.triggers(state)
    bets = rules.units(state)
    recent = bets[-10:]
    remeasured = []
    for r in state.results:
        if not r.remeasured:
            continue
        gate_cfg = state.config.gates.get(r.data.gate)
        if gate_cfg is None or gate_cfg.metric not in r.data.metrics:
            continue
        value = r.data.metrics[gate_cfg.metric]
        original = [
            o.data.metrics.get(gate_cfg.metric)
            for o in state.results_for(r.data.version, r.data.gate)
            if o.key == r.key
        ]
        was = next((x for x in original if x is not None), None)
        delta = (
            f", Δ {signed(value - was)} against the recorded {fmt(was)}" if was is not None else ""
        )
        remeasured.append(
            f"{r.data.version} `{r.data.gate}` {r.key}: re-measured {fmt(value)}{delta} "
            f"({r.data.provenance.remeasure})"
        )
    noise = [f.message for f in fired if f.rule == rules.EVAL_NOISE]
    for gate in sorted(state.config.gates):
        best = standing_baseline(state, gate)
        if best is None:
            continue
        # At the best's own code (a temporary worktree), never HEAD's: see .owncode.
        keys = [r.key for r in state.results_for(best.id, gate)]
        seed = "42" if "42" in keys or not keys else keys[0]
        noise.append(
            f"`{gate}`: re-measure the best at its own code: git ledger run {best.id} "
            f"--gate {gate} --seeds {seed} --remeasure 'eval stability'"
        )
    variance = []
    for gate, cfg in sorted(state.config.gates.items()):
        measured = eval_noise(state, gate)
        if measured is not None:
            # What the re-measurements feed: the evaluation's own σ, beside the verdicts'.
            noise.append(
                f"`{gate}`: eval noise σ {fmt(measured.sigma)} from {measured.pairs} "
                f"re-measurement(s) of {', '.join(measured.versions)} (√(Σd²/2N), d = "
                "re-measured − recorded)"
            )
        best = standing_baseline(state, gate)
        if best is None:
            continue
        stat = next(
            (
                g
                for v in reversed(state.versions)
                if v.front.conclusion
                for g in v.front.conclusion.gates
                if g.gate == gate and g.sigma is not None
            ),
            None,
        )
        line = f"`{gate}`: best {best.id}"
        if stat is not None:
            line += (
                f"; latest σ {fmt(stat.sigma)} ({stat.sigma_source}), n_eff {stat.n_eff:g}, "
                f"threshold {fmt(stat.threshold)}, MDE {fmt(stat.mde)}"
            )
        elif cfg.noise_floor is not None:
            line += f"; only the configured noise_floor {cfg.noise_floor:g}"
        if measured is not None:
            line += f"; eval noise σ {fmt(measured.sigma)} from {measured.pairs} re-measurement(s)"
        variance.append(line)
    subsystems = [
        f"{u.id}: gate `{u.gate}`, subsystem {u.subsystem or '(none declared)'}, "
        f"{'; '.join(v.verdict or 'open' for v in u.versions)}"
        for u in recent
    ]
    revert = []
    for gate in sorted(state.config.gates):
        best = standing_baseline(state, gate)
        if best is None:
            continue
        since = [u.id for u in bets if state.version_key(u.id) > state.version_key(best.id)]
        revert.append(
            f"`{gate}`: high-water {best.id}; {len(since)} bet(s) since"
            + (f" ({', '.join(since[-6:])})" if since else "")
        )
    targeted = {u.gate for u in recent}
    untouched = [
        f"gate `{g}` was not targeted in the last {len(recent)} bets"
        for g in sorted(state.config.gates)
        if g not in targeted
    ]
    return {
        "eval_stability": _quote(remeasured + noise),
        "variance": _quote(variance),
        "subsystems": _quote(subsystems),
        "revert": _quote(revert),
        "untouched": _quote(untouched),
        "observability": _quote([f"[{f.rule}] {f.message}" for f in fired]),
    }


def target_section(state: LedgerState, gate: str) -> str:
    """The Goodhart reflection's seventh section: the targeted window against its regime's
    walk-forward distribution, to end in "keep as target" or "retire" (a retired gate
    cannot be the target of a new registration)."""
    from ledger.core.markdown import fmt

    cfg = state.config.gates.get(gate)
    metric = cfg.metric if cfg is not None else ""
    facts = []
    for other, other_cfg in sorted(state.config.gates.items()):
        if other_cfg.mode != "walk-forward" and other != gate:
            continue
        values = [
            r.metrics[other_cfg.metric]
            for v in state.concluded()
            for r in state.results_for(v.id, other)
            if other_cfg.metric in r.metrics
        ]
        if values:
            facts.append(
                f"`{other}` ({other_cfg.mode}): {len(values)} result(s) of concluded versions, "
                f"{other_cfg.metric} min {fmt(min(values))}, mean {fmt(sum(values) / len(values))}, "
                f"max {fmt(max(values))}"
            )
    return (
        f"## Target audit\n\n"
        f"> The tripwire fired on gate `{gate}` ({metric}). Compare it with its regime's "
        "walk-forward distribution:\n"
        + _quote(facts)
        # Said where it is read, not in a comment: the section counts only with it.
        + "\n\n> Is this window still a fair target, or did the bets fit its noise? Write "
        f"what you found, then end this section with {DECISION_LINE} (a retired gate is "
        "never targeted again).\n"
    )


def _commit(ctx: Context, rid: str, rel: str, path: Path, as_json: bool) -> int:
    if not path.is_file():
        after = rid.removeprefix("REFLECTION_")
        raise BadInput(f"{rel} does not exist", f"write it first: git ledger reflect {after}")
    data = ctx.store.worktree_content(rel)  # what git would commit (autocrlf: LF)
    from ledger.core.reflectiontext import incomplete, lacking

    parsed = parse_entry("reflection", data, rel)
    lacks = lacking(parsed["words"], parsed["why"], ctx.config.triggers.reflection_min_words)
    if lacks:
        # The same findings `next` proposes the step by (fresh.py): one thing to do each.
        after = rid.removeprefix("REFLECTION_")
        raise Refused(
            f"[reflection-incomplete] {rel} is not complete: {incomplete(lacks)}",
            f"do what is said of each section, then: git ledger reflect {after} --commit",
        )

    def build(snap: Snapshot) -> Transition:
        from dataclasses import replace

        from ledger.core.model.entries import ReflectionFront
        from ledger.core.state import Reflection
        from ledger.presets.versions import backlog

        writes: dict[str, bytes | None] = {rel: data}
        # The backlog view as it stands once this reflection is committed.
        state = ctx.state(snap)
        front = ReflectionFront.model_validate(parse_entry("reflection", data, rel)["model"])
        others = [r for r in state.reflections if r.path != rel]
        after = replace(state, reflections=[*others, Reflection(front, rel, ())])
        writes.update(backlog.view_update(after, lambda p: writes.get(p) or snap.read(p)))
        return Transition(kind="reflect", step=rid, subject=f"docs(ledger): {rid}", writes=writes)

    commit_id, _ = ctx.store.transact(build)
    if as_json:
        output.emit_json({"id": rid, "commit": commit_id, "path": rel})
    else:
        output.say(f"committed {rel} ({commit_id[:10]})")
    return 0
