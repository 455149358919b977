"""Uncommitted ledger files: the one rule that ``status``/``next``, ``doctor`` and the
pre-push hook apply (a machine problem in the first, a refusal in the last).

What counts is what hands and crashes leave where hands write: a file at the ledger
dir's top level (versions, reflections, matrices, the views, a campaign's contract)
changed, deleted or new in the work tree, and any file in a directory that is not
only written by transitions (``notes/``, or one the commit does not have). A loop's
drafts (its preset's ``drafts()`` globs: a reflection being written, a contract before
``contract``, a batch's trace before its close) are the loop at work, not leftovers:
they are returned apart, never refused; a deleted one is a leftover (what the commit
has is restored). The directories a preset's history rules give to transitions alone
(``results/``, ``candidates/``, ``weights/``, ...) are not read: transitions refuse to
overwrite a changed file themselves, and a stray file there is in no commit, so no
push sends it and no transition reads it.

Why not the whole directory: ``git status`` of every result file costs a stat each
(about two thirds of a warm ``status`` at 1,000 steps, more at 10,000). The top level
costs one ``git status`` with a glob that does not descend; an untracked file there
shows as a file more on disk than the commit has (counted, so that git lists untracked
files only when there is one), a new directory as a name the commit does not have.
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from ledger.core import gitcli
from ledger.core.repobase import STAT_BY_SIZE_AND_MTIME

if TYPE_CHECKING:
    from ledger.core.loops import Preset
    from ledger.core.store import Store


class Committed(NamedTuple):
    """The ledger dir's top level in the commit: how many files, which directories.

    Here and below, no dataclass: a warm ``status`` imports this module, and importing
    dataclasses (and inspect with it) is a tenth of its time."""

    files: int
    dirs: frozenset[str]


class Uncommitted:
    def __init__(self) -> None:
        self.entries: list[tuple[str, str]] = []  # (XY, path): leftovers
        self.drafts: list[str] = []  # the loop's work in progress
        self.also: list[tuple[str, str]] = []  # (XY, path) of the paths asked ``also``

    def line(self) -> str:
        shown = ", ".join(p for _, p in self.entries[:5])
        return f"uncommitted ledger files: {shown}" + (" ..." if len(self.entries) > 5 else "")


def committed_top(names: Sequence[str]) -> Committed:
    """:class:`Committed` from the ledger dir's paths relative to it (a tree's files)."""
    dirs = {rel.split("/", 1)[0] for rel in names if "/" in rel}
    return Committed(sum(1 for rel in names if "/" not in rel), frozenset(dirs))


def owned(history_rules: Sequence[Mapping[str, str]]) -> frozenset[str]:
    """The ledger dir's subdirectories only transitions write (a preset's history rules
    whose paths lie in them and that no ``hand`` may change: results, candidates, ...)."""
    dirs = {
        str(rule["paths"]).split("/", 1)[0]
        for rule in history_rules
        if "/" in str(rule.get("paths", ""))
        and "hand" not in str(rule.get("changed_by", "")).split(",")
    }
    return frozenset(d for d in dirs if not any(c in d for c in "*?[<"))


def uncommitted(
    top: Path,
    directory: str,
    drafts: Sequence[str],
    transitions_only: Collection[str] = (),
    committed: Committed | None = None,
    also: Sequence[str] = (),
) -> Uncommitted:
    """The ledger files of the work tree ``top`` not committed, drafts apart. ``drafts``
    are globs inside ``directory``; ``transitions_only``: its subdirectories only
    transitions write (:func:`owned`), not read; ``committed`` (from a cache) saves a
    ``git ls-tree``; ``also``: tracked paths outside ``directory`` (the configuration
    file) asked in the same ``git status``, returned apart (``Uncommitted.also``)."""
    level = f":(glob){directory}/*"
    found = porcelain(top, "--untracked-files=no", level, *(f":(literal){p}" for p in also))
    out = Uncommitted()
    if also:
        out.also = [e for e in found if e[1] in also]
        found = [e for e in found if e[1] not in also]
    files, dirs = set(), set()
    try:
        for entry in os.scandir(top / directory):
            if entry.is_dir(follow_symlinks=False):
                dirs.add(entry.name)
            else:
                files.add(entry.name)
    except OSError:
        pass
    if committed is None:
        committed = _committed(top, directory)
    absent = sum(1 for _, path in found if path.rsplit("/", 1)[-1] not in files)
    added = sum(1 for code, _ in found if code[0] in "ACR")
    if len(files) > committed.files - absent + added:
        found += [e for e in porcelain(top, "--untracked-files=all", level) if e[0] == "??"]
    # Directories hands write (notes/, a trace/), or that the commit does not have: read
    # whole, tracked and untracked (small, unlike the results).
    read = sorted(
        name for name in dirs if name not in transitions_only or name not in committed.dirs
    )
    if read:
        found += porcelain(top, "--untracked-files=all", *(f"{directory}/{d}" for d in read))
    globs = [f"{directory}/{g}" for g in drafts]
    for code, path in found:
        # A deletion is never a draft at work: a committed entry deleted (a reflection
        # ``git rm``-ed, a revert stopped by a hook) would ride along with the next
        # commit, code included; a staged draft deleted since leaves its addition staged.
        if "D" in code or not any(fnmatch.fnmatchcase(path, g) for g in globs):
            out.entries.append((code, path))
        else:
            out.drafts.append(path)
    return out


def of_loop(
    top: Path,
    directory: str,
    loop: Preset,
    committed: Committed | None = None,
    also: Sequence[str] = (),
) -> Uncommitted:
    """:func:`uncommitted` with a loop's drafts and the directories its transitions own."""
    rules = owned(loop.history_rules())
    return uncommitted(top, directory, loop.drafts(), rules, committed, also)


