"""The versions loop (preset ``versions``): pre-registered bets, gates, honest verdicts.

Its entries (version files, results, reflections, matrices) are parsed by
:mod:`ledger.core.state` itself, so their problems are already in the state.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from ledger.core.actions import proposal
from ledger.core.loops import Preset, StagedEntries

if TYPE_CHECKING:
    from ledger.core.context import Context
    from ledger.core.facts import FactFn
    from ledger.core.findings import Finding
    from ledger.core.model.config import LedgerConfig
    from ledger.core.state import LedgerState
    from ledger.core.store import Snapshot, Store
    from ledger.presets.versions.readiness import Flags
    from ledger.presets.versions.reading import Reading


class VersionsPreset(Preset):
    name = "versions"
    readme_template = "ledger-README.md"
    readme_blocks = ("index", "baseline")

    def entry_paths(self, config: LedgerConfig) -> list[str]:
        base = config.dir
        prefix = config.ledger.id_prefix
        return [
            f"{base}/{prefix}*.md",
            f"{base}/results/**/*.json",
            f"{base}/REFLECTION_*.md",
            f"{base}/*-matrix.md",
        ]

    def problems(self, store: Store, config: LedgerConfig, snap: Snapshot) -> list[tuple[str, str]]:
        return []  # listed by ledger.core.state while it parses them

    def readme_views(self, state: LedgerState) -> dict[str, str]:
        from ledger.presets.versions.views import readme_views

        return readme_views(state)

    def init_writes(self, config: LedgerConfig, snap: Snapshot) -> dict[str, bytes | None]:
        from ledger.core.resources import read_resource
        from ledger.core.state import TEMPLATE

        path = f"{config.dir}/{TEMPLATE}"  # what register copies a new version from
        if snap.read(path) is not None:
            return {}
        return {path: read_resource("templates", "version.md").encode()}

    def entry_findings(self, ctx: Context, staged: StagedEntries) -> list[Finding]:
        from ledger.presets.versions.hookchecks import findings

        return findings(ctx, staged)

    def open_step(self, ctx: Context) -> tuple[str | None, list[str], str]:
        from ledger.presets.versions.hookchecks import open_step

        return open_step(ctx)

    def conclusion_problem(self, model: dict[str, Any]) -> str | None:
        from ledger.core.model.entries import GateStat
        from ledger.core.model.trusted import rebuild
        from ledger.presets.versions.verdicts import contradiction

        conclusion = model.get("conclusion")
        if not isinstance(conclusion, dict) or conclusion.get("override"):
            return None
        gate = model.get("gate")
        stat = next((g for g in conclusion.get("gates") or [] if g.get("gate") == gate), None)
        if stat is None:
            return None
        # A parsed entry's (verify's replay): validated with it, rebuilt without a validator.
        try:
            target = rebuild(GateStat, stat)
        except (TypeError, AttributeError):
            return f"its statistics for '{gate}' do not parse"
        effect = model.get("effect")
        return contradiction(
            str(conclusion.get("verdict")),
            target,
            float(effect) if isinstance(effect, int | float) else None,
        )

    def history_rules(self) -> list[dict[str, str]]:
        return [
            {
                "paths": "<V>.md",
                "changed_by": "register,conclude",
                "rule": "front matter and Hypothesis frozen once registered",
            },
            {
                "paths": "results/**",
                "changed_by": "record,run,remeasure",
                "rule": "added, never edited; after the verdict only a re-measurement "
                "(remeasure: record/run --remeasure) adds one, in its own slot",
            },
            {"paths": "REFLECTION_*.md", "changed_by": "reflect,hand", "rule": "the reflection"},
        ]

    def fact_kinds(self) -> list[tuple[str, FactFn]]:
        from ledger.presets.versions.facts import FACTS

        return list(FACTS)

    def summary(self, ctx: Context, state: LedgerState) -> dict[str, Any]:
        """The loop's part of ``status --json``, its next step included: one reading of
        each open version serves both (:mod:`ledger.presets.versions.reading`)."""
        from ledger.presets.versions import rules
        from ledger.presets.versions.reading import read_open

        recent = [v.id for v in state.versions[-10:]]
        readings, flags = read_open(ctx.store, state, recent)
        fired, incomplete = rules.reflection_pending(state)
        return {
            "triggers": [{"rule": f.rule, "message": f.message} for f in fired],
            "reflection_due": bool(fired),
            "incomplete_reflection": incomplete,
            **_next_parts(state, readings, {v: flags[v] for v in recent}),
            # Which gates of each open version are still unmeasured (next measures them).
            "unmeasured": _unmeasured(state),
            "unjudged": [
                {"id": vid, "why": why} for vid, r in readings.items() if (why := r.unjudged())
            ],
            "brief": _brief(state),
            "backlog": _backlog(ctx, state),
            # The yellow flags the recent versions' conclusions stored (issue 26).
            "yellow": [
                {"id": v.id, "text": v.front.conclusion.yellow_flag}
                for v in state.versions[-10:]
                if v.front.conclusion is not None and v.front.conclusion.yellow_flag
            ],
        }

    def next_action(self, ctx: Context, state: LedgerState) -> dict[str, Any]:
        from ledger.presets.versions.nextstep import next_action
        from ledger.presets.versions.reading import read_open

        return next_action(state, read_open(ctx.store, state)[0]).as_dict()

    def drafts(self) -> tuple[str, ...]:
        return ("REFLECTION_*.md",)  # written by 'reflect', committed once its sections are

    def fresh_next(
        self, cwd: Path, top: Path, common: Path, data: dict[str, Any]
    ) -> dict[str, Any]:
        from ledger.presets.versions.fresh import fresh_next

        return fresh_next(cwd, top, common, data)

    def finding_action(self, ctx: Context, finding: dict[str, Any]) -> dict[str, Any] | None:
        """A history finding against a version (open or concluded) stays in history for
        good: closing the version as void is what lets verify, and every push, pass."""
        step = str(finding.get("step") or "")
        version = ctx.state().version(step) if step else None
        if version is None or version.front.void or version.front.matrix:
            return None  # nothing to void (a cell is closed with its matrix)
        out = proposal(
            "void",
            f"git ledger void {step} --reason '<REASON>'",
            f"{step}'s history does not verify: [{finding.get('rule')}] "
            f"{finding.get('message')} (git ledger verify lists every finding); close it as "
            "void, its id is never reused",
            step=step,
            placeholders=["<REASON>"],
        )
        if version.concluded:
            # Its verdict stops counting (a baseline may move): a person weighs that
            # against repairing a history nobody has pulled yet.
            out["decide"] = (
                f"whether to void {step}'s verdict ({version.verdict}), or to repair the "
                f"history before it is pushed ({finding.get('fix')})"
            )
        return out


def next_data(ctx: Context, state: LedgerState) -> dict[str, Any]:
    """What :func:`~ledger.presets.versions.fresh.fresh_next` reads of :meth:`summary`
    (a verb's ``next:`` line), the same, without what only ``status`` shows.

    With no version open the readings and the recent versions' flags are not read (a
    walk of the whole history, a fifth of a ``conclude`` at 1,000 steps): the next step
    is then a registration, a reflection, a matrix or a phase step, none of which reads
    them (flagged results and their re-measurement correct only a ``conclude``, which
    needs an open version)."""
    from ledger.presets.versions.reading import read_open

    if not state.open_versions():
        return {**_next_parts(state, {}, {}), "brief": _brief(state)}
    recent = [v.id for v in state.versions[-10:]]
    readings, flags = read_open(ctx.store, state, recent)
    return {**_next_parts(state, readings, {v: flags[v] for v in recent}), "brief": _brief(state)}


def _next_parts(
    state: LedgerState, readings: dict[str, Reading], flags: dict[str, Flags]
) -> dict[str, Any]:
    """The loop's next step, and what fresh.py corrects it by with what only git says."""
    from ledger.presets.versions.nextstep import code_commit, next_action

    nxt = next_action(state, readings)
    # A version that builds on another needs its code committed before it is measured;
    # whether it is, only git's history says (see ledger.presets.versions.fresh).
    version = state.version(nxt.step) if nxt.step and nxt.action == "measure" else None
    code_first = (
        code_commit(state, version).as_dict()
        if version is not None and version.front.parent and version.front.files
        else None
    )
    # After a refutation `next` offers reverting its code; whether that code is still on
    # the branch, only git's history says.
    last = state.versions[-1] if state.versions else None
    refuted = (
        last.id
        if last is not None and last.verdict == "refuted" and not last.front.matrix
        else None
    )
    return {
        "next": nxt.as_dict(),
        "code_first": code_first,
        "refuted": refuted,
        "flagged": _flagged(state, flags),
        "remeasure": _remeasure(state, readings),
        # What a written reflection's sections are held to (fresh.py reads its text).
        "reflection_min_words": state.config.triggers.reflection_min_words,
    }


