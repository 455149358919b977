"""The batches loop (preset ``batches``): revise exactly one weight per batch until convergence.

Order of the loop: ``weights init`` (thresholds frozen), then per batch every
topic's gate (``gate topic --record``), the batch gate (``gate batch --record``),
then either convergence (``gate converged --record``, terminal) or exactly one
revision (``weights revise``; ``weights copy`` carries it forward unchanged).
The entries and their rules live in :mod:`ledger.presets.batches.loop`.
"""

from __future__ import annotations

import shlex
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
    from ledger.presets.batches import loop as batches

# Entries written only by the loop's verbs (transitions), never by a hand commit; the
# trace is written by ``trace emit`` and rides along with the next transition.
TRANSITION_ONLY = ("weights/", "gates/", "topics/", "revisions/", "trace/")


def _action(action: str, command: str, reason: str, **extra: Any) -> dict[str, Any]:
    """One step of this loop's ``next``: the shape every loop's step has
    (:func:`ledger.core.actions.proposal`), with this loop's own keys."""
    return {**proposal(action, command, reason), **extra}


def revisable(b: batches.Batches) -> list[dict[str, Any]]:
    """The weights a revision may change now: scalar keys of the unfrozen targets."""
    n = b.current
    if n is None:
        return []
    out = []
    for target, keys in sorted(b.weights[n].items()):
        if target in b.frozen() or not isinstance(keys, dict):
            continue
        for key, value in sorted(keys.items()):
            if not isinstance(value, dict | list):
                out.append({"target": target, "key": key, "value": value})
    return out


