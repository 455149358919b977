"""``git ledger trace emit`` and ``resume``: the run's trace on disk, and the loop's
position rebuilt from disk alone.

Trace events are not transitions: they are appended to the run's trace file
(a torn last line repaired first) and ride along with the next transition.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ledger.core import output
from ledger.core.errors import BadInput, Refused
from ledger.core.model.ids import check_safe
from ledger.core.store import write_atomic
from ledger.presets.batches import history
from ledger.presets.batches import loop as batches
from ledger.presets.batches.commands.common import open_batches, remember, say, trace_text


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
    ctx = open_batches(cwd)
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
        _rel, committed, on_disk = trace_text(ctx, b, ctx.store.snapshot())
        text = on_disk if on_disk is not None else committed
        if history.ended(text):
            raise Refused(
                f"[trace-after-run-end] the trace of run {b.run_id} has ended (run_end)",
                "a converged run takes no more events; start a new run in a new ledger",
            )
        seq = batches.last_seq(text) + 1
        line = json.dumps(
            {"seq": seq, "event": event, "batch": b.current, "fields": values}, sort_keys=True
        )
        write_atomic(path, (text + line + "\n").encode())
        remember(ctx, text, text + line + "\n")
    say(as_json, {"seq": seq, "event": event, "path": rel}, f"trace {event} seq {seq}")
    return 0


def resume(cwd: Path, as_json: bool) -> int:
    """The loop's position rebuilt from disk alone (after a crash or a context reset)."""
    ctx = open_batches(cwd)
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
