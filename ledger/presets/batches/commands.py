"""Batches verbs: weights init|revise|copy, gate topic|batch|converged, trace emit, resume."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

from ledger.core import output
from ledger.core.context import Context, open_context, open_preset
from ledger.core.errors import BadInput, Refused
from ledger.core.model.config import BatchesTable
from ledger.core.model.documents import dump_json, load_json
from ledger.core.model.ids import check_safe
from ledger.core.store import Snapshot, Transition, write_atomic
from ledger.presets.batches import loop as batches
from ledger.presets.batches.loop import Batches


def _ctx(cwd: Path) -> Context:
    return open_preset(cwd, "batches")


def _trace_ride_along(ctx: Context, b: Batches) -> dict[str, bytes | None]:
    """Trace events written since the last commit ride along with this transition
    (a torn last line repaired first)."""
    rel = batches.trace_path(ctx.config, b.run_id)
    path = ctx.store.require_workdir() / rel
    if not path.is_file():
        return {}
    text = path.read_text(encoding="utf-8", errors="replace")
    repaired = batches.repair_trace(text)
    if repaired != text:
        write_atomic(path, repaired.encode())
    return {rel: repaired.encode()}


def _not_converged(b: Batches) -> None:
    if b.converged_at is not None:
        raise Refused(
            f"the loop converged at batch {b.converged_at}; the weights are frozen",
            "start a new run in a new ledger",
        )


def _check_thresholds(ctx: Context, b: Batches) -> BatchesTable:
    """The frozen thresholds; a bar lowered in ledger.toml since is refused."""
    frozen = b.thresholds()
    lowered = batches.lowered_bars(batches.table(ctx.config), frozen)
    if lowered:
        raise Refused(f"[thresholds-frozen] {lowered}", "restore the frozen value in ledger.toml")
    return frozen


def weights_init(
    cwd: Path, file: Path, frozen: tuple[str, ...], run_id: str | None, as_json: bool
) -> int:
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
    if run_id is not None:
        check_safe(run_id, "--run-id")
    cfg = batches.table(ctx.config)
    ctx.require_committed_config()
    meta = {
        "frozen": sorted(frozen),
        "run_id": run_id or f"run-{uuid.uuid4().hex[:8]}",
        "thresholds": {
            "fidelity_min": cfg.fidelity_min,
            "batch_ratio_min": cfg.batch_ratio_min,
            "hard_line": cfg.hard_line,
            "topics_per_batch": cfg.topics_per_batch,
            "converge_k": cfg.converge_k,
        },
    }

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
    _not_converged(b)
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


def parse_new(new: str, as_string: bool) -> Any:
    """``--new`` as JSON when it is valid JSON, else (or with ``--string``) a string."""
    if as_string:
        return new
    try:
        return json.loads(new)
    except ValueError:
        return new


def _locate(weights: dict[str, Any], target: str, key: str, n: int) -> tuple[dict[str, Any], str]:
    """The object holding ``key`` in ``target``: an exact key first, else a dotted path."""
    node = weights.get(target)
    if not isinstance(node, dict):
        raise BadInput(f"no target {target!r} with keys in batch-{n}", "revise an existing weight")
    if key in node:
        return node, key
    parts = key.split(".")
    for part in parts[:-1]:
        node = node.get(part) if isinstance(node, dict) else None
        if not isinstance(node, dict):
            break
    if isinstance(node, dict) and parts[-1] in node:
        return node, parts[-1]
    raise BadInput(f"no weight {target}.{key} in batch-{n}", "revise an existing weight")


def weights_change(
    cwd: Path,
    *,
    copy: bool,
    target: str | None,
    key: str | None,
    new: str | None,
    reason: str | None,
    as_string: bool = False,
    replace_container: bool = False,
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
    value: Any = parse_new(new_s, as_string)

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
        if target_s in b.frozen():
            raise Refused(f"[frozen-target] {target_s} is frozen", "revise another target")
        weights = json.loads(json.dumps(b.weights[n]))
        holder, leaf = _locate(weights, target_s, key_s, n)
        old = holder[leaf]
        if (
            isinstance(old, dict | list)
            and not isinstance(value, dict | list)
            and not replace_container
        ):
            raise BadInput(
                f"{target_s}.{key_s} is a {'object' if isinstance(old, dict) else 'list'}; "
                f"--new {new_s!r} would replace it with a scalar",
                "name a key inside it, or pass --replace-container",
            )
        if value == old and type(value) is type(old):
            raise BadInput(
                f"{target_s}.{key_s} already is {old!r}",
                "use 'git ledger weights copy' to carry it forward",
            )
        holder[leaf] = value
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
    ctx = _ctx(cwd) if record else open_context(cwd)
    b = batches.load(ctx.config, ctx.store.snapshot())
    cfg = _check_thresholds(ctx, b)
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
        name = topic or f"t{len(done) + 1}"
        if any(t["topic"] == name for t in done):
            raise BadInput(f"topic {name} of batch {n} is already recorded", "git ledger resume")
        if len(done) >= cfg.topics_per_batch:
            raise Refused(
                f"batch {n} has its {cfg.topics_per_batch} topics",
                "close it: git ledger gate batch --flags ... --record",
            )
        entry = {"batch": n, "topic": name, "seq": len(done) + 1, **result}
        writes: dict[str, bytes | None] = _trace_ride_along(ctx, b)
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
    _not_converged(b)
    n = b.current
    if n is None:
        raise Refused("no weights yet", "git ledger weights init FILE")
    if b.closed(n):
        raise Refused(f"batch {n} is already closed", "revise or copy to open the next batch")
    return b, n, b.done_topics(n)


def gate_batch(cwd: Path, flags: str, record: bool, as_json: bool) -> int:
    ctx = _ctx(cwd) if record else open_context(cwd)
    parsed = [batches.parse_bool(f, "--flags") for f in flags.split(",") if f.strip()]
    b = batches.load(ctx.config, ctx.store.snapshot())
    cfg = _check_thresholds(ctx, b)
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
        writes: dict[str, bytes | None] = _trace_ride_along(ctx, b)
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
    ctx = _ctx(cwd) if record else open_context(cwd)
    b = batches.load(ctx.config, ctx.store.snapshot())
    cfg = _check_thresholds(ctx, b)
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
        _not_converged(b)
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


def _field_value(root: Path, key: str, raw: str) -> Any:
    """A JSON value when ``raw`` is JSON, else the string; paths relative, inside the repo."""
    try:
        value: Any = json.loads(raw)
    except ValueError:
        value = raw
    if isinstance(value, str):
        text = value
        if text.startswith(("/", "~")):
            full = Path(text).expanduser().resolve()
            if full != root.resolve() and root.resolve() not in full.parents:
                raise BadInput(
                    f"--field {key}: {text} is outside the repository",
                    "trace paths are stored relative to the repository",
                )
            return str(full.relative_to(root.resolve()))
        if text == ".." or text.startswith("../") or "/../" in text or text.endswith("/.."):
            raise BadInput(
                f"--field {key}: {text} leaves the repository",
                "give a path inside the repository, relative to its top level",
            )
    return value


def trace_emit(cwd: Path, event: str, fields: tuple[str, ...], as_json: bool) -> int:
    ctx = _ctx(cwd)
    check_safe(event, "event name")
    root = ctx.store.require_workdir()
    values: dict[str, Any] = {}
    for item in fields:
        k, sep, v = item.partition("=")
        if not sep:
            raise BadInput(f"--field {item!r} is not k=v")
        check_safe(k, "field name")
        values[k] = _field_value(root, k, v)
    with ctx.store.writer_lock():
        b = batches.load(ctx.config, ctx.store.snapshot())
        rel = batches.trace_path(ctx.config, b.run_id)
        path = root / rel
        text = batches.repair_trace(path.read_text() if path.is_file() else "")
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
    cfg = b.thresholds()
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
        "converged_recorded": b.converged_at is not None,
        "topics_done": [t["topic"] for t in b.done_topics(n)] if n is not None else [],
        "frozen_targets": b.frozen(),
        "next_weights_exists": n is not None
        and (root / ctx.dir / "weights" / f"batch-{n + 1}.json").is_file(),
        "uncommitted_trace": trace.is_file() and trace.read_bytes() != (committed or b""),
    }
    if as_json:
        output.emit_json(data)
    else:
        for key, value in data.items():
            output.say(f"{key}: {value}")
    return 0
