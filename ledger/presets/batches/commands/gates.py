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
from ledger.presets.batches.commands.common import (
    frozen_thresholds,
    open_batches,
    require_not_converged,
    trace_ride_along,
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
) -> int:
    """One topic's gate; with ``--record`` its result is committed for the open batch
    (exit 0: recorded, the result says pass or fail)."""
    ctx = open_batches(cwd) if record else open_context(cwd)
    b = batches.load(ctx.config, ctx.store.snapshot())
    cfg = frozen_thresholds(ctx, b)
    result = batches.topic_gate(
        cfg,
        fidelity,
        batches.parse_bool(mono, "--mono"),
        batches.parse_bool(endpoint, "--endpoint"),
    )
    if topic is not None:
        check_safe(topic, "--topic")
    if not record:
        return _print_gate(result, as_json, "topic gate")

    def build(snap: Snapshot) -> Transition:
        b, n, done = _open_batch(ctx, snap)
        free, seq = batches.next_topic(done)
        name = topic or free
        if any(t["topic"] == name for t in done):
            raise BadInput(f"topic {name} of batch {n} is already recorded", "git ledger resume")
        if len(done) >= cfg.topics_per_batch:
            raise Refused(
                f"batch {n} has its {cfg.topics_per_batch} topics",
                "close it: git ledger gate batch --flags ... --record",
            )
        entry = {"batch": n, "topic": name, "seq": seq, **result}
        writes: dict[str, bytes | None] = trace_ride_along(ctx, b)
        writes[f"{ctx.dir}/topics/batch-{n}/{name}.json"] = dump_json(entry).encode()
        return Transition(
            kind="topic",
            step=f"batch-{n}-{name}",
            subject=f"docs(batches): batch-{n} topic {name} {'pass' if result['pass'] else 'fail'}",
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


def gate_batch(cwd: Path, flags: str, record: bool, as_json: bool) -> int:
    ctx = open_batches(cwd) if record else open_context(cwd)
    parsed = [batches.parse_bool(f, "--flags") for f in flags.split(",") if f.strip()]
    b = batches.load(ctx.config, ctx.store.snapshot())
    cfg = frozen_thresholds(ctx, b)
    result = batches.batch_gate(cfg, parsed)
    if not record:
        return _print_gate(result, as_json, "batch gate")

    def build(snap: Snapshot) -> Transition:
        b, n, done = _open_batch(ctx, snap)
        if done and [bool(t["pass"]) for t in done] != parsed:
            recorded = ",".join("true" if t["pass"] else "false" for t in done)
            raise BadInput(
                f"--flags disagree with the {len(done)} recorded topic(s) of batch {n} ({recorded})",
                "record every topic with 'gate topic --record', then pass their results",
            )
        writes: dict[str, bytes | None] = trace_ride_along(ctx, b)
        writes[f"{ctx.dir}/gates/batch-{n}.json"] = dump_json({"batch": n, **result}).encode()
        return Transition(
            kind="batch-close",
            step=f"batch-{n}",
            subject=f"docs(batches): close batch-{n} (ratio {result['ratio']:.3f})",
            writes=writes,
        )

    commit_id, transition = ctx.store.transact(build)
    _print_gate({**result, "recorded": commit_id, "batch": transition.step}, as_json, "batch gate")
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

    def build(snap: Snapshot) -> Transition:
        b = batches.load(ctx.config, snap)
        require_not_converged(b)
        n = b.current
        if n is None or not b.closed(n):
            raise Refused("the current batch is not closed", "git ledger gate batch ... --record")
        root = ctx.store.require_workdir()
        rel = batches.trace_path(ctx.config, b.run_id)
        path = root / rel
        text = batches.repair_trace(path.read_text() if path.is_file() else "")
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
        meta = {**(b.meta or {}), "converged": n}
        return Transition(
            kind="converged",
            step=f"converged-{n}",
            subject=f"docs(batches): converged at batch-{n}",
            writes={f"{ctx.dir}/weights/meta.json": dump_json(meta).encode(), rel: text.encode()},
        )

    commit_id, _ = ctx.store.transact(build)
    return _print_gate({**result, "recorded": commit_id}, as_json, "converged")