def _committed(top: Path, directory: str) -> Committed:
    # -z: paths as they are (no quoting); without -r: the top level only.
    out = gitcli.run(["ls-tree", "-z", "HEAD", "--", f"{directory}/"], top, check=False).stdout
    files, dirs = 0, set()
    for record in out.split("\0"):  # "MODE TYPE OID\tPATH"
        if "\t" not in record:
            continue
        meta, path = record.split("\t", 1)
        if meta.split(" ")[1] == "tree":
            dirs.add(path.rsplit("/", 1)[-1])
        else:
            files += 1
    return Committed(files, frozenset(dirs))


def porcelain(top: Path, untracked: str, *specs: str) -> list[tuple[str, str]]:
    """(XY, path) per changed path under ``specs`` (git-status(1) ``--porcelain -z``)."""
    # --no-optional-locks: a read must not rewrite the index (a refusal, a status leave
    # the repository byte-identical; a plain git status refreshes the index's stat cache).
    # core.checkStat=minimal: see repobase.STAT_BY_SIZE_AND_MTIME.
    args = ["--no-optional-locks", "status", "--porcelain", "-z", untracked, "--", *specs]
    out = gitcli.output([*STAT_BY_SIZE_AND_MTIME, *args], top)
    # "XY PATH\0", a rename's or copy's source path following as a field of its own.
    fields = iter(out.split("\0"))
    found = []
    for entry in fields:
        if len(entry) < 4:
            continue
        if "R" in entry[:2] or "C" in entry[:2]:
            next(fields, None)
        found.append((entry[:2], entry[3:]))
    return found


def frozen_edit(
    store: Store, path: str, data: bytes, directory: str = "", prefix: str = "V"
) -> str | None:
    """Why ``data`` must not be autosaved: it is what the commit holds (only the index
    differs: an autosave has nothing to record, and what is staged is a person's to keep
    or drop), it edits a registration's frozen part, it does not parse, or it is an
    entry only a transition brings into being (invariants 1, 5 and 6 of ``verify``)."""
    from ledger.core.errors import LedgerError as _Error
    from ledger.core.history import frozen_part
    from ledger.core.model.documents import decode_text
    from ledger.core.state import classify, parse_entry

    committed = store.snapshot().read(path)
    if committed is not None and committed == data:
        return (
            f"{path} in the work tree is what the commit holds; only its staged copy "
            "differs, which doctor never commits"
        )
    rel = path[len(directory) + 1 :] if directory and path.startswith(directory + "/") else path
    kind = classify(rel, prefix) if directory else None
    if kind is not None:
        try:
            parse_entry(kind, data, path)
        except _Error as exc:
            return f"{exc.message}; doctor never autosaves an entry that does not parse: fix it"
        if committed is None and kind in ("version", "matrix", "result"):
            return (
                f"{path} is a new {kind}, which only its transition writes; doctor never "
                "autosaves it: use git ledger register/record (or remove it)"
            )
    if committed is None or not path.endswith(".md"):
        return None
    try:
        old = frozen_part(decode_text(committed, path), path)
    except _Error:
        return None
    try:
        changed = frozen_part(decode_text(data, path), path) != old
    except _Error:
        changed = True
    if not changed:
        return None
    return (
        f"{path} edits the frozen part of a registration (front matter or Hypothesis); "
        f"doctor never autosaves it: restore the committed text with 'git restore {path}'"
    )
