"""The only module that touches pygit2: read trees, write one transition as one commit.

Why not ``git add && git commit``: a transition must never pick up what the user
staged, must not depend on (or fight) the index, and must be atomic. So, like
git-revise, the commit is built in memory from blobs and only the subtrees that
change, and the branch ref is moved last with a compare-and-swap on the tip we
built on (``Reference.set_target`` on the reference as read fails if it moved).
Writers are serialised by a sidecar ``flock`` so ledger writers never storm; a
plain ``git commit`` racing us still loses nothing: we rebuild on the new tip.

After the ref moves, the index and work tree are brought up to date for exactly
the paths the transition wrote, so ``git status`` does not show the transition
reversed and every other staged or unstaged change stays as it was. A journal
(``<gitdir>/ledger-pending.json``) written just before the ref moves lets
``doctor`` finish that step if the process dies in between: the ref is always
either old or new, never half.
"""

from __future__ import annotations

import contextlib
import fcntl
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

from ledger.errors import BadInput, LedgerError, Refused

TRAILER_TRANSITION = "Ledger-Transition"
TRAILER_STEP = "Ledger-Step"
JOURNAL = "ledger-pending.json"
MAX_ATTEMPTS = 50
_TRAILER_LINE = re.compile(r"^([A-Za-z0-9-]+):[ \t]*(.*)$")
_O = TypeVar("_O", pygit2.Blob, pygit2.Tree, pygit2.Commit)


def _get(repo: pygit2.Repository, oid: str | pygit2.Oid, kind: type[_O]) -> _O:
    """The object ``oid`` as ``kind``; anything else means a corrupt or foreign ref."""
    obj = repo[oid]
    if not isinstance(obj, kind):
        raise LedgerError(f"object {oid} is not a {kind.__name__.lower()}")
    return obj


def fault_point(name: str) -> None:
    """Test-only pause for crash tests: ``LEDGER_FAULT_PAUSE=<name>`` stops here.

    The process announces it by creating ``$LEDGER_FAULT_SIGNAL`` and then waits
    to be killed, so a test can SIGKILL it at exactly this point.
    """
    if os.environ.get("LEDGER_FAULT_PAUSE") != name:
        return
    signal_file = os.environ.get("LEDGER_FAULT_SIGNAL")
    if signal_file:
        Path(signal_file).write_text(name)
    time.sleep(3600)


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


@dataclass(frozen=True)
class CommitInfo:
    id: str
    parents: tuple[str, ...]
    message: str
    time: int
    author: str
    trailers: tuple[tuple[str, str], ...]

    @property
    def subject(self) -> str:
        return self.message.split("\n", 1)[0]

    def trailer(self, key: str) -> str | None:
        for k, v in self.trailers:
            if k.lower() == key.lower():
                return v
        return None


def _info(commit: pygit2.Commit) -> CommitInfo:
    return CommitInfo(
        id=str(commit.id),
        parents=tuple(str(p) for p in commit.parent_ids),
        message=commit.message,
        time=commit.commit_time,
        author=f"{commit.author.name} <{commit.author.email}>",
        trailers=parse_trailers(commit.message),
    )