class BatchesPreset(Preset):
    name = "batches"
    transitions_read_whole = True  # each loads the loop from a snapshot (loop.load)
    readme_template = "ledger-README-batches.md"  # no blocks: its views are files

    def entry_paths(self, config: LedgerConfig) -> list[str]:
        base = config.dir
        return [
            f"{base}/weights/*.json",
            f"{base}/gates/batch-*.json",
            f"{base}/topics/batch-*/*.json",
            f"{base}/revisions/batch-*.json",
            f"{base}/trace/*.jsonl",
        ]

    def problems(self, store: Store, config: LedgerConfig, snap: Snapshot) -> list[tuple[str, str]]:
        from ledger.presets.batches import loop as batches

        return list(batches.load(config, snap).problems)

    def view_paths(self, config: LedgerConfig) -> list[str]:
        from ledger.presets.batches import loop as batches

        return [f"{config.dir}/{batches.REVISION_LOG}"]

    def render_view(self, config: LedgerConfig, snap: Snapshot, path: str) -> bytes | None:
        from ledger.presets.batches import loop as batches

        if path == f"{config.dir}/{batches.REVISION_LOG}":
            return batches.render_log(batches.load(config, snap))
        return None

    def init_writes(self, config: LedgerConfig, snap: Snapshot) -> dict[str, bytes | None]:
        from ledger.presets.batches import loop as batches

        writes: dict[str, bytes | None] = {f"{config.dir}/{batches.REVISION_LOG}": b""}
        vocab = batches.table(config).forbidden_vocabulary
        if vocab and snap.read(vocab) is None:
            writes[vocab] = batches.FORBIDDEN_TEMPLATE.encode()
        return writes

    def drafts(self) -> tuple[str, ...]:
        # Trace events ride along with the next transition (DESIGN: trace events are not
        # transitions): an uncommitted trace file is the loop at work.
        return ("trace/*.jsonl",)

    def hook_findings(self, ctx: Context, staged: list[str]) -> list[Finding]:
        from ledger.core.findings import Finding
        from ledger.presets.batches import loop as batches

        index = ctx.store.index_snapshot()
        b = batches.load(ctx.config, index)
        found: list[Finding] = []
        fix = "regenerate it with the git ledger verbs; do not edit generated views by hand"
        if b.view is not None and b.view != batches.render_log(b):
            found.append(
                Finding("views-drift", f"{ctx.dir}/{batches.REVISION_LOG} is out of step", fix)
            )
        touched = [
            p for p in staged if any(p.startswith(f"{ctx.dir}/{t}") for t in TRANSITION_ONLY)
        ]
        if touched:
            found.append(
                Finding(
                    "transition-only",
                    f"{', '.join(touched[:3])} change only through their transitions "
                    "(weights init|revise|copy, gate topic|batch|converged --record; trace "
                    "events ride along with them)",
                    f"git restore --staged --worktree {' '.join(touched[:3])}",
                )
            )
        if ctx.config_file in staged:
            broken = batches.broken_threshold(ctx.config, b)
            if broken is not None:
                setting, line = broken
                found.append(
                    Finding(
                        "thresholds-frozen",
                        line,
                        f"restore the frozen value in ledger.toml ({setting.key} = "
                        f"{setting.literal()})",
                    )
                )
        return found

    def frozen_settings(self, ctx: Context, snap: Snapshot) -> list[FrozenSetting]:
        from ledger.presets.batches import loop as batches

        return batches.frozen_settings(batches.load(ctx.config, snap))

    def fact_kinds(self) -> list[tuple[str, FactFn]]:
        from ledger.presets.batches.facts import FACTS

        return list(FACTS)

    def history_rules(self) -> list[dict[str, str]]:
        return [
            {
                "paths": "weights/batch-0.json",
                "changed_by": "weights-init",
                "rule": "once",
                "mode": "append",
            },
            {
                "paths": "weights/meta.json",
                "changed_by": "weights-init,converged,vocabulary",
                "rule": "frozen",
            },
            {
                "paths": "weights/batch-*.json",
                "changed_by": "weights-revise,weights-copy",
                "rule": "one revision per closed batch, never edited",
                "mode": "append",
            },
            {
                "paths": "topics/**",
                "changed_by": "topic,topic-remeasure",
                "rule": "added only (a re-measurement is a file of its own)",
                "mode": "append",
            },
            {
                "paths": "gates/batch-*.json",
                "changed_by": "batch-close",
                "rule": "added only",
                "mode": "append",
            },
            {
                "paths": "revisions/batch-*.json",
                "changed_by": "weights-revise",
                "rule": "added",
                "mode": "append",
            },
        ]

    def history_checks(self) -> dict[str, Any]:
        from ledger.presets.batches.history import CHECKS

        return dict(CHECKS)

    def headline(self, data: dict[str, Any]) -> str:
        b = data.get("batches")
        if not isinstance(b, dict):
            return super().headline(data)
        if b["batch"] is None:
            return "no weights yet"
        done = (
            f"converged at batch {b['converged']}"
            if b["converged"] is not None
            else (
                f"batch {b['batch']} {'closed' if b['closed'] else 'open'}, "
                f"{b['topics_done']} topic(s) done"
            )
        )
        ratios = ", ".join(f"{r:.3g}" for r in b["ratios"][-5:]) or "none yet"
        return f"{done}; recent pass ratios {ratios}"

    def summary(self, ctx: Context, state: LedgerState) -> dict[str, Any]:
        from ledger.presets.batches import loop as batches

        b = batches.load(ctx.config, ctx.store.snapshot(state.commit_id))
        n = b.current
        return {
            "batches": {
                "run_id": b.run_id if b.meta else None,
                "batch": n,
                "closed": b.closed(n) if n is not None else False,
                "topics_done": len(b.done_topics(n)) if n is not None else 0,
                "ratios": b.ratios(),
                "converged": b.converged_at,
            }
        }

    def fresh_next(
        self, cwd: Path, top: Path, common: Path, data: dict[str, Any]
    ) -> dict[str, Any]:
        """The trace on disk (not in the ledger tree): a line no verb wrote refuses every
        transition it would ride along with, so it comes first."""
        nxt: dict[str, Any] = data["next"]
        run_id = data.get("batches", {}).get("run_id")
        if not run_id or nxt.get("done"):
            return nxt
        # The answer is a function of HEAD (the committed trace), the trace on disk and
        # the verbs' journal: kept by their content, so an agent's next and status after
        # a transition do not open the ledger (pydantic, pygit2) to read the same again.
        from ledger.core import caches
        from ledger.presets.batches.files import JOURNAL

        state_dir = common / "ledger"
        trace = top / str(data["dir"]) / "trace" / f"{run_id}.jsonl"
        named = [str(data.get("commit")), str(data["dir"]), str(run_id)]
        inputs = [_digest(trace), _digest(state_dir / JOURNAL)]
        file, cache_key = caches.path(state_dir, TRACE_CHECK), caches.key(TRACE_CHECK)
        item = caches.key(TRACE_CHECK, *named, *inputs)
        known = caches.recall(file, cache_key, item, list)
        if known is not None and not (
            len(known) in (0, 3) and all(isinstance(part, str) for part in known)
        ):
            known = None  # not this code's shape: asked again
        if known is None:
            commit = data.get("commit")
            known = _trace_problem(top, str(commit) if commit else None)
            # Kept only under the contents it read: a trace written while it read
            # (an agent's edit racing a poller) gets no answer kept for either.
            if [_digest(trace), _digest(state_dir / JOURNAL)] == inputs:
                caches.remember(file, cache_key, item, known, 8)
        if not known:
            return nxt
        return _action(*known)

    def next_action(self, ctx: Context, state: LedgerState) -> dict[str, Any]:
        from ledger.presets.batches import loop as batches
        from ledger.presets.batches import rules

        b = batches.load(ctx.config, ctx.store.snapshot(state.commit_id))
        if b.problems:
            path, error = b.problems[0]
            return _action("fix-entry", f"$EDITOR {path}", f"{path} does not parse: {error}")
        n = b.current
        if n is None:
            return _action(
                "weights-init",
                "git ledger weights init WEIGHTS.json --run-id RUN",
                "write batch-0's weights as {target: {key: value}} JSON; the thresholds "
                "are frozen with it",
            )
        if b.converged_at is not None:
            return _action(
                "done",
                "git ledger resume",
                f"the loop converged at batch {b.converged_at}; the weights are frozen",
                done=True,
            )
        broken = batches.broken_threshold(ctx.config, b)
        if broken is not None:
            setting, line = broken
            return _action(
                "restore-threshold",
                setting.restore(),
                f"{line}: every gate refuses until ledger.toml holds the frozen value again",
            )
        cfg = b.thresholds()
        if not b.closed(n):
            from ledger.core.verify import history_notes

            notes = history_notes(ctx.store, ctx.config, ctx.config_file)
            taken = rules.withdrawn_topics(notes, ctx.dir)
            blockers = rules.close_blockers(b, n, cfg.topics_per_batch, taken)
            if blockers:
                block = blockers[0]
                action = "remeasure" if block.rule == "topic-withdrawn" else "topic"
                return _action(action, block.fix, f"[{block.rule}] {block.message}")
            return _action(
                "close-batch",
                "git ledger gate batch --record",
                f"batch {n}: every topic is recorded; the batch closes from their results",
            )
        if batches.converged(cfg, b.ratios())["pass"]:
            return _action(
                "converge",
                "git ledger gate converged --record",
                f"the last {cfg.converge_k} batch ratios pass: record convergence",
            )
        options = revisable(b)
        blocked = rules.revise_blockers(b, n, cfg.fidelity_min, None, None)
        if blocked:
            return _action("copy", "git ledger weights copy", blocked[0].line())
        if not options:
            return _action(
                "copy", "git ledger weights copy", "no weight is revisable: carry the batch forward"
            )
        first, answers, why = options[0], "", ""
        shown = rules.batch_signals(b, n, cfg.fidelity_min)
        if shown:
            # The decision table's target for the first signal by priority, when the
            # weights have it (else the first revisable weight answers it).
            signal, topic = shown[0]
            target = dict(rules.TABLE)[signal]
            first = next((o for o in options if o["target"] == target), first)
            answers = f" --topic {shlex.quote(topic)} --signal {signal}"
            why = f"; it answers {signal} on topic {topic} (decision table: {target})"
        return _action(
            "revise",
            f"git ledger weights revise --target {first['target']} --key {first['key']}"
            f"{answers} --new VALUE --reason TEXT",
            f"batch {n} is closed: revise exactly one weight to open batch {n + 1}{why}",
            revisable=options,
            alternatives=[
                _action(
                    "copy",
                    "git ledger weights copy",
                    "carry the batch forward unchanged",
                )
            ],
        )

    def report_section(self, ctx: Context) -> dict[str, Any]:
        from ledger.presets.batches import loop as batches

        b = batches.load(ctx.config, ctx.store.snapshot())
        cfg = b.thresholds()
        return {
            "batches": {
                "ratios": b.ratios(),
                "bar": cfg.batch_ratio_min,
                "converged": batches.converged(cfg, b.ratios())["pass"],
                "converged_at": b.converged_at,
            }
        }


