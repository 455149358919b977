"""``git ledger gate topic|batch|converged``: judge a topic, close a batch, stop the loop.

Without ``--record`` a gate only reports; with it the result is committed for
the open batch. Every gate judges against the thresholds frozen at ``weights
init`` and refuses a bar lowered in ledger.toml since.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ledger.core import output
from ledger.core.context import Context, open_context
from ledger.core.errors import BadInput, Refused
from ledger.core.model.documents import dump_json
from ledger.core.model.ids import check_safe
from ledger.core.store import Snapshot, Transition, write_atomic
from ledger.presets.batches import loop as batches
from ledger.presets.batches import rules
from ledger.presets.batches.commands.common import (
    frozen_thresholds,
    open_batches,
    remember,
    require_clean_history,
    require_not_converged,
    trace_findings,
    trace_ride_along,
    trace_text,
    withdrawn,
)
from ledger.presets.batches.loop import Batches


def _print_gate(result: dict[str, Any], as_json: bool, title: str) -> int:
    if as_json:
        output.emit_json(result)
    else:
        output.say(f"{title}: {'PASS' if result['pass'] else 'FAIL'}")
        output.say(f"  inputs: {json.dumps(result['inputs'], sort_keys=True)}")
        output.say(
            f"  thresholds (ledger.toml [batches]): {json.dumps(result['thresholds'], sort_keys=True)}"
        )
        output.say(f"  rule: {result['rule']}")
        if "ratio" in result:
            output.say(f"  ratio: {result['ratio']:.4g}")
    return 0 if result["pass"] else 1


def gate_topic(
    cwd: Path,
    fidelity: float,
    mono: str,
    endpoint: str,
    topic: str | None,
    record: bool,
    as_json: bool,
    *,
    remeasure: bool = False,
    reason: str | None = None,
    rigor_floor: str | None = None,
    confound: str | None = None,
) -> int:
    """One topic's gate; with ``--record`` its result is committed for the open batch
    (exit 0: recorded, the result says pass or fail). A recorded result changes only by
    ``--remeasure`` with a reason (a ``topic-remeasure`` transition of its own)."""
    if remeasure and (topic is None or not (reason or "").strip()):
        raise BadInput(
            "--remeasure needs --topic (the topic measured again) and --reason",
            "git ledger gate topic --record --remeasure --topic T --reason TEXT ...",
        )
    if remeasure and not record:
        raise BadInput("--remeasure records a new result", "drop --no-record")
    ctx = open_batches(cwd) if record else open_context(cwd)
    b = batches.load(ctx.config, ctx.store.snapshot())
    cfg = frozen_thresholds(ctx, b)
    result = batches.topic_gate(
        cfg,
        fidelity,
        batches.parse_bool(mono, "--mono"),
        batches.parse_bool(endpoint, "--endpoint"),
    )
    # The loop's signals, recorded beside the AND they are not part of.
    if rigor_floor is not None:
        result["inputs"]["rigor_floor_flag"] = batches.parse_bool(rigor_floor, "--rigor-floor")
    if confound is not None:
        result["inputs"]["confound"] = confound
    if topic is not None:
        check_safe(topic, "--topic")
    if not record:
        return _print_gate(result, as_json, "topic gate")
    require_clean_history(ctx)
    taken = withdrawn(ctx)

    def build(snap: Snapshot) -> Transition:
        b, n, done = _open_batch(ctx, snap)
        free, seq = batches.next_topic(done)
        name = topic or free
        before = next((t for t in done if t["topic"] == name), None)
        gone = [w for w in rules.pending_withdrawn(b, n, taken) if w.topic == name]
        k = 0
        extra: dict[str, Any] = {}
        if remeasure:
            if before is None and not gone:
                raise BadInput(
                    f"topic {name} of batch {n} has no result to measure again",
                    f"record it: git ledger gate topic --record --topic {name} ...",
                )
            k = rules.next_k(b, n, name, taken)
            previous = None
            if before is not None:
                seq = int(before.get("seq", 0))
                previous = {key: before[key] for key in ("inputs", "pass", "seq")}
            extra["remeasure"] = {"k": k, "reason": (reason or "").strip(), "previous": previous}
        elif before is not None:
            raise BadInput(
                f"topic {name} of batch {n} is already recorded; a recorded result changes "
                "only by a re-measurement with a reason",
                rules.remeasure_command(name),
            )
        elif gone or any(w.batch == n and w.topic == name for w in taken):
            raise Refused(
                f"[topic-withdrawn] topic {name} of batch {n} was withdrawn by a revert; "
                "it is measured again only by a re-measurement with a reason",
                rules.remeasure_command(name),
                rule="topic-withdrawn",
            )
        if before is None and len(done) >= cfg.topics_per_batch:
            raise Refused(
                f"batch {n} has its {cfg.topics_per_batch} topics",
                "close it: git ledger gate batch --record",
            )
        entry = {"batch": n, "topic": name, "seq": seq, **result, **extra}
        writes: dict[str, bytes | None] = trace_ride_along(ctx, b, snap)
        writes[batches.topic_file(ctx.dir, n, name, k)] = dump_json(entry).encode()
        verdict = "pass" if result["pass"] else "fail"
        return Transition(
            kind="topic-remeasure" if remeasure else "topic",
            step=f"batch-{n}-{name}",
            subject=(
                f"docs(batches): batch-{n} topic {name} re-measured: {verdict}"
                if remeasure
                else f"docs(batches): batch-{n} topic {name} {verdict}"
            ),
            body=(reason or "").strip() if remeasure else "",
            writes=writes,
        )

    commit_id, transition = ctx.store.transact(build)
    _print_gate({**result, "recorded": commit_id, "step": transition.step}, as_json, "topic gate")
    return 0


def _open_batch(ctx: Context, snap: Snapshot) -> tuple[Batches, int, list[dict[str, Any]]]:
    """The loop at ``snap``, its open batch and the topics recorded in it (or Refused)."""
    b = batches.load(ctx.config, snap)
    require_not_converged(b)
    n = b.current
    if n is None:
        raise Refused("no weights yet", "git ledger weights init FILE")
    if b.closed(n):
        raise Refused(f"batch {n} is already closed", "revise or copy to open the next batch")
    return b, n, b.done_topics(n)


def gate_batch(cwd: Path, flags: str | None, record: bool, as_json: bool) -> int:
    """The batch gate. With ``--record`` it closes the open batch from its recorded topics
    only: every topic recorded, none withdrawn and not measured again; ``--flags``, when
    given too, must agree with them."""
    if flags is None and not record:
        raise BadInput(
            "--flags is needed without --record",
            "pass one true/false per topic, or close the batch from its recorded topics: "
            "git ledger gate batch --record",
        )
    ctx = open_batches(cwd) if record else open_context(cwd)
    parsed = (
        [batches.parse_bool(f, "--flags") for f in flags.split(",") if f.strip()]
        if flags is not None
        else None
    )
    b = batches.load(ctx.config, ctx.store.snapshot())
    cfg = frozen_thresholds(ctx, b)
    # Flags of the wrong length are bad input even with --record (exit 2, nothing written).
    result = batches.batch_gate(cfg, parsed) if parsed is not None else None
    if result is not None and not record:
        return _print_gate(result, as_json, "batch gate")
    require_clean_history(ctx)
    taken = withdrawn(ctx)

    def build(snap: Snapshot) -> Transition:
        b, n, _done = _open_batch(ctx, snap)
        blockers = rules.close_blockers(b, n, cfg.topics_per_batch, taken)
        if blockers:
            raise Refused.of(blockers)
        recorded = rules.topic_flags(b, n)
        if parsed is not None and parsed != recorded:
            shown = ",".join("true" if f else "false" for f in recorded)
            raise BadInput(
                f"--flags disagree with the recorded topics of batch {n} ({shown})",
                "drop --flags: a recorded batch is closed from its topics' results",
            )
        closing = batches.batch_gate(cfg, recorded)
        writes: dict[str, bytes | None] = trace_ride_along(ctx, b, snap)
        writes[f"{ctx.dir}/gates/batch-{n}.json"] = dump_json({"batch": n, **closing}).encode()
        return Transition(
            kind="batch-close",
            step=f"batch-{n}",
            subject=f"docs(batches): close batch-{n} (ratio {closing['ratio']:.3f})",
            writes=writes,
        )

    commit_id, transition = ctx.store.transact(build)
    b = batches.load(ctx.config, ctx.store.snapshot(commit_id))
    closed = b.gates[int(transition.step.split("-")[1])]
    _print_gate({**closed, "recorded": commit_id, "batch": transition.step}, as_json, "batch gate")
    return 0


def gate_converged(cwd: Path, recent: str | None, record: bool, as_json: bool) -> int:
    """Converged when the last converge_k ratios pass; ``--record`` on a pass commits the
    converged state (weights frozen, ``converged`` and ``run_end`` traced): terminal."""
    ctx = open_batches(cwd) if record else open_context(cwd)
    b = batches.load(ctx.config, ctx.store.snapshot())
    cfg = frozen_thresholds(ctx, b)
    if recent is not None:
        if record:
            raise BadInput("--record judges the recorded ratios", "drop --recent")
        try:
            ratios = [float(r) for r in recent.split(",") if r.strip()]
        except ValueError:
            raise BadInput(f"--recent {recent!r}: comma-separated numbers expected") from None
    else:
        ratios = b.ratios()
    result = batches.converged(cfg, ratios)
    if not record:
        return _print_gate(result, as_json, "converged")
    if not result["pass"]:
        _print_gate(result, as_json, "converged")
        raise Refused("not converged: nothing recorded", "close more batches")
    require_clean_history(ctx)

    def build(snap: Snapshot) -> Transition:
        b = batches.load(ctx.config, snap)
        require_not_converged(b)
        n = b.current
        if n is None or not b.closed(n):
            raise Refused("the current batch is not closed", "git ledger gate batch ... --record")
        found = trace_findings(ctx, b, snap)
        if found:
            raise Refused.of(found)
        rel, committed, on_disk = trace_text(ctx, b, snap)
        path = ctx.store.require_workdir() / rel
        text = before = on_disk if on_disk is not None else committed
        for event in ("converged", "run_end"):
            seq = batches.last_seq(text) + 1
            text += (
                json.dumps(
                    {
                        "seq": seq,
                        "event": event,
                        "batch": n,
                        "fields": {"ratios": ratios[-cfg.converge_k :]},
                    },
                    sort_keys=True,
                )
                + "\n"
            )
        write_atomic(path, text.encode())
        remember(ctx, before, text)
        meta = {**(b.meta or {}), "converged": n}
        return Transition(
            kind="converged",
            step=f"converged-{n}",
            subject=f"docs(batches): converged at batch-{n}",
            writes={f"{ctx.dir}/weights/meta.json": dump_json(meta).encode(), rel: text.encode()},
        )

    commit_id, _ = ctx.store.transact(build)
    return _print_gate({**result, "recorded": commit_id}, as_json, "converged")