def parse_trailers(message: str) -> tuple[tuple[str, str], ...]:
    """Trailers of the last paragraph, repeated keys kept (unlike message_trailers)."""
    paragraphs = [p for p in re.split(r"\n\s*\n", message.strip()) if p.strip()]
    if len(paragraphs) < 2:
        return ()
    found = []
    for line in paragraphs[-1].splitlines():
        match = _TRAILER_LINE.match(line.strip())
        if not match:
            return ()
        found.append((match.group(1), match.group(2).strip()))
    return tuple(found)


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
        commondir_file = self.git_dir / "commondir"
        if commondir_file.exists():
            common = Path(commondir_file.read_text().strip())
            self.common_dir = common if common.is_absolute() else (self.git_dir / common)
            self.common_dir = self.common_dir.resolve()
        else:
            self.common_dir = self.git_dir
        workdir = self.repo.workdir
        self.workdir: Path | None = Path(workdir) if workdir else None
        self.ledger_state_dir = self.common_dir / "ledger"

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
        """The tree the index would commit (honours GIT_INDEX_FILE, as hooks must)."""
        path = os.environ.get("GIT_INDEX_FILE")
        if path:
            index = pygit2.Index(str(Path(path).resolve()))
            tree_id = index.write_tree(self.repo)
        else:
            index = self.repo.index
            index.read(force=True)
            tree_id = index.write_tree()
        return Snapshot(self.repo, None, _get(self.repo, tree_id, pygit2.Tree))

    def merged_snapshot(self, theirs: str, ours: str | None = None) -> Snapshot:
        """The tree a merge of ``theirs`` into ``ours`` (default HEAD) gives, in memory.

        Conflicting paths take our side; callers use this for entry files, which
        never conflict (one file per fact), and regenerate views from it.
        """
        repo = self.repo
        ours_id = ours or self.resolve(None)
        if ours_id is None:
            raise LedgerError("cannot merge into an unborn branch")
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

    def walk(
        self, rev: str | None = None, first_parent: bool = False, *, lazy: bool = False
    ) -> Iterator[CommitInfo]:
        """Commits reachable from ``rev`` (default HEAD), newest first.

        ``lazy``: by commit time only, so the first commits come without reading
        the whole history (a topological sort must see every commit first); for
        readers that stop early, such as ``log -n``.
        """
        tip = self.resolve(rev)
        if tip is None:
            return
        order = pygit2.enums.SortMode.TIME
        if not lazy:
            order |= pygit2.enums.SortMode.TOPOLOGICAL
        walker = self.repo.walk(tip, order)
        if first_parent:
            walker.simplify_first_parent()
        for commit in walker:
            yield _info(commit)

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

    def _build_tree(self, base: pygit2.Tree | None, changes: dict[str, bytes | None]) -> str:
        """A new tree: ``base`` with ``changes`` applied, only changed subtrees rebuilt."""
        here: dict[str, bytes | None] = {}
        below: dict[str, dict[str, bytes | None]] = {}
        for path, data in changes.items():
            head, _, rest = path.partition("/")
            if rest:
                below.setdefault(head, {})[rest] = data
            else:
                here[head] = data
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
            sub_id = self._build_tree(sub_base, sub_changes)
            if len(_get(self.repo, sub_id, pygit2.Tree)) == 0:
                if base is not None and name in base:
                    builder.remove(name)
            else:
                builder.insert(name, pygit2.Oid(hex=sub_id), pygit2.enums.FileMode.TREE)
        return str(builder.write())

    def _check_worktree(
        self, snap: Snapshot, writes: dict[str, bytes | None], index: pygit2.Index
    ) -> None:
        """Refuse to overwrite anything the user has not committed at the paths we write."""
        if self.workdir is None:
            return
        staged = self.index_blob_ids(list(writes), index)
        for path, data in writes.items():
            committed = snap.blob_id(path)
            new = self.hash_bytes(data) if data is not None else None
            if staged[path] not in (committed, new):
                raise Refused(
                    f"{path} has staged changes that this transition would overwrite",
                    f"commit or unstage them first: git restore --staged {path}",
                )
            full = self.workdir / path
            if full.is_symlink() or (full.exists() and not full.is_file()):
                raise BadInput(
                    f"{path} is not a regular file in the working tree",
                    "move it away; ledger entries are plain files",
                )
            for parent in PurePosixPath(path).parents:
                node = self.workdir / parent
                if str(parent) != "." and (
                    node.is_symlink() or (node.exists() and not node.is_dir())
                ):
                    raise BadInput(
                        f"{parent} is not a directory in the working tree", "move it away"
                    )
            on_disk = self.hash_file(full) if full.exists() else None
            if on_disk not in (committed, new):
                raise Refused(
                    f"{path} has uncommitted changes that this transition would overwrite",
                    f"commit or stash them first (git stash push -- {path})",
                )

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
        index: pygit2.Index | None = None
        with self.writer_lock():
            for _attempt in range(MAX_ATTEMPTS):
                ref = self.repo.references.get(branch)
                tip = str(ref.target) if ref is not None else None
                if ref is not None and ref.type != pygit2.enums.ReferenceType.DIRECT:
                    raise BadInput(f"{branch} is a symbolic reference", "switch to a real branch")
                snap = self.snapshot(tip) if tip else Snapshot(self.repo, None, None)
                transition = build(snap)
                for path in transition.writes:
                    check_entry_path(path)
                if check_worktree and self.workdir is not None:
                    # One index object per transition: read here, re-read below only
                    # if another process changed the file in between (read(False)).
                    index = self.repo.index
                    index.read(force=False)  # reloads only if the file changed on disk
                    self._check_worktree(snap, transition.writes, index)
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
                except (OSError, pygit2.GitError) as exc:
                    # Nothing is referenced yet: loose objects at most, which gc collects.
                    raise BadInput(
                        f"cannot write git objects: {exc}", "free some disk space and retry"
                    ) from None
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
                except (pygit2.GitError, pygit2.AlreadyExistsError, OSError):
                    # Another writer moved the tip (or holds its lock): rebuild on it.
                    self._clear_journal()
                    time.sleep(0.005)
                    continue
                fault_point("after-ref")
                self.sync_worktree(snap, transition.writes, index if check_worktree else None)
                self._clear_journal()
                return commit_id, transition
        raise LedgerError(f"could not move {branch} after {MAX_ATTEMPTS} attempts")

    # --- index and work tree ------------------------------------------------

    def _journal_path(self) -> Path:
        return self.git_dir / JOURNAL

    def _write_journal(
        self, branch: str, old: str | None, new: str, writes: dict[str, bytes | None]
    ) -> None:
        data = {"branch": branch, "old": old, "new": new, "paths": sorted(writes)}
        tmp = self._journal_path().with_suffix(".tmp")
        tmp.write_text(json.dumps(data, sort_keys=True))
        os.replace(tmp, self._journal_path())

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
        ref = self.repo.references.get(str(branch))
        if ref is not None and str(ref.target) == new and isinstance(paths, list):
            commit = _get(self.repo, str(new), pygit2.Commit)
            snap = Snapshot(self.repo, str(new), commit.tree)
            writes = {str(p): snap.read(str(p)) for p in paths}
            self.sync_worktree(None, writes)
            self._clear_journal()
            return (
                f"completed the interrupted transition {str(new)[:10]} in the index and work tree"
            )
        self._clear_journal()
        return "dropped an interrupted transition whose commit never reached the branch"

    def sync_worktree(
        self,
        old: Snapshot | None,
        writes: dict[str, bytes | None],
        index: pygit2.Index | None = None,
    ) -> None:
        """Make index and work tree match ``writes`` for exactly those paths."""
        if self.workdir is None:
            return
        fault_point("during-index")
        for attempt in range(40):
            try:
                if index is None or attempt > 0:
                    index = self.repo.index
                    index.read(force=True)
                else:
                    index.read(force=False)  # cheap unless the file changed since the check
                for path, data in writes.items():
                    if data is None:
                        if path in index:
                            index.remove(path)
                    else:
                        oid = self.repo.create_blob(data)
                        index.add(pygit2.IndexEntry(path, oid, pygit2.enums.FileMode.BLOB))
                index.write()
                break
            except (pygit2.GitError, OSError):
                if attempt == 39:
                    raise Refused(
                        "committed, but the index is locked by another git process",
                        "run 'git ledger doctor --fix' once it is done",
                    ) from None
                time.sleep(0.05)
        for path, data in writes.items():
            full = self.workdir / path
            if data is None:
                with contextlib.suppress(FileNotFoundError):
                    full.unlink()
                continue
            write_atomic(full, data)


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
    """Write via a temporary file and rename, so a crash never leaves half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise BadInput(f"cannot write {path}: {exc.strerror}", "free some disk space") from None


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