PRESET = BatchesPreset()


TRACE_CHECK = "trace-check.json"


def _digest(path: Path) -> str:
    """The content hash of a regular file, or "-" for none (a FIFO or a device
    included: the check reads only regular files)."""
    import hashlib

    from ledger.core.repobase import read_regular

    data = read_regular(path)
    return hashlib.sha256(data).hexdigest() if data is not None else "-"


def _trace_problem(top: Path, commit: str | None) -> list[str]:
    """The ``fix-trace`` step's (action, command, reason) when the trace on disk holds a
    line no verb wrote; empty when it is clean. Read against ``commit``, the one the
    answer is kept under, not HEAD read again: a commit landing in between (a plain
    ``git commit`` right after a verb) left its answer under the earlier commit."""
    from ledger.core.context import open_context
    from ledger.presets.batches import loop as batches
    from ledger.presets.batches.commands.common import trace_findings

    ctx = open_context(top)
    snap = ctx.store.snapshot(commit)
    b = batches.load(ctx.config, snap)
    found = trace_findings(ctx, b, snap, write=False)
    if not found:
        return []
    return [
        "fix-trace",
        f"$EDITOR {batches.trace_path(ctx.config, b.run_id)}",
        f"[{found[0].rule}] {found[0].message}; every transition is refused until it "
        f"is gone (fix: {found[0].fix})",
    ]
