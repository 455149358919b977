"""``git ledger log``: transitions from commit trailers, newest first."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ledger import output
from ledger.context import open_context
from ledger.store import TRAILER_STEP, TRAILER_TRANSITION, CommitInfo


def transition_of(info: CommitInfo) -> dict[str, Any] | None:
    kind = info.trailer(TRAILER_TRANSITION)
    step = info.trailer(TRAILER_STEP)
    if kind is None:
        return None
    return {
        "commit": info.id,
        "time": datetime.fromtimestamp(info.time, UTC).isoformat().replace("+00:00", "Z"),
        "kind": kind,
        "step": step,
        "subject": info.subject,
        "author": info.author,
        "override": info.trailer("Ledger-Override"),
    }


def run(cwd: Path, rev: str | None, limit: int | None, step: str | None, as_json: bool) -> int:
    ctx = open_context(cwd)
    found: list[dict[str, Any]] = []
    for info in ctx.store.walk(rev, lazy=limit is not None):
        entry = transition_of(info)
        if entry is None or (step is not None and entry["step"] != step):
            continue
        found.append(entry)
        if limit is not None and len(found) >= limit:
            break
    if as_json:
        output.emit_json(found)
        return 0
    rows = [
        (e["commit"][:10], e["time"][:19], e["kind"], e["step"] or "", e["subject"]) for e in found
    ]
    output.table("", ("commit", "time", "kind", "step", "subject"), rows)
    return 0
