"""``git ledger trace emit`` and ``resume``: the run's trace on disk, and the loop's
position rebuilt from disk alone.

Trace events are not transitions: they are appended to the run's trace file
(a torn last line repaired first) and ride along with the next transition.
"""

from __future__ import annotations

import json
import sys
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


def _fields(root: Path, items: tuple[str, ...]) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for item in items:
        k, sep, v = item.partition("=")
        if not sep:
            raise BadInput(f"--field {item!r} is not k=v")
        check_safe(k, "field name")
        values[k] = _field_value(root, k, v)
    return values


def _read_events(cwd: Path, root: Path, source: str) -> list[tuple[str, dict[str, Any]]]:
    """(event, fields) of each JSON line of ``source`` (a file, '-' for stdin), all checked
    before any is written: one bad line is bad input naming its line, and nothing is."""
    if source == "-":
        text = sys.stdin.read()
    else:
        path = Path(source)
        try:
            text = (cwd / path).read_text("utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise BadInput(
                f"--events {source}: cannot read it ({exc})", "give a file of JSON lines"
            ) from None
    out: list[tuple[str, dict[str, Any]]] = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        where = f"--events {source} line {number}"
        try:
            item = json.loads(line)
        except ValueError:
            raise BadInput(
                f"{where}: not JSON", '\'{"event": "topic-done", "fields": {...}}\' a line'
            ) from None
        if not isinstance(item, dict) or not isinstance(item.get("event"), str):
            raise BadInput(
                f'{where}: no "event" name', '\'{"event": "topic-done", "fields": {...}}\' a line'
            )
        extra = sorted(set(item) - {"event", "fields"})
        if extra:
            raise BadInput(f"{where}: unknown key {extra[0]!r}", "a line has only event and fields")
        raw = item.get("fields", {})
        if not isinstance(raw, dict):
            raise BadInput(f"{where}: fields is not an object", "give fields as a JSON object")
        check_safe(item["event"], "event name")
        fields: dict[str, Any] = {}
        for key, value in raw.items():
            check_safe(key, "field name")
            fields[key] = _field_value(root, key, value) if isinstance(value, str) else value
        out.append((item["event"], fields))
    if not out:
        raise BadInput(f"--events {source}: no events in it", "give one JSON object a line")
    return out


def trace_emit(
    cwd: Path, event: str | None, fields: tuple[str, ...], as_json: bool, events: str | None = None
) -> int:
    ctx = open_batches(cwd)
    root = ctx.store.require_workdir()
    wanted: list[tuple[str, dict[str, Any]]] = []
    if (event is None) == (events is None):
        raise BadInput(
            "trace emit takes one EVENT or --events FILE",
            "git ledger trace emit topic-done --field topic=3, or --events events.jsonl",
        )
    if events is not None:
        if fields:
            raise BadInput("--field goes with EVENT, not --events", "put the fields in each line")
        wanted = _read_events(cwd, root, events)
    elif event is not None:
        check_safe(event, "event name")
        wanted = [(event, _fields(root, fields))]
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
        first = batches.last_seq(text) + 1
        lines = [
            json.dumps(
                {"seq": first + i, "event": name, "batch": b.current, "fields": values},
                sort_keys=True,
            )
            + "\n"
            for i, (name, values) in enumerate(wanted)
        ]
        after = text + "".join(lines)
        write_atomic(path, after.encode())
        remember(ctx, text, after)
    last = first + len(wanted) - 1
    if len(wanted) == 1:
        name = wanted[0][0]
        say(as_json, {"seq": first, "event": name, "path": rel}, f"trace {name} seq {first}")
    else:
        say(
            as_json,
            {"seq": first, "last_seq": last, "events": len(wanted), "path": rel},
            f"trace: {len(wanted)} events, seq {first}-{last}",
        )
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
