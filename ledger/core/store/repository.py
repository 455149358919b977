"""A repository opened with libgit2: find it, resolve revisions, read snapshots.

The base of :class:`ledger.core.store.Store`: what every other part (history
walks, the work tree, the writer) builds on. Nothing here writes.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import pygit2

from ledger.core import gitcli, repobase
from ledger.core.commitinfo import CommitInfo
from ledger.core.errors import BadInput
from ledger.core.store.objects import Snapshot, get_object, info_of

if TYPE_CHECKING:
    from ledger.core.store.transition import Transition


class Repository:
    """An opened repository: where it lives, its revisions, its snapshots (read only)."""

    def __init__(self, start: Path | str = ".") -> None:
        start_path = Path(start)
        if not start_path.is_dir():
            raise BadInput(f"no such directory: {start_path}", "pass an existing directory to -C")
        try:
            found = pygit2.discover_repository(str(start_path))
        except pygit2.GitError:
            found = None
        if found is None:
            raise BadInput(
                f"not a git repository: {start_path.resolve()}",
                "run 'git init' first, or pass -C <repo>",
            )
        try:
            self.repo = pygit2.Repository(found)
        except pygit2.GitError as exc:
            raise BadInput(f"cannot open the repository at {found}: {exc}") from None
        # A server-side hook sees pushed objects only in git's quarantine dir.
        quarantine = os.environ.get("GIT_QUARANTINE_PATH")
        if quarantine and os.path.isdir(quarantine):
            self.repo.odb.add_disk_alternate(quarantine)
        self.git_dir = Path(self.repo.path)
        self.common_dir = Path(repobase.common_dir(str(self.git_dir)))
        workdir = self.repo.workdir
        self.workdir: Path | None = Path(workdir) if workdir else None
        self.ledger_state_dir = self.common_dir / repobase.STATE_DIR
        # Called with each transition this store commits, once its work tree is updated
        # (ledger.core.context keeps the entries it wrote in the entry cache).
        self.on_commit: list[Callable[[Transition], None]] = []

    def require_workdir(self) -> Path:
        if self.workdir is None:
            raise BadInput("this is a bare repository", "run git-ledger inside a checkout")
        return self.workdir

    def branch(self) -> str:
        """The full name of the checked-out branch (it may be unborn)."""
        if self.repo.head_is_detached:
            raise BadInput(
                "HEAD is detached; a transition must extend a branch",
                "run 'git switch -c <branch>' or 'git switch <branch>' first",
            )
        head = self.repo.references.get("HEAD")
        target = head.target if head is not None else "HEAD"
        return target if isinstance(target, str) else "HEAD"

    def resolve(self, rev: str | None) -> str | None:
        """A commit id for ``rev`` (default HEAD); None on an unborn branch."""
        if rev is None or rev == "HEAD":
            if self.repo.head_is_unborn:
                return None
            return str(self.repo.head.peel(pygit2.Commit).id)
        try:
            obj = self.repo.revparse_single(rev)
            return str(obj.peel(pygit2.Commit).id)
        except (KeyError, ValueError, pygit2.GitError, pygit2.InvalidSpecError):
            raise BadInput(
                f"unknown revision {rev!r}", "use a commit, branch or tag name"
            ) from None

    def snapshot(self, rev: str | None = None) -> Snapshot:
        commit_id = self.resolve(rev)
        if commit_id is None:
            return Snapshot(self.repo, None, None)
        commit = get_object(self.repo, commit_id, pygit2.Commit)
        return Snapshot(self.repo, commit_id, commit.tree)

    def index_snapshot(self) -> Snapshot:
        """The tree the index would commit (honours GIT_INDEX_FILE, as hooks must).

        libgit2 reads neither a split index (its ``link`` extension is mandatory)
        nor a sparse index (directory entries, ``sdir``): those ask git.
        """
        path = os.environ.get("GIT_INDEX_FILE")
        index_file = Path(path).resolve() if path else self.git_dir / "index"
        try:
            if b"sdir\0\0\0\0" in index_file.read_bytes():
                raise pygit2.GitError("a sparse index")
            if path:
                tree_id = str(pygit2.Index(str(index_file)).write_tree(self.repo))
            else:
                index = self.repo.index
                index.read(force=True)
                tree_id = str(index.write_tree())
        except FileNotFoundError:
            tree_id = str(self.repo.TreeBuilder().write())
        except pygit2.GitError:
            tree_id = gitcli.write_tree(self.require_workdir())
        return Snapshot(self.repo, None, get_object(self.repo, tree_id, pygit2.Tree))

    def merged_snapshot(self, theirs: str, ours: str | None = None) -> Snapshot:
        """The tree a merge of ``theirs`` into ``ours`` (default HEAD) gives, in memory.

        Conflicting paths take our side; callers use this for entry files, which
        never conflict (one file per fact), and regenerate views from it.
        """
        repo = self.repo
        ours_id = ours or self.resolve(None)
        if ours_id is None:
            raise BadInput("cannot merge into an unborn branch", "commit something first")
        base = repo.merge_base(ours_id, theirs)
        ancestor = (
            get_object(repo, base, pygit2.Commit).tree
            if base
            else get_object(repo, repo.TreeBuilder().write(), pygit2.Tree)
        )
        index = repo.merge_trees(
            ancestor,
            get_object(repo, ours_id, pygit2.Commit).tree,
            get_object(repo, theirs, pygit2.Commit).tree,
        )
        conflicts = list(index.conflicts) if index.conflicts is not None else []
        for _ancestor, our, their in conflicts:
            entry = our or their
            if entry is None:
                continue
            del index.conflicts[entry.path]
            index.add(pygit2.IndexEntry(entry.path, entry.id, entry.mode))
        return Snapshot(repo, None, get_object(repo, index.write_tree(repo), pygit2.Tree))

    def commit_info(self, commit_id: str) -> CommitInfo:
        return info_of(get_object(self.repo, commit_id, pygit2.Commit))

    def hash_bytes(self, data: bytes) -> str:
        return str(pygit2.hash(data))

    def hash_file(self, path: Path) -> str:
        return str(pygit2.hashfile(str(path)))

    def index_blob_ids(
        self, paths: list[str], index: pygit2.Index | None = None
    ) -> dict[str, str | None]:
        """Blob ids staged in the index for ``paths`` (None where absent)."""
        if index is None:
            index = self.repo.index
            index.read(force=True)
        out: dict[str, str | None] = {}
        for path in paths:
            try:
                out[path] = str(index[path].id)
            except KeyError:
                out[path] = None
        return out

    def is_shallow(self) -> bool:
        return bool(self.repo.is_shallow)

    def has_commit(self, commit_id: str) -> bool:
        try:
            return isinstance(self.repo[commit_id], pygit2.Commit)
        except (KeyError, ValueError):
            return False
