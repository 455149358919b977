"""Entry paths are unique in letter case, on every platform (rule ``case-twin``).

On a case-insensitive file system (macOS's default APFS, Windows) ``training_log/V2.md``
and ``training_log/v2.md`` are one file, and ``results/V2/`` and ``results/v2/`` one
directory: a checkout there shows one of the two entries, and the work tree never
matches the commit. On Linux both read as two facts, and the twin of a registration
verified clean. The verbs never write one (:func:`ledger.core.store.check_case`); the
pre-commit hook refuses a hand commit that adds one (:func:`staged_twins`) and
``verify`` finds one a commit made with ``--no-verify`` (:func:`commit_twins`).

A twin is judged where it appears: the entry (or directory) added beside a name
already there, in the commit that adds it. A replay from the root reads a tree only
for a path spelled another way before (:func:`_spellings`): a set lookup per entry.
"""

from __future__ import annotations

import weakref
from typing import Any

from ledger.core.commitinfo import CommitInfo
from ledger.core.findings import Finding

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: the incremental path stays light
if TYPE_CHECKING:
    from ledger.core.verify.replay import Replay

RULE = "case-twin"
WHY = "they are one file on a case-insensitive file system (macOS, Windows)"

# Per replay from the root: the spellings seen (:func:`_spellings`).
_seen: weakref.WeakKeyDictionary[Replay, dict[str, set[str]] | None] = weakref.WeakKeyDictionary()


def _message(path: str, twin: str) -> str:
    return f"{path} differs from {twin} only in letter case: {WHY}"


def commit_twins(r: Replay, c: CommitInfo, changes: list[tuple[str, Any, Any]]) -> None:
    """verify: each entry ``c`` adds whose path (or a directory of it that ``c`` adds)
    differs from one of ``c``'s tree only in letter case."""
    seen = _spellings(r, c)
    base = r.dir + "/"
    added = [p for p, old, new in changes if old is None and new is not None]
    added = [p for p in added if p.startswith(base)]
    if seen is not None:
        added = _suspects(seen, added)
    if not added:
        return
    snap = r.store.snapshot(c.id)
    for path in added:
        if snap.case_twin(path, (r.dir,)) is None:
            continue
        # A twin: judged where it appears (a level this commit adds), not at every
        # later entry in a directory that has one.
        twin = snap.case_twin(path, _existing_dirs(r, c, path))
        if twin is not None:
            r.finding(
                c,
                path,
                RULE,
                _message(path, twin),
                f"remove one of them (git revert {c.id[:10]}); a name differs in more than case",
                "",
            )


def _spellings(r: Replay, c: CommitInfo) -> dict[str, set[str]] | None:
    """Every spelling of each path (and directory) added so far in a replay from the root,
    by its case-folded form; None in a replay from a cached state, which compares each
    added path with its tree (a few commits). A path whose folded form was only ever
    spelled one way has no twin, and the tree (thousands of entries, read afresh at
    each commit) is read only for the rare one that was."""
    if r not in _seen:
        _seen[r] = {} if not c.parents else None
    return _seen[r]


def _suspects(seen: dict[str, set[str]], added: list[str]) -> list[str]:
    out = []
    for path in added:
        # ASCII (every name the verbs write): each prefix's folded form is a slice.
        folded = path.lower() if path.isascii() else None
        cuts = [i for i, ch in enumerate(path) if ch == "/"] + [len(path)]
        twice = False
        for cut in cuts:
            here = path[:cut]
            key = folded[:cut] if folded is not None else here.casefold()
            spellings = seen.get(key)
            if spellings is None:
                seen[key] = {here}
            elif here not in spellings:
                spellings.add(here)
                twice = True
            else:
                twice = twice or len(spellings) > 1
        if twice:
            out.append(path)
    return out


def _existing_dirs(r: Replay, c: CommitInfo, path: str) -> set[str]:
    """The ledger dir, and the directories of ``path`` that ``c``'s first parent has: each
    was compared with its siblings in the commit that made it."""
    parts = path.split("/")
    dirs = ["/".join(parts[:i]) for i in range(1, len(parts))]
    if not c.parents:
        return {r.dir}
    parent = r.store.snapshot(c.parents[0])
    return {r.dir} | {d for d in dirs if parent.is_tree(d)}


def staged_twins(index: Any, head: Any, directory: str, paths: list[str]) -> list[Finding]:
    """The pre-commit hook: each staged ledger path new to HEAD whose path, or a directory
    of it new to HEAD, differs from one of the index's only in letter case."""
    found = []
    for path in paths:
        if head.blob_id(path) is not None or index.blob_id(path) is None:
            continue
        parts = path.split("/")
        dirs = ["/".join(parts[:i]) for i in range(1, len(parts))]
        twin = index.case_twin(path, {directory} | {d for d in dirs if head.is_tree(d)})
        if twin is not None:
            found.append(
                Finding(
                    RULE,
                    _message(path, twin),
                    f"git rm --cached {path}, and pick a name that differs in more than case",
                )
            )
    return found
