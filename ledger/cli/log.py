"""``git ledger log``: transitions from commit trailers, newest first.

``log -n N`` is exactly the first N rows of ``log``: both read the same lazy
walk (:meth:`Store.walk_log`) and stop early. A ``git revert`` of a transition
is a row of its own, kind ``revert``, naming the commit it undid.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ledger.core import output
from ledger.core.context import open_context
from ledger.core.errors import LedgerError
from ledger.core.store import TRAILER_STEP, TRAILER_TRANSITION, CommitInfo, Store

# The line ``git revert`` writes into the message body.
_REVERTS = re.compile(r"^This reverts commit ([0-9a-f]{40})\b", re.MULTILINE)


def _row(info: CommitInfo, kind: str, step: str | None) -> dict[str, Any]:
    return {
        "commit": info.id,
        "time": datetime.fromtimestamp(info.time, UTC).isoformat().replace("+00:00", "Z"),
        "kind": kind,
        "step": step,
        "subject": info.subject,
        "author": info.author,
        "override": info.trailer("Ledger-Override"),
    }


def transition_of(
    info: CommitInfo, store: Store | None = None, depth: int = 0
) -> dict[str, Any] | None:
    """The log row of ``info``: a transition, a revert of one, or None."""
    reverted = _REVERTS.search(info.message) if store is not None and depth < 8 else None
    if reverted is not None and store is not None:
        try:
            undone = transition_of(store.commit_info(reverted.group(1)), store, depth + 1)
        except (KeyError, ValueError, LedgerError):
            undone = None  # the reverted commit is not in this repository
        if undone is not None:
            row = _row(info, "revert", undone["step"])
            row["reverts"] = undone["commit"]
            if undone["kind"] in ("record", "run", "run-failed"):
                from ledger.core.verify import withdrawn_reason

                # A whole revert of a record transition withdraws its results, for good.
                row["withdrawn"] = withdrawn_reason(info.message)
            return row
    kind = info.trailer(TRAILER_TRANSITION)
    if kind is None:
        return None
    return _row(info, kind, info.trailer(TRAILER_STEP))


def run(cwd: Path, rev: str | None, limit: int | None, step: str | None, as_json: bool) -> int:
    ctx = open_context(cwd)
    found: list[dict[str, Any]] = []
    if limit is None or limit > 0:
        for info in ctx.store.walk_log(rev):
            entry = transition_of(info, ctx.store)
            if entry is None or (step is not None and entry["step"] != step):
                continue
            found.append(entry)
            if limit is not None and len(found) >= limit:
                break
    if as_json:
        output.emit_json(found)
        return 0
    rows = [
        (
            e["commit"][:10],
            e["time"][:19],
            e["kind"],
            e["step"] or "",
            (f"withdrawn: {e['withdrawn']}" if "withdrawn" in e else e["subject"])
            + (f" (undoes {e['reverts'][:10]})" if "reverts" in e else ""),
        )
        for e in found
    ]
    output.table("", ("commit", "time", "kind", "step", "subject"), rows)
    return 0
