"""Bounded checking: what one commit may write into the ledger, judged before any parse.

``verify`` parses every entry a commit writes, and the server hook runs ``verify`` on
each push: one commit of 100,000 result files (``--no-verify``, a script) kept both busy
past five minutes, and an entry of a gigabyte is read whole before its parse refuses
it. Two limits, counted from the tree diff and the objects' headers alone:

- :data:`MAX_WRITTEN_ENTRIES` paths inside the ledger dir added or changed by one
  commit (a transition writes a handful; deletions are not parsed and do not count);
- :data:`~ledger.core.model.documents.MAX_ENTRY_BYTES` per entry written, the limit
  every entry is read with (results included: ``record`` refuses an input above
  ``[run] result_max_bytes`` before it writes, and the stored result is read with
  this one).

A commit over either is a finding of rule ``bounded-commit`` and nothing of it is
parsed; the server hook refuses such a push before it replays anything
(:func:`pushed_bounds`). The limits are fixed, not settings: history is judged the
same by every reader, whatever a later configuration says.
"""

from __future__ import annotations

from typing import Any

from ledger.core.commitinfo import CommitInfo
from ledger.core.findings import Finding
from ledger.core.model.documents import MAX_ENTRY_BYTES

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: the incremental path stays light
if TYPE_CHECKING:
    from ledger.core.verify.replay import Replay

MAX_WRITTEN_ENTRIES = 1000
RULE = "bounded-commit"

Changes = list[tuple[str, str | None, str | None]]


def over_bounds(store: Any, directory: str, commit: str, changes: Changes) -> list[str]:
    """What ``commit`` writes beyond the limits, one line each (empty: within them).

    The count comes first and alone: a commit over it is never asked for its blobs'
    sizes either."""
    base = directory + "/"
    written = [(p, new) for p, _old, new in changes if new is not None and p.startswith(base)]
    if len(written) > MAX_WRITTEN_ENTRIES:
        return [
            f"commit {commit[:10]} writes {len(written)} ledger entries, over the limit of "
            f"{MAX_WRITTEN_ENTRIES} a commit may write: it is not judged"
        ]
    if not written:
        return []
    sizes: dict[str, int] = store.blob_sizes([blob for _path, blob in written])
    out = []
    for path, blob in written:
        size = sizes[blob]
        if size > MAX_ENTRY_BYTES:
            out.append(
                f"commit {commit[:10]} writes {path} of {size} bytes, over the limit of "
                f"{MAX_ENTRY_BYTES} bytes an entry may have: it is not judged"
            )
    return out


def fix_for(commit: str) -> str:
    return (
        f"split it into commits of at most {MAX_WRITTEN_ENTRIES} entries of at most "
        f"{MAX_ENTRY_BYTES} bytes each (git revert {commit[:10]}, then one transition each)"
    )


def bounded(r: Replay, c: CommitInfo, changes: Changes) -> bool:
    """verify's first check of a commit: True (with its findings marked) when it is over
    the limits, and the replay passes over it."""
    lines = over_bounds(r.store, r.dir, c.id, changes)
    for line in lines:
        r.finding(c, "", RULE, line, fix_for(c.id), "")
    return bool(lines)


def pushed_bounds(store: Any, directory: str, tip: str, since: list[str]) -> list[Finding]:
    """The server hook's first check of a push: each new commit's bounds, from one
    ``git log`` of the tree diffs, before the replay parses anything."""
    from ledger.core.verify.gitlog import log_changes

    hide = [s for s in since if s and store.has_commit(s)]
    found = []
    for c, changes in log_changes(store, tip, hide):
        for line in over_bounds(store, directory, c.id, changes or []):
            found.append(Finding(RULE, line, fix_for(c.id)))
    return found
