"""pygit2 objects as the rest of the store reads them: one commit's tree, a commit's facts.

A :class:`Snapshot` is the read side of everything: the state of a ledger is
parsed from the tree of one commit (or the index, or a merge computed in
memory), never from the work tree.
"""

from __future__ import annotations

import itertools
from collections.abc import Container
from dataclasses import dataclass
from typing import TypeVar

import pygit2

from ledger.core.commitinfo import CommitInfo, parse_trailers
from ledger.core.errors import BadInput, EnvironmentFailure, LedgerError, errno_hint, errno_in

# libgit2 maps pack files in windows of up to 1 GB, keeping up to 8 GB mapped, and a
# mapped page that was read counts as resident: reading 60,000 entry blobs of a
# 10,000-step ledger left 243 MB resident for 93 MB with 32 MB windows, at the same
# speed. Process-wide, set once on import.
PACK_WINDOW = 32 << 20
pygit2.settings.mwindow_size = PACK_WINDOW
pygit2.settings.mwindow_mapped_limit = PACK_WINDOW

_O = TypeVar("_O", pygit2.Blob, pygit2.Tree, pygit2.Commit)


def get_object(repo: pygit2.Repository, oid: str | pygit2.Oid, kind: type[_O]) -> _O:
    """The object ``oid`` as ``kind``; anything else means a corrupt or foreign ref."""
    try:
        obj = repo[oid]
    except KeyError:
        raise missing_object(oid) from None
    if not isinstance(obj, kind):
        raise LedgerError(f"object {oid} is not a {kind.__name__.lower()}")
    return obj


class MissingObject(BadInput):
    """An object history names is not in this repository (exit 2): never cached as a
    property of the entry, which is whole once the object is fetched."""


def case_twins(tree: pygit2.Tree, part: str) -> list[str]:
    """Names in ``tree`` that differ from ``part`` only in letter case.

    An ASCII name with few letters (``V10001.md``: 8 spellings) is looked up
    spelling by spelling, binary searches in the tree; otherwise, or in a small
    tree, the entries are scanned (a 10,000-entry directory costs ~4 ms).
    """
    letters = [i for i, c in enumerate(part) if c.isascii() and c.isalpha()]
    if part.isascii() and (4 << len(letters)) <= len(tree):
        found = []
        for flips in itertools.product((False, True), repeat=len(letters)):
            chars = list(part)
            for i, flip in zip(letters, flips, strict=True):
                if flip:
                    chars[i] = chars[i].swapcase()
            name = "".join(chars)
            if name != part and name in tree:
                found.append(name)
        return found
    folded = part.casefold()
    return [str(e.name) for e in tree if e.name != part and str(e.name).casefold() == folded]


def missing_object(oid: object) -> BadInput:
    """An object the tree names but the repository lacks: a partial (``--filter``) or
    damaged clone. libgit2 never fetches a promised object, and the ledger reads every
    entry's history, so this is input it cannot judge (exit 2), not a bug."""
    return MissingObject(
        f"object {str(oid)[:10]} is missing from this repository (a partial or blobless "
        "clone, git clone --filter): the ledger reads every entry's history",
        "clone it again without --filter (git clone URL), or fetch every object: "
        "git fetch --refetch --no-filter origin",
    )


def git_error(what: str, exc: Exception) -> LedgerError:
    """A libgit2 failure: the environment's when its text names an errno, else a bug.

    libgit2 formats ``strerror`` in this process, whose messages are never
    translated, so the errno is read back exactly (``errors.errno_in``).
    """
    code = errno_in(str(exc))
    if code is not None:
        return EnvironmentFailure(f"{what}: {exc}", errno_hint(code), code=code)
    return LedgerError(f"{what}: {exc}")


def info_of(commit: pygit2.Commit) -> CommitInfo:
    return CommitInfo(
        id=str(commit.id),
        parents=tuple(str(p) for p in commit.parent_ids),
        message=commit.message,
        time=commit.commit_time,
        author=f"{commit.author.name} <{commit.author.email}>",
        trailers=parse_trailers(commit.message),
    )


