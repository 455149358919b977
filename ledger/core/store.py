"""The only module that touches pygit2: read trees, write one transition as one commit.

Why not ``git add && git commit``: a transition must never pick up what the user
staged, must not depend on (or fight) the index, and must be atomic. So, like
git-revise, the commit is built in memory from blobs and only the subtrees that
change, and the branch ref is moved last with a compare-and-swap on the tip we
built on (``Reference.set_target`` on the reference as read fails if it moved).
Writers are serialised by a sidecar ``flock`` so ledger writers never storm; a
plain ``git commit`` racing us still loses nothing: we rebuild on the new tip.
Only that is retried (the ref moved, or another git process holds its lock);
any other failure is reported at once with its cause: the environment's with
the errno's hint (exit 5, nothing committed), a bug otherwise.

After the ref moves, the index and work tree are brought up to date for exactly
the paths the transition wrote, so ``git status`` does not show the transition
reversed and every other staged or unstaged change stays as it was. A journal
(``<gitdir>/ledger-pending.json``) written just before the ref moves lets
``doctor`` finish that step if the process dies in between: the ref is always
either old or new, never half. A failure in that step is exit 4, "committed as
<sha>; the work tree is behind", with git's reason: the journal stays for
``doctor --fix`` (or the next transition) to finish.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import heapq
import itertools
import json
import os
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path, PurePosixPath
from typing import TypeVar

import pygit2

from ledger.core import gitcli, repobase
from ledger.core.commitinfo import TRAILER_STEP as TRAILER_STEP
from ledger.core.commitinfo import TRAILER_TRANSITION as TRAILER_TRANSITION
from ledger.core.commitinfo import CommitInfo as CommitInfo
from ledger.core.commitinfo import parse_trailers as parse_trailers
from ledger.core.errors import (
    BadInput,
    EnvironmentFailure,
    LedgerError,
    Refused,
    WorktreeBehind,
    environment_error,
    errno_hint,
    errno_in,
)

# libgit2 maps pack files in windows of up to 1 GB, keeping up to 8 GB mapped, and a
# mapped page that was read counts as resident: reading 60,000 entry blobs of a
# 10,000-step ledger left 243 MB resident for 93 MB with 32 MB windows, at the same
# speed. Process-wide, set once on import.
PACK_WINDOW = 32 << 20
pygit2.settings.mwindow_size = PACK_WINDOW
pygit2.settings.mwindow_mapped_limit = PACK_WINDOW

JOURNAL = "ledger-pending.json"
MAX_ATTEMPTS = 50
_O = TypeVar("_O", pygit2.Blob, pygit2.Tree, pygit2.Commit)


def _get(repo: pygit2.Repository, oid: str | pygit2.Oid, kind: type[_O]) -> _O:
    """The object ``oid`` as ``kind``; anything else means a corrupt or foreign ref."""
    obj = repo[oid]
    if not isinstance(obj, kind):
        raise LedgerError(f"object {oid} is not a {kind.__name__.lower()}")
    return obj


def _git_error(what: str, exc: Exception) -> LedgerError:
    """A libgit2 failure: the environment's when its text names an errno, else a bug.

    libgit2 formats ``strerror`` in this process, whose messages are never
    translated, so the errno is read back exactly (``errors.errno_in``).
    """
    code = errno_in(str(exc))
    if code is not None:
        return EnvironmentFailure(f"{what}: {exc}", errno_hint(code), code=code)
    return LedgerError(f"{what}: {exc}")


# Where a crash test may stop a transition ("after-objects", "after-ref",
# "during-index"). The tests install a hook here from their own wrapper
# process (tests/writer.py); the program itself never pauses and consults no
# environment variable for it.
fault_hook: Callable[[str], None] | None = None


def fault_point(name: str) -> None:
    if fault_hook is not None:
        fault_hook(name)


@dataclass(frozen=True)
class Transition:
    """One ledger transition: its kind, step id, message and the files it writes."""

    kind: str
    step: str
    subject: str
    writes: dict[str, bytes | None]
    body: str = ""
    trailers: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        # One-line fields reach the subject and the trailers: a newline there
        # would split the subject or forge a trailer (Ledger-Transition: ...).
        for what, value in (("subject", self.subject), ("step", self.step), ("kind", self.kind)):
            if "\n" in value.strip() or "\r" in value:
                raise BadInput(f"the {what} of a transition must be one line", "remove the newline")
        for key, value in self.trailers:
            if "\n" in value or "\r" in value or "\n" in key:
                raise BadInput(
                    f"{key} must be one line (it becomes a commit trailer)",
                    "put multi-line text in the entry file, not in a trailer",
                )

    def message(self) -> str:
        lines = [self.subject.strip()]
        if self.body.strip():
            lines += ["", self.body.strip()]
        lines += ["", f"{TRAILER_TRANSITION}: {self.kind}", f"{TRAILER_STEP}: {self.step}"]
        lines += [f"{k}: {v}" for k, v in self.trailers]
        return "\n".join(lines) + "\n"


def _info(commit: pygit2.Commit) -> CommitInfo:
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

    def _object(self, path: str) -> pygit2.Object | None:
        if self.tree is None or not path:
            return self.tree
        try:
            entry = self.tree[path]
        except KeyError:
            return None
        return self.repo[entry.id]

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
        return _get(self.repo, blob_id, pygit2.Blob).data

    def is_tree(self, path: str) -> bool:
        return isinstance(self._object(path), pygit2.Tree)

    def files(self, prefix: str) -> dict[str, str]:
        """Every blob below ``prefix`` (recursively): path -> blob id."""
        out: dict[str, str] = {}
        root = self._object(prefix)
        if not isinstance(root, pygit2.Tree):
            return out
        stack: list[tuple[str, pygit2.Tree]] = [(prefix, root)]
        while stack:
            base, tree = stack.pop()
            for entry in tree:
                path = f"{base}/{entry.name}" if base else str(entry.name)
                if entry.type_str == "tree":
                    stack.append((path, _get(self.repo, entry.id, pygit2.Tree)))
                elif entry.type_str == "blob":
                    out[path] = str(entry.id)
        return out


def _parse_date(value: str) -> tuple[int, int]:
    """A GIT_*_DATE value as (epoch seconds, offset minutes)."""
    text = value.strip().lstrip("@")
    match = re.fullmatch(r"(\d+)(?:\s+([+-])(\d\d)(\d\d))?", text)
    if match:
        offset = 0
        if match.group(2):
            offset = int(match.group(3)) * 60 + int(match.group(4))
            offset = -offset if match.group(2) == "-" else offset
        return int(match.group(1)), offset
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        raise BadInput(
            f"cannot read the date {value!r}", "use '@<epoch> +0000' or ISO 8601"
        ) from None
    utcoffset = parsed.utcoffset()
    return int(parsed.timestamp()), int(utcoffset.total_seconds() // 60) if utcoffset else 0


class Store:
    """A repository as git-ledger sees it: trees to read, a branch to extend."""

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

    # --- reading ------------------------------------------------------------

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
        commit = _get(self.repo, commit_id, pygit2.Commit)
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
        return Snapshot(self.repo, None, _get(self.repo, tree_id, pygit2.Tree))

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
            _get(repo, base, pygit2.Commit).tree
            if base
            else _get(repo, repo.TreeBuilder().write(), pygit2.Tree)
        )
        index = repo.merge_trees(
            ancestor,
            _get(repo, ours_id, pygit2.Commit).tree,
            _get(repo, theirs, pygit2.Commit).tree,
        )
        conflicts = list(index.conflicts) if index.conflicts is not None else []
        for _ancestor, our, their in conflicts:
            entry = our or their
            if entry is None:
                continue
            del index.conflicts[entry.path]
            index.add(pygit2.IndexEntry(entry.path, entry.id, entry.mode))
        return Snapshot(repo, None, _get(repo, index.write_tree(repo), pygit2.Tree))

    def commit_info(self, commit_id: str) -> CommitInfo:
        return _info(_get(self.repo, commit_id, pygit2.Commit))

    def walk(self, rev: str | None = None, first_parent: bool = False) -> Iterator[CommitInfo]:
        """Commits reachable from ``rev`` (default HEAD), newest first, topologically."""
        tip = self.resolve(rev)
        if tip is None:
            return
        walker = self.repo.walk(tip, pygit2.enums.SortMode.TIME | pygit2.enums.SortMode.TOPOLOGICAL)
        if first_parent:
            walker.simplify_first_parent()
        for commit in walker:
            yield _info(commit)

    def walk_log(self, rev: str | None = None) -> Iterator[CommitInfo]:
        """Commits reachable from ``rev`` (default HEAD), newest first, read lazily.

        The order ``log`` shows, the same whether or not the reader stops early:
        newest commit time first, ties in the order found (first parents first,
        as ``git log``), and never a commit before any of its children, so
        same-second commits (a fixed clock, a fast script) keep their order.
        Only the commits shown and their parents are read (plus, while branches
        run side by side, the commits between them): ``log -n 20`` at 10,000
        steps does not read the history first, as a topological sort must.
        """
        tip = self.resolve(rev)
        if tip is None:
            return
        heap: list[tuple[int, int, str]] = []
        waiting: dict[str, int] = {}  # commit -> children found but not yet shown
        found: dict[str, pygit2.Commit] = {}
        pushed: set[str] = set()
        order = 0

        def push(oid: str) -> None:
            nonlocal order
            commit = _get(self.repo, oid, pygit2.Commit)
            found[oid] = commit
            pushed.add(oid)
            for parent in dict.fromkeys(str(p) for p in commit.parent_ids):
                if parent not in pushed:  # reached again by a child found late
                    waiting[parent] = waiting.get(parent, 0) + 1
            heapq.heappush(heap, (-commit.commit_time, order, oid))
            order += 1

        push(tip)
        while heap:
            _, _, oid = heapq.heappop(heap)
            commit = found.pop(oid)
            # Only a commit no older than this one can be its descendant (clock
            # skew aside), which keeps this check off long parallel branches.
            if any(
                -when >= commit.commit_time and self.repo.descendant_of(other, oid)
                for when, _, other in heap
            ):
                # A child not found yet (a longer branch of a merge, same second):
                # forget this commit; that child brings it back when it is shown.
                pushed.discard(oid)
                for parent in dict.fromkeys(str(p) for p in commit.parent_ids):
                    if parent not in pushed:
                        left = waiting.get(parent, 0) - 1
                        if left > 0:
                            waiting[parent] = left
                        else:
                            waiting.pop(parent, None)
                continue
            yield _info(commit)
            for parent in dict.fromkeys(str(p) for p in commit.parent_ids):
                if parent in pushed:
                    continue
                # A parent that was put back (deferred above) while this child was
                # found has no count for it: its last known child is shown, bring it in.
                left = waiting.get(parent, 1) - 1
                if left > 0:
                    waiting[parent] = left
                else:
                    waiting.pop(parent, None)
                    push(parent)

    def is_ancestor(self, ancestor: str, descendant: str) -> bool:
        if ancestor == descendant:
            return True
        return bool(self.repo.descendant_of(descendant, ancestor))

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

    # --- history (for verify) -----------------------------------------------

    def is_shallow(self) -> bool:
        return bool(self.repo.is_shallow)

    def has_commit(self, commit_id: str) -> bool:
        try:
            return isinstance(self.repo[commit_id], pygit2.Commit)
        except (KeyError, ValueError):
            return False

    def walk_new(self, tip: str, hide: list[str]) -> list[CommitInfo]:
        """Commits reachable from ``tip`` but not from ``hide``, parents first."""
        order = pygit2.enums.SortMode.TOPOLOGICAL | pygit2.enums.SortMode.REVERSE
        try:
            walker = self.repo.walk(pygit2.Oid(hex=tip), order)
            for commit in hide:
                walker.hide(pygit2.Oid(hex=commit))
            return [_info(c) for c in walker]
        except (KeyError, pygit2.GitError) as exc:
            raise BadInput(
                f"history is incomplete: {exc}",
                "fetch the missing objects (git fetch --unshallow, or a full clone)",
            ) from None

    def changes(self, old: str | None, new: str) -> list[tuple[str, str | None, str | None]]:
        """(path, old blob, new blob) for every file that differs between two commits.

        ``old`` None: against the empty tree. Identical subtrees are skipped, so
        one transition costs a few tree reads however large the repository.
        """
        new_tree = _get(self.repo, new, pygit2.Commit).tree
        if old is None:
            empty = _get(self.repo, self.repo.TreeBuilder().write(), pygit2.Tree)
            diff = empty.diff_to_tree(new_tree)
        else:
            diff = _get(self.repo, old, pygit2.Commit).tree.diff_to_tree(new_tree)
        zero = "0" * 40
        out = []
        for delta in diff.deltas:
            before = str(delta.old_file.id)
            after = str(delta.new_file.id)
            out.append(
                (
                    delta.new_file.path or delta.old_file.path,
                    None if before == zero else before,
                    None if after == zero else after,
                )
            )
        return out

    def refs(self, prefix: str) -> dict[str, str]:
        """Direct references below ``prefix``: name -> target commit id."""
        out = {}
        for name in self.repo.references:
            if name.startswith(prefix):
                ref = self.repo.references.get(name)
                if ref is not None and ref.type == pygit2.enums.ReferenceType.DIRECT:
                    out[name] = str(ref.target)
        return out

    def create_ref(self, name: str, target: str, message: str) -> bool:
        """Create ``name`` at ``target``; never move it (False if it already exists)."""
        try:
            self.repo.create_reference_direct(name, pygit2.Oid(hex=target), False, message=message)
        except (pygit2.AlreadyExistsError, ValueError):
            return False
        return True

    def delete_ref(self, name: str) -> None:
        ref = self.repo.references.get(name)
        if ref is not None:
            ref.delete()

    # --- writing ------------------------------------------------------------

    def signature(self, kind: str) -> pygit2.Signature:
        """Author or committer, honouring GIT_{AUTHOR,COMMITTER}_{NAME,EMAIL,DATE} like git."""
        role = "AUTHOR" if kind == "author" else "COMMITTER"
        name = os.environ.get(f"GIT_{role}_NAME")
        email = os.environ.get(f"GIT_{role}_EMAIL")
        if not name or not email:
            try:
                default = self.repo.default_signature
            except (KeyError, pygit2.GitError):
                default = None
            if default is None:
                raise BadInput(
                    "git identity is not set",
                    "run: git config user.name 'Your Name' && git config user.email you@example.com",
                )
            name = name or default.name
            email = email or default.email
        check_identity(name, email, role.lower())
        date = os.environ.get(f"GIT_{role}_DATE")
        if date:
            when, offset = _parse_date(date)
            return pygit2.Signature(name, email, when, offset)
        return pygit2.Signature(name, email)

    @contextlib.contextmanager
    def writer_lock(self) -> Iterator[None]:
        """Serialise ledger writers of this repository (every worktree shares it)."""
        self.ledger_state_dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.ledger_state_dir / "write.lock", os.O_CREAT | os.O_RDWR, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)

    def writer_lock_free(self) -> bool:
        path = self.ledger_state_dir / "write.lock"
        if not path.exists():
            return True
        fd = os.open(path, os.O_RDWR)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return False
        else:
            fcntl.flock(fd, fcntl.LOCK_UN)
            return True
        finally:
            os.close(fd)

    def _build_tree(
        self, base: pygit2.Tree | None, changes: dict[str, bytes | None], prefix: str = ""
    ) -> str:
        """A new tree: ``base`` with ``changes`` applied, only changed subtrees rebuilt."""
        here: dict[str, bytes | None] = {}
        below: dict[str, dict[str, bytes | None]] = {}
        for path, data in changes.items():
            head, _, rest = path.partition("/")
            if rest:
                below.setdefault(head, {})[rest] = data
            else:
                here[head] = data
        check_case(base, here, below, prefix)
        builder = self.repo.TreeBuilder(base) if base is not None else self.repo.TreeBuilder()
        for name, data in here.items():
            if data is None:
                if base is not None and name in base:
                    builder.remove(name)
            else:
                builder.insert(name, self.repo.create_blob(data), pygit2.enums.FileMode.BLOB)
        for name, sub_changes in below.items():
            sub_base = None
            if base is not None and name in base:
                obj = self.repo[base[name].id]
                sub_base = obj if isinstance(obj, pygit2.Tree) else None
            sub_id = self._build_tree(sub_base, sub_changes, f"{prefix}{name}/")
            if len(_get(self.repo, sub_id, pygit2.Tree)) == 0:
                if base is not None and name in base:
                    builder.remove(name)
            else:
                builder.insert(name, pygit2.Oid(hex=sub_id), pygit2.enums.FileMode.TREE)
        return str(builder.write())

    def worktree_blob(self, path: str, expected: tuple[str | None, ...] = ()) -> str | None:
        """The blob id git would stage for the work-tree file ``path`` (None: no file).

        Raw bytes that hash to an ``expected`` id answer at once; anything else is
        asked of git, through the clean filters (``core.autocrlf``, ``eol``,
        ``filter`` attributes), so a CRLF checkout of an LF blob is unchanged.
        """
        full = self.require_workdir() / path
        if not full.is_file():
            return None
        raw = self.hash_file(full)
        if raw in expected:
            return raw
        return gitcli.hash_path(self.require_workdir(), path)

    def worktree_content(self, path: str) -> bytes:
        """The bytes git would commit for the work-tree file ``path`` (clean filters applied)."""
        full = self.require_workdir() / path
        data = full.read_bytes()
        if self.repo.get(self.hash_bytes(data)) is not None:
            # Already a blob in the store (the common case: what was committed),
            # which git's clean filters would give back unchanged.
            return data
        blob_id = gitcli.hash_path(self.require_workdir(), path, write=True)
        return _get(self.repo, blob_id, pygit2.Blob).data

    def skip_worktree(self, path: str) -> bool:
        """Whether ``path`` is outside the sparse checkout (its index entry says so)."""
        return gitcli.index_entries(self.require_workdir(), [path]).get(path, ("", False))[1]

    def _check_worktree(
        self, snap: Snapshot, writes: dict[str, bytes | None], *, refuse: bool = True
    ) -> list[str]:
        """Refuse to overwrite anything the user has not committed at the paths we write.

        Returns the work-tree files that already hold what we write but are not
        staged as such (an entry written before a crash, then autosaved): git
        would not overwrite them, so they are removed for git to write them anew.
        ``refuse=False`` (doctor's autosave) only finds those.
        """
        workdir = self.require_workdir()
        staged = gitcli.index_entries(workdir, list(writes))
        already: list[str] = []
        writable: dict[Path, bool] = {}
        for path, data in writes.items():
            committed = snap.blob_id(path)
            new = self.hash_bytes(data) if data is not None else None
            blob, skip = staged.get(path, (None, False))
            if not refuse:
                if (
                    not skip
                    and new is not None
                    and blob != new
                    and self.worktree_blob(path, (new,)) == new
                ):
                    already.append(path)
                continue
            if blob not in (committed, new):
                raise Refused(
                    f"{path} has staged changes that this transition would overwrite",
                    f"commit or unstage them first: git restore --staged {path}",
                )
            if skip:
                continue  # outside the sparse checkout: no file of the user's to protect
            full = workdir / path
            if full.is_symlink() or (full.exists() and not full.is_file()):
                raise BadInput(
                    f"{path} is not a regular file in the working tree",
                    "move it away; ledger entries are plain files",
                )
            for parent in PurePosixPath(path).parents:
                node = workdir / parent
                if str(parent) != "." and (
                    node.is_symlink() or (node.exists() and not node.is_dir())
                ):
                    raise BadInput(
                        f"{parent} is not a directory in the working tree", "move it away"
                    )
            _check_writable(workdir, path, writable)
            on_disk = self.worktree_blob(path, (committed, new))
            if on_disk not in (committed, new):
                raise Refused(
                    f"{path} has uncommitted changes that this transition would overwrite",
                    f"commit or stash them first (git stash push -- {path})",
                )
            if on_disk is not None and on_disk == new and on_disk != blob:
                already.append(path)
        return already

    def transact(
        self, build: Callable[[Snapshot], Transition], *, check_worktree: bool = True
    ) -> tuple[str, Transition]:
        """Build a transition on the branch tip and commit it atomically.

        ``build`` runs against the tip it extends and may raise to refuse; when
        another writer moves the tip first, it runs again on the new tip.
        """
        branch = self.branch()
        author = self.signature("author")
        committer = self.signature("committer")
        with self.writer_lock():
            if self.workdir is not None and self.pending_journal() is not None:
                # Never build on an index a crash (or a failed update) left behind:
                # finish that first, or refuse with its reason.
                self.recover_journal()
            last = ""
            for _attempt in range(MAX_ATTEMPTS):
                ref = self.repo.references.get(branch)
                tip = str(ref.target) if ref is not None else None
                if ref is not None and ref.type != pygit2.enums.ReferenceType.DIRECT:
                    raise BadInput(f"{branch} is a symbolic reference", "switch to a real branch")
                snap = self.snapshot(tip) if tip else Snapshot(self.repo, None, None)
                transition = build(snap)
                for path in transition.writes:
                    check_entry_path(path)
                already: list[str] = []
                if self.workdir is not None:
                    already = self._check_worktree(snap, transition.writes, refuse=check_worktree)
                try:
                    tree_id = self._build_tree(snap.tree, transition.writes)
                    if snap.tree is not None and tree_id == str(snap.tree.id):
                        raise Refused(f"nothing to record for {transition.step}: no file changes")
                    commit_id = str(
                        self.repo.create_commit(
                            None,
                            author,
                            committer,
                            transition.message(),
                            pygit2.Oid(hex=tree_id),
                            [pygit2.Oid(hex=tip)] if tip else [],
                        )
                    )
                except OSError as exc:
                    # Nothing is referenced yet: unreachable loose objects at most. No
                    # automatic gc removes them (doctor --fix sets gc.auto=0); a `git gc`
                    # run by hand prunes them once gc.pruneExpire has passed.
                    raise environment_error(exc, "cannot write git objects") from None
                except pygit2.GitError as exc:
                    raise _git_error("cannot write git objects", exc) from None
                fault_point("after-objects")
                self._write_journal(branch, tip, commit_id, transition.writes)
                reflog = f"ledger: {transition.kind} {transition.step}"
                try:
                    if ref is None:
                        self.repo.create_reference_direct(
                            branch, pygit2.Oid(hex=commit_id), False, message=reflog
                        )
                    else:
                        ref.set_target(pygit2.Oid(hex=commit_id), reflog)
                except (pygit2.GitError, pygit2.AlreadyExistsError, OSError) as exc:
                    self._clear_journal()
                    last = self._ref_contended(branch, tip, exc)
                    time.sleep(0.005)
                    continue  # another writer moved the tip (or holds its lock): rebuild on it
                try:
                    fault_point("after-ref")
                    self.sync_worktree(tip, commit_id, already)
                except WorktreeBehind:
                    raise
                except OSError as exc:
                    failure = environment_error(exc, "cannot update the work tree")
                    raise WorktreeBehind(commit_id, failure.message, failure.hint) from exc
                except LedgerError as exc:
                    raise WorktreeBehind(commit_id, exc.message, exc.hint) from exc
                self._clear_journal()
                return commit_id, transition
        raise Refused(
            f"could not move {branch} in {MAX_ATTEMPTS} attempts: {last}",
            "retry once the other writer is done; git ledger doctor --fix removes a stale lock",
        )

    def _ref_contended(self, branch: str, tip: str | None, exc: Exception) -> str:
        """Why moving ``branch`` failed, when retrying can help; raise at once otherwise.

        Retrying helps only when another writer won the compare-and-swap (the
        ref no longer points at ``tip``) or holds the ref's lock right now (a
        ``git commit`` or ``update-ref`` in flight). A lock that cannot be taken
        for any other reason (a full disk, a read-only ``.git``, permissions)
        fails the same way fifty times: it is reported at once, with its cause.
        """
        ref = self.repo.references.get(branch)
        now = str(ref.target) if ref is not None else None
        if now != tip:
            return f"{branch} moved to {str(now)[:10]} while this transition was built"
        locks = [self.common_dir / f"{branch}.lock", self.common_dir / "packed-refs.lock"]
        held = next((lock for lock in locks if lock.exists()), None)
        if held is not None:
            return f"{held} exists (another git process holds it, or a crash left it behind)"
        if isinstance(exc, OSError):
            raise environment_error(exc, f"cannot move {branch}") from None
        raise _git_error(f"cannot move {branch}", exc) from None

    # --- index and work tree ------------------------------------------------

    def _journal_path(self) -> Path:
        return self.git_dir / JOURNAL

    def _write_journal(
        self, branch: str, old: str | None, new: str, writes: dict[str, bytes | None]
    ) -> None:
        data = {"branch": branch, "old": old, "new": new, "paths": sorted(writes)}
        # On disk before the ref moves: recovery after a power cut reads it.
        repobase.write_atomic(self._journal_path(), json.dumps(data, sort_keys=True))

    def _clear_journal(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            self._journal_path().unlink()

    def pending_journal(self) -> dict[str, object] | None:
        try:
            data = json.loads(self._journal_path().read_text())
        except (FileNotFoundError, ValueError):
            return None
        return data if isinstance(data, dict) else None

    def recover_journal(self) -> str | None:
        """Finish (or drop) a transition a crash interrupted. Returns what was done."""
        data = self.pending_journal()
        if data is None:
            return None
        branch, new, paths = data.get("branch"), data.get("new"), data.get("paths")
        old = str(data["old"]) if data.get("old") else None
        ref = self.repo.references.get(str(branch))
        if ref is not None and str(ref.target) == new and isinstance(paths, list):
            self._set_aside_partial(old, str(new), [str(p) for p in paths])
            self.sync_worktree(old, str(new), [])
            self._clear_journal()
            return (
                f"completed the interrupted transition {str(new)[:10]} in the index and work tree"
            )
        self._clear_journal()
        return "dropped an interrupted transition whose commit never reached the branch"

    def _set_aside_partial(self, old: str | None, new: str, paths: list[str]) -> None:
        """Move aside what an interrupted write left at ``paths`` (neither old nor new).

        git writes a work-tree file in place, so a crash or a full disk can leave
        part of one; git would then refuse to update it. Nothing is deleted: it
        goes to ``.git/ledger/recovered/``.
        """
        workdir = self.require_workdir()
        before = Snapshot(self.repo, old, _get(self.repo, old, pygit2.Commit).tree) if old else None
        after = self.snapshot(new)
        for path in paths:
            expected = (before.blob_id(path) if before else None, after.blob_id(path))
            if (workdir / path).is_file() and self.worktree_blob(path, expected) not in expected:
                target = self.ledger_state_dir / "recovered" / path
                target.parent.mkdir(parents=True, exist_ok=True)
                os.replace(workdir / path, target)

    def sync_worktree(self, old: str | None, new: str, already: list[str]) -> None:
        """Bring index and work tree from commit ``old`` to ``new`` (the paths that differ).

        The git program does it (:func:`gitcli.read_tree_update`): it holds
        ``index.lock`` across the whole read-modify-write, so a user's ``git add``
        racing a transition is never lost, and it knows every index format,
        sparse checkouts and the user's filters. ``already`` are work-tree files
        that hold exactly what ``new`` has but are not staged so: git refuses to
        overwrite them, and their content is safe in ``new``, so they go first.
        """
        if self.workdir is None:
            return
        fault_point("during-index")
        for path in already:
            with contextlib.suppress(FileNotFoundError):
                (self.workdir / path).unlink()
        delay = 0.01
        refreshed = False
        for _attempt in range(60):
            proc = gitcli.read_tree_update(self.workdir, old, new)
            if proc.returncode == 0:
                return
            if "not uptodate" in proc.stderr and not refreshed:
                # Stat data that no longer matches (a copied or touched tree): read-tree
                # does not refresh it as checkout does. The content was checked above.
                gitcli.run(["update-index", "-q", "--refresh"], self.workdir, check=False)
                refreshed = True
                continue
            if not gitcli.index_busy(proc.stderr):
                break
            time.sleep(delay)  # another git process holds index.lock: it is brief
            delay = min(delay * 2, 0.2)
        reason = gitcli.reason(proc)
        if gitcli.index_busy(proc.stderr):
            hint = "another git process holds .git/index.lock: wait for it to end"
        else:
            hint = errno_hint(errno_in(reason)) or "fix what git names"
        raise WorktreeBehind(new, f"git could not update the index and work tree: {reason}", hint)


def _check_writable(workdir: Path, path: str, seen: dict[Path, bool]) -> None:
    """Refuse, before anything is committed, a work-tree directory git could not write.

    git writes (or unlinks) the file in its nearest existing directory; one it
    cannot write would leave the branch committed and the work tree behind.
    ``access`` answers as the kernel would for this user (root passes modes)
    and says no on a read-only mount, which ``statvfs`` then names.
    """
    parent = (workdir / path).parent
    while not parent.exists() and parent != workdir:
        parent = parent.parent
    if seen.setdefault(parent, os.access(parent, os.W_OK)):
        return
    code = errno.EACCES
    with contextlib.suppress(OSError):
        if os.statvfs(parent).f_flag & os.ST_RDONLY:
            code = errno.EROFS
    raise environment_error(
        OSError(code, os.strerror(code), str(parent)), "cannot write in the work tree"
    )


def check_identity(name: str, email: str, role: str) -> None:
    """Refuse what git refuses in an identity: a newline or angle brackets would write
    a commit object that fails ``git fsck`` and breaks every later command."""
    for what, value in (("name", name), ("email", email)):
        if any(c in value for c in "<>\n\r\0"):
            raise BadInput(
                f"the {role} {what} {value!r} contains a newline or angle brackets",
                f"fix it: git config user.{what} ... (or GIT_{role.upper()}_{what.upper()})",
            )


def write_atomic(path: Path, data: bytes) -> None:
    """:func:`ledger.core.repobase.write_atomic`, with a failure said as a one-line error."""
    try:
        repobase.write_atomic(path, data)
    except OSError as exc:
        raise environment_error(exc, f"cannot write {path}") from None


def check_case(
    base: pygit2.Tree | None,
    here: dict[str, bytes | None],
    below: dict[str, dict[str, bytes | None]],
    prefix: str,
) -> None:
    """Refuse a new name that differs from a name of the tree only in letter case.

    On a case-insensitive file system (macOS's default, Windows) ``seed-a.json``
    and ``seed-A.json`` are one file: the work tree could never match the
    commit. Ids, gates and cells are checked where they are named, with a
    better message; this is the guard for every other name a transition makes.
    It runs on each level of the tree a transition rebuilds, with the trees
    already loaded, and compares only names new to their directory.
    """
    made = [n for n, data in here.items() if data is not None] + list(below)
    seen: dict[str, str] = {}
    for name in made:
        if seen.setdefault(name.casefold(), name) != name:  # two names in this transition
            _case_clash(prefix + name, prefix + seen[name.casefold()])
    if base is None:
        return
    for name in made:
        if name in base:
            continue
        for twin in _case_twins(base, name):
            if here.get(twin, b"") is not None:  # unless this transition deletes it
                _case_clash(prefix + name, prefix + twin)


def _case_twins(tree: pygit2.Tree, part: str) -> list[str]:
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


def _case_clash(path: str, other: str) -> None:
    raise BadInput(
        f"{path} differs from {other} only in letter case",
        "on a case-insensitive file system (macOS, Windows) they would be one file: "
        "pick a name that differs in more than case",
    )


def check_entry_path(path: str) -> str:
    """A repository-relative path that stays inside the repository."""
    pure = PurePosixPath(path)
    if (
        not path
        or pure.is_absolute()
        or ".." in pure.parts
        or pure.parts[0] == ".git"
        or any(ord(c) < 32 for c in path)
    ):
        raise BadInput(f"refusing to write outside the ledger: {path!r}")
    return path
