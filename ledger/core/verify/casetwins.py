"""Entry paths are unique in letter case, on every platform (rule ``case-twin``).

On a case-insensitive file system (macOS's default APFS, Windows) ``training_log/V2.md``
and ``training_log/v2.md`` are one file, and ``results/V2/`` and ``results/v2/`` one
directory: a checkout there shows one of the two entries, and the work tree never
matches the commit. On Linux both read as two facts, and the twin of a registration
verified clean. The verbs never write one (:func:`ledger.core.store.check_case`); the
pre-commit hook refuses a hand commit that adds one (:func:`staged_twins`) and
``verify`` finds one a commit made with ``--no-verify`` (:func:`commit_twins`).

A twin is judged where it appears: the entry (or directory) added beside a name
already there. A directory is compared with its siblings in the commit that adds it,
so a long replay costs a few tree lookups per entry added.
"""

from __future__ import annotations

from typing import Any

from ledger.core.commitinfo import CommitInfo
from ledger.core.findings import Finding

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: the incremental path stays light
if TYPE_CHECKING:
    from ledger.core.verify.replay import Replay

RULE = "case-twin"
WHY = "they are one file on a case-insensitive file system (macOS, Windows)"


def _message(path: str, twin: str) -> str:
    return f"{path} differs from {twin} only in letter case: {WHY}"


def commit_twins(r: Replay, c: CommitInfo, changes: list[tuple[str, Any, Any]]) -> None:
    """verify: each entry ``c`` adds whose path (or a directory of it) differs from one
    of ``c``'s tree only in letter case."""
    base = r.dir + "/"
    added = [p for p, old, new in changes if old is None and new is not None]
    added = [p for p in added if p.startswith(base)]
    if not added:
        return
    snap = r.store.snapshot(c.id)
    checked = _existing_dirs(r, c, added)
    for path in added:
        twin = snap.case_twin(path, checked)
        if twin is not None:
            r.finding(
                c,
                path,
                RULE,
                _message(path, twin),
                f"remove one of them (git revert {c.id[:10]}); a name differs in more than case",
                "",
            )


def _existing_dirs(r: Replay, c: CommitInfo, added: list[str]) -> set[str]:
    """The directories of ``added`` that ``c``'s first parent has: each was compared with
    its siblings in the commit that made it (a merge, which adds nothing of its own, is
    judged by the rules for merges). The light reader, whose every lookup is a git
    process, compares them all."""
    if not c.parents or getattr(r.store, "light", False):
        return set()
    parent = r.store.snapshot(c.parents[0])
    dirs = {path.rsplit("/", 1)[0] for path in added}
    dirs |= {d.rsplit("/", i)[0] for d in dirs for i in range(1, d.count("/") + 1)}
    return {d for d in dirs if parent.is_tree(d)}


def staged_twins(index: Any, head: Any, paths: list[str]) -> list[Finding]:
    """The pre-commit hook: each staged ledger path new to HEAD whose path (or a
    directory of it) differs from one of the index's only in letter case."""
    found = []
    for path in paths:
        if head.blob_id(path) is not None or index.blob_id(path) is None:
            continue
        twin = index.case_twin(path)
        if twin is not None:
            found.append(
                Finding(
                    RULE,
                    _message(path, twin),
                    f"git rm --cached {path}, and pick a name that differs in more than case",
                )
            )
    return found