@dataclass
class Snapshot:
    """A read-only view of one commit's tree (or of an unborn branch: empty)."""

    repo: pygit2.Repository
    commit_id: str | None
    tree: pygit2.Tree | None
    # Each tree's listing as the last files() read it (tree id -> entries): see files().
    listings: dict[pygit2.Oid, list[tuple[str, str | pygit2.Oid]]] | None = None

    def _object(self, path: str) -> pygit2.Object | None:
        if self.tree is None or not path:
            return self.tree
        try:
            entry = self.tree[path]
        except KeyError:
            return None
        try:
            return self.repo[entry.id]
        except KeyError:
            raise missing_object(entry.id) from None

    def tree_id(self, path: str = "") -> str | None:
        obj = self._object(path)
        return str(obj.id) if isinstance(obj, pygit2.Tree) else None

    def blob_id(self, path: str) -> str | None:
        obj = self._object(path)
        return str(obj.id) if isinstance(obj, pygit2.Blob) else None

    def read(self, path: str) -> bytes | None:
        obj = self._object(path)
        return obj.data if isinstance(obj, pygit2.Blob) else None

    def read_blob(self, blob_id: str) -> bytes:
        return get_object(self.repo, blob_id, pygit2.Blob).data

    def is_tree(self, path: str) -> bool:
        return isinstance(self._object(path), pygit2.Tree)

    def case_twin(self, path: str, checked: Container[str] = ()) -> str | None:
        """A path of this tree beside which ``path`` (or one of its directories) differs
        only in letter case: ``results/v2`` beside ``results/V2`` are one directory on
        macOS's and Windows' file systems, ``V2.md`` and ``v2.md`` one file.

        ``checked``: directories not to compare with their siblings (the ledger dir;
        those a commit's parent had, compared in the commit that made them). Each level
        is a few lookups (:func:`case_twins`), never a listing of the tree."""
        tree, parts = self.tree, path.split("/")
        for i, part in enumerate(parts):
            if tree is None:
                return None
            here = "/".join(parts[: i + 1])
            if here not in checked:
                twins = case_twins(tree, part)
                if twins:
                    return "/".join([*parts[:i], twins[0]])
            entry = tree[part] if part in tree else None  # noqa: SIM401 (pygit2.Tree has no get)
            if entry is None or entry.type_str != "tree":
                return None
            tree = get_object(self.repo, entry.id, pygit2.Tree)
        return None

    def files(
        self, prefix: str, known: dict[pygit2.Oid, list[tuple[str, str | pygit2.Oid]]] | None = None
    ) -> dict[str, str]:
        """Every blob below ``prefix`` (recursively): path -> blob id; ``prefix`` itself
        when it names a file (as ``git ls-tree -r REV -- PATH`` lists it).

        Each tree's own listing is kept by tree id (:attr:`listings`): a command that
        reads its ledger again after its own transition (conclude's ``next:`` line)
        passes them as ``known`` and reads only the trees it changed.
        """
        out: dict[str, str] = {}
        root = self._object(prefix)
        if isinstance(root, pygit2.Blob):
            return {prefix: str(root.id)}
        if not isinstance(root, pygit2.Tree):
            return out
        known, seen = known or {}, {}
        stack: list[tuple[str, pygit2.Oid, pygit2.Tree | None]] = [(prefix, root.id, root)]
        while stack:
            base, tree_id, tree = stack.pop()
            listing = known.get(tree_id)
            if listing is None:
                if tree is None:
                    tree = get_object(self.repo, tree_id, pygit2.Tree)
                listing = []
                for entry in tree:
                    kind = entry.type_str
                    if kind == "tree":
                        listing.append((str(entry.name), entry.id))
                    elif kind == "blob":
                        listing.append((str(entry.name), str(entry.id)))
            seen[tree_id] = listing
            for name, oid in listing:
                path = f"{base}/{name}" if base else name
                if isinstance(oid, str):
                    out[path] = oid
                else:
                    stack.append((path, oid, None))
        self.listings = seen
        return out
