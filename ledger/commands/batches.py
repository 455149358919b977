"""Batches verbs: weights init|revise|copy, gate topic|batch|converged, trace emit, resume."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

from ledger import batches, output
from ledger.batches import Batches
from ledger.context import Context, open_context, open_preset
from ledger.errors import BadInput, Refused
from ledger.model.documents import dump_json, load_json
from ledger.model.ids import check_safe
from ledger.store import Snapshot, Transition, write_atomic


def _ctx(cwd: Path) -> Context:
    return open_preset(cwd, "batches")


def _trace_ride_along(ctx: Context, b: Batches) -> dict[str, bytes | None]:
    """Trace events written since the last commit ride along with this transition."""
    rel = batches.trace_path(ctx.config, b.run_id)
    path = ctx.store.require_workdir() / rel
    return {rel: path.read_bytes()} if path.is_file() else {}


def weights_init(cwd: Path, file: Path, frozen: tuple[str, ...], as_json: bool) -> int:
    ctx = _ctx(cwd)
    if not file.is_file():
        raise BadInput(f"no such weights file: {file}")
    data = load_json(file.read_bytes(), str(file))
    if not isinstance(data, dict) or not data:
        raise BadInput(f"{file}: weights must be a JSON object {{target: {{key: value}}}}")
    for target, value in data.items():
        if target not in frozen and not isinstance(value, dict):
            raise BadInput(f"{file}: target {target!r} must map keys to values (or be --frozen)")
    for target in frozen:
        if target not in data:
            raise BadInput(f"--frozen {target}: no such target in {file}")
    meta = {"frozen": sorted(frozen), "run_id": f"run-{uuid.uuid4().hex[:8]}"}

    def build(snap: Snapshot) -> Transition:
        if batches.load(ctx.config, snap).weights:
            raise Refused("weights are already initialised", "git ledger resume")
        base = ctx.dir
        return Transition(
            kind="weights-init",
            step="batch-0",
            subject="docs(batches): batch-0 weights",
            writes={
                f"{base}/weights/batch-0.json": dump_json(data).encode(),
                f"{base}/weights/meta.json": dump_json(meta).encode(),
            },
        )

    commit_id, _ = ctx.store.transact(build)
    _emit(
        as_json,
        {"commit": commit_id, "batch": 0, "run_id": meta["run_id"]},
        f"batch-0 committed ({commit_id[:10]}); run id {meta['run_id']}",
    )
    return 0


def _open_next(ctx: Context, b: Batches) -> int:
    """The batch whose revision is allowed now (the current one, once it is closed)."""
    current = b.current
    if current is None:
        raise Refused("no weights yet", "git ledger weights init FILE")
    if not b.closed(current):
        if current - 1 in b.revisions or (current > 0 and current - 1 in b.gates):
            raise Refused(
                f"batch {current - 1} was already revised or copied (batch {current} is open); "
                "one revision per closed batch",
                f"close batch {current} first: git ledger gate batch --flags ... --record",
            )
        raise Refused(
            f"batch {current} is not closed", "git ledger gate batch --flags ... --record"
        )
    return current


def weights_change(
    cwd: Path,
    *,
    copy: bool,
    target: str | None,
    key: str | None,
    new: str | None,
    reason: str | None,
    as_json: bool,
) -> int:
    ctx = _ctx(cwd)
    root = ctx.store.require_workdir()
    cfg = batches.table(ctx.config)
    if not copy:
        if not target or not key or new is None or not (reason or "").strip():
            raise BadInput("weights revise needs --target, --key, --new and --reason")
        leaks = batches.forbidden_words(root, cfg, new)
        if leaks:
            raise Refused(
                f"[leak-audit] the revised text uses forbidden words: {', '.join(leaks)}",
                f"rephrase without them ({cfg.forbidden_vocabulary})",
            )

    # Validated above for a revision; plain strings from here on.
    target_s, key_s, new_s = target or "", key or "", new or ""

    def build(snap: Snapshot) -> Transition:
        b = batches.load(ctx.config, snap)
        n = _open_next(ctx, b)
        base = ctx.dir
        writes: dict[str, bytes | None] = _trace_ride_along(ctx, b)
        if copy:
            writes[f"{base}/weights/batch-{n + 1}.json"] = snap.read_blob(b.weight_blobs[n])
            return Transition(
                kind="weights-copy",
                step=f"batch-{n + 1}",
                subject=f"docs(batches): batch-{n + 1} copies batch-{n}",
                writes=writes,
            )
        frozen = set((b.meta or {}).get("frozen", []))
        if target_s in frozen:
            raise Refused(f"[frozen-target] {target_s} is frozen", "revise another target")
        weights = json.loads(json.dumps(b.weights[n]))
        if (
            target_s not in weights
            or not isinstance(weights[target_s], dict)
            or key_s not in weights[target_s]
        ):
            raise BadInput(
                f"no weight {target_s}.{key_s} in batch-{n}", "revise an existing weight"
            )
        old = weights[target_s][key_s]
        value: Any = new_s
        if isinstance(old, int | float) and not isinstance(old, bool):
            try:
                value = float(new_s) if isinstance(old, float) or "." in new_s else int(new_s)
            except ValueError:
                raise BadInput(f"{target_s}.{key_s} is a number; --new {new_s!r} is not") from None
        if value == old:
            raise BadInput(
                f"{target_s}.{key_s} already is {old!r}",
                "use 'git ledger weights copy' to carry it forward",
            )
        weights[target_s][key_s] = value
        revision = {
            "batch": n,
            "target": target_s,
            "key": key_s,
            "old": old,
            "new": value,
            "reason": (reason or "").strip(),
        }
        b.revisions[n] = revision
        writes[f"{base}/weights/batch-{n + 1}.json"] = dump_json(weights).encode()
        writes[f"{base}/revisions/batch-{n}.json"] = dump_json(revision).encode()
        writes[f"{base}/{batches.REVISION_LOG}"] = batches.render_log(b)
        return Transition(
            kind="weights-revise",
            step=f"batch-{n + 1}",
            subject=f"docs(batches): batch-{n + 1} revises {target_s}.{key_s}",
            body=revision["reason"],
            writes=writes,
        )

    commit_id, transition = ctx.store.transact(build)
    _emit(
        as_json,
        {"commit": commit_id, "opened": transition.step},
        f"{transition.subject} ({commit_id[:10]})",
    )
    return 0


def _emit(as_json: bool, data: dict[str, Any], text: str) -> None:
    if as_json:
        output.emit_json(data)
    else:
        output.say(text)


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


def gate_topic(cwd: Path, fidelity: float, mono: str, endpoint: str, as_json: bool) -> int:
    ctx = open_context(cwd)
    result = batches.topic_gate(
        batches.table(ctx.config),
        fidelity,
        batches.parse_bool(mono, "--mono"),
        batches.parse_bool(endpoint, "--endpoint"),
    )
    return _print_gate(result, as_json, "topic gate")


def gate_batch(cwd: Path, flags: str, record: bool, as_json: bool) -> int:
    ctx = _ctx(cwd) if record else open_context(cwd)
    parsed = [batches.parse_bool(f, "--flags") for f in flags.split(",") if f.strip()]
    result = batches.batch_gate(batches.table(ctx.config), parsed)
    if record:

        def build(snap: Snapshot) -> Transition:
            b = batches.load(ctx.config, snap)
            n = b.current
            if n is None:
                raise Refused("no weights yet", "git ledger weights init FILE")
            if b.closed(n):
                raise Refused(
                    f"batch {n} is already closed", "revise or copy to open the next batch"
                )
            writes: dict[str, bytes | None] = _trace_ride_along(ctx, b)
            writes[f"{ctx.dir}/gates/batch-{n}.json"] = dump_json({"batch": n, **result}).encode()
            return Transition(
                kind="batch-close",
                step=f"batch-{n}",
                subject=f"docs(batches): close batch-{n} (ratio {result['ratio']:.3f})",
                writes=writes,
            )

        commit_id, transition = ctx.store.transact(build)
        result = {**result, "recorded": commit_id, "batch": transition.step}
    return _print_gate(result, as_json, "batch gate")


def gate_converged(cwd: Path, recent: str | None, as_json: bool) -> int:
    ctx = open_context(cwd)
    cfg = batches.table(ctx.config)
    if recent is not None:
        try:
            ratios = [float(r) for r in recent.split(",") if r.strip()]
        except ValueError:
            raise BadInput(f"--recent {recent!r}: comma-separated numbers expected") from None
    else:
        ratios = batches.load(ctx.config, ctx.store.snapshot()).ratios()
    return _print_gate(batches.converged(cfg, ratios), as_json, "converged")


def trace_emit(cwd: Path, event: str, fields: tuple[str, ...], as_json: bool) -> int:
    ctx = _ctx(cwd)
    check_safe(event, "event name")
    root = ctx.store.require_workdir()
    values: dict[str, str] = {}
    for item in fields:
        k, sep, v = item.partition("=")
        if not sep:
            raise BadInput(f"--field {item!r} is not k=v")
        check_safe(k, "field name")
        if v.startswith("/") or v.startswith("~"):
            full = Path(v).expanduser().resolve()
            if root.resolve() not in full.parents:
                raise BadInput(
                    f"--field {k}: {v} is outside the repository", "trace paths are stored relative"
                )
            v = str(full.relative_to(root.resolve()))
        values[k] = v
    with ctx.store.writer_lock():
        b = batches.load(ctx.config, ctx.store.snapshot())
        rel = batches.trace_path(ctx.config, b.run_id)
        path = root / rel
        text = path.read_text() if path.is_file() else ""
        seq = batches.last_seq(text) + 1
        line = json.dumps(
            {"seq": seq, "event": event, "batch": b.current, "fields": values}, sort_keys=True
        )
        write_atomic(path, (text + line + "\n").encode())
    _emit(as_json, {"seq": seq, "event": event, "path": rel}, f"trace {event} seq {seq}")
    return 0


def resume(cwd: Path, as_json: bool) -> int:
    """The loop's position rebuilt from disk alone (after a crash or a context reset)."""
    ctx = _ctx(cwd)
    b = batches.load(ctx.config, ctx.store.snapshot())
    root = ctx.store.require_workdir()
    trace = root / batches.trace_path(ctx.config, b.run_id)
    committed = ctx.store.snapshot().read(batches.trace_path(ctx.config, b.run_id))
    on_disk = trace.read_text() if trace.is_file() else (committed or b"").decode()
    n = b.current
    ratios = b.ratios()
    cfg = batches.table(ctx.config)
    data = {
        "run_id": b.run_id,
        "batch": n,
        "batch_closed": b.closed(n) if n is not None else False,
        "weights_file": f"{ctx.dir}/weights/batch-{n}.json" if n is not None else None,
        "next_weights_file": f"{ctx.dir}/weights/batch-{n + 1}.json" if n is not None else None,
        "revisions": [b.revisions[k] for k in sorted(b.revisions)],
        "last_seq": batches.last_seq(on_disk),
        "recent_ratios": ratios[-cfg.converge_k :],
        "converged": batches.converged(cfg, ratios)["pass"],
        "uncommitted_trace": trace.is_file() and trace.read_bytes() != (committed or b""),
    }
    if as_json:
        output.emit_json(data)
    else:
        for key, value in data.items():
            output.say(f"{key}: {value}")
    return 0
