"""Writing one transition as one commit: objects in memory, then a compare-and-swap.

Why not ``git add && git commit``: a transition must never pick up what the user
staged, must not depend on (or fight) the index, and must be atomic. So, like
git-revise, the commit is built in memory from blobs and only the subtrees that
change, and the branch ref is moved last with a compare-and-swap on the tip we
built on (``Reference.set_target`` on the reference as read fails if it moved).
Writers are serialised by a sidecar ``flock`` so ledger writers never storm; a
plain ``git commit`` racing us still loses nothing: we rebuild on the new tip.
Only that is retried (the ref moved, or another git process holds its lock);
any other failure is reported at once with its cause: the environment's with
the errno's hint (exit 5, nothing committed), a bug otherwise. The index and
work tree follow (:mod:`ledger.core.store.worktree`).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import time
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path

import pygit2

from ledger.core import repobase
from ledger.core.errors import (
    BadInput,
    LedgerError,
    Refused,
    WorktreeBehind,
    environment_error,
)
from ledger.core.store.faults import fault_point
from ledger.core.store.objects import Snapshot, get_object, git_error
from ledger.core.store.transition import Transition, check_case, check_entry_path, check_identity
from ledger.core.store.worktree import Worktree

MAX_ATTEMPTS = 50


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


def write_atomic(path: Path, data: bytes) -> None:
    """:func:`ledger.core.repobase.write_atomic`, with a failure said as a one-line error."""
    try:
        repobase.write_atomic(path, data)
    except OSError as exc:
        raise environment_error(exc, f"cannot write {path}") from None


class Writer(Worktree):
    """The branch to extend: identity, the writer lock, trees built in memory, the CAS."""

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
            if len(get_object(self.repo, sub_id, pygit2.Tree)) == 0:
                if base is not None and name in base:
                    builder.remove(name)
            else:
                builder.insert(name, pygit2.Oid(hex=sub_id), pygit2.enums.FileMode.TREE)
        return str(builder.write())

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
                    raise git_error("cannot write git objects", exc) from None
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
                for hook in self.on_commit:
                    hook(transition)
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
        raise git_error(f"cannot move {branch}", exc) from None