def _backlog(ctx: Context, state: LedgerState) -> dict[str, Any]:
    """The observability backlog's queue (reflection section 6; see backlog.py)."""
    from ledger.presets.versions import backlog

    snap = ctx.store.snapshot(state.commit_id) if state.commit_id else ctx.store.snapshot()
    return {"queued": [d.as_json() for d in backlog.queue(state, snap.read)]}


def _brief(state: LedgerState) -> dict[str, str] | None:
    """The latest concluded entry's Next-steps text: the brief the new version starts from
    (it was visible only in 'show'; status and next carry it)."""
    for version in reversed(state.concluded()):
        if version.front.conclusion is not None:
            return {"from": version.id, "text": version.front.conclusion.next}
    return None


def _unmeasured(state: LedgerState) -> list[dict[str, Any]]:
    from ledger.presets.versions.nextstep import unmeasured_gates

    out = []
    for version in state.open_versions():
        gates = unmeasured_gates(state, version)
        if not any(r.version == version.id and r.gate == version.front.gate for r in state.results):
            gates.insert(0, version.front.gate)
        if gates:
            out.append({"id": version.id, "gates": gates})
    return out


def _flagged(state: LedgerState, flags: dict[str, Flags]) -> list[dict[str, Any]]:
    """Versions with results measured on a dirty work tree (any version) or before any
    code commit of the version (the recent ones: that needs history); 'show ID' names
    the files."""
    counts: dict[str, int] = {}
    for r in state.results:
        if r.status == "ok" and r.dirty:
            counts[r.version] = counts.get(r.version, 0) + 1
    before = {vid: len(f.before_code) for vid, f in flags.items() if f.before_code}
    mixed = {vid: len(f.mixed) for vid, f in flags.items() if f.mixed}
    return [
        {
            "id": vid,
            "dirty": counts.get(vid, 0),
            "before_code": before.get(vid, 0),
            # Added by issue 26, and only when there are such results: the schema before it
            # stays as it was.
            **({"mixed": mixed[vid]} if vid in mixed else {}),
        }
        for vid in dict.fromkeys([*counts, *before, *mixed])
    ]


def _remeasure(state: LedgerState, readings: dict[str, Reading]) -> dict[str, Any] | None:
    """What a clean re-measurement of the open version's flagged results takes: its
    seeds (results of windows are left to the override), and whether a command runs them."""
    from ledger.presets.versions.nextstep import has_command

    for vid, reading in readings.items():
        flagged = set(reading.flags.dirty) | set(reading.flags.before_code)
        flagged |= set(reading.flags.mixed)
        results = [r for r in reading.results if r.path in flagged]
        if not results or any(r.data.window is not None for r in results):
            continue
        return {
            "step": vid,
            "gate": reading.gate,
            "seeds": sorted({r.key for r in results}, key=_seed_order),
            "run": has_command(state, reading.gate),
            "before_code": bool(reading.flags.before_code),
        }
    return None


def _seed_order(key: str) -> tuple[int, str]:
    return (int(key), "") if key.lstrip("-").isdigit() else (0, key)


PRESET = VersionsPreset()
