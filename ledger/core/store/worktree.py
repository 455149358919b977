"""The index and work tree after a transition, and the journal that survives a crash.

After the ref moves, the index and work tree are brought up to date for exactly
the paths the transition wrote, so ``git status`` does not show the transition
reversed and every other staged or unstaged change stays as it was. A journal
(``<gitdir>/ledger-pending.json``) written just before the ref moves lets
``doctor`` finish that step if the process dies in between: the ref is always
either old or new, never half. A failure in that step is exit 4, "committed as
<sha>; the work tree is behind", with git's reason: the journal stays for
``doctor --fix`` (or the next transition) to finish.

Before anything is committed, the paths a transition writes are checked here:
nothing the user has not committed there may be overwritten.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import time
from pathlib import Path, PurePosixPath

import pygit2

from ledger.core import gitcli, repobase
from ledger.core.errors import (
    BadInput,
    Refused,
    WorktreeBehind,
    environment_error,
    errno_hint,
    errno_in,
)
from ledger.core.store.faults import fault_point
from ledger.core.store.objects import Snapshot, get_object
from ledger.core.store.repository import Repository

JOURNAL = "ledger-pending.json"
# How long a transition waits for another git process's index.lock before it gives up
# (exit 4, the journal left for doctor --fix): a git command holds it for a moment.
INDEX_WAIT = 11.0


class Worktree(Repository):
    """The checkout next to the repository: what it holds, and bringing it up to date."""

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
        return get_object(self.repo, blob_id, pygit2.Blob).data

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
        tip = str(ref.target) if ref is not None else None
        if tip is None or not isinstance(paths, list) or not self._reached(tip, str(new)):
            self._clear_journal()
            return "dropped an interrupted transition whose commit never reached the branch"
        if self.repo.head_is_detached or self.repo.head.name != branch:
            # Another branch is checked out since: its index and work tree are its own.
            # The commit stands on its branch, whose checkout brings it whole.
            self._clear_journal()
            return (
                f"left the interrupted transition {str(new)[:10]} to its branch "
                f"{str(branch).removeprefix('refs/heads/')}, "
                "which is not checked out here: its checkout brings the commit"
            )
        # Up to the tip, not only to the transition's commit: commits made on top since
        # (a plain git commit before doctor) are in the index already, as git leaves
        # them; the paths still at ``old`` are brought up, a path a later commit wrote
        # stays as that commit left it.
        written = [str(p) for p in paths]
        if tip != new:
            since, now = self.snapshot(str(new)), self.snapshot(tip)
            written = [p for p in written if since.blob_id(p) == now.blob_id(p)]
        already = self._set_aside_partial(old, tip, written)
        self.sync_worktree(old, tip, already)
        self._clear_journal()
        later = "" if tip == new else f" (under the commits made since, up to {tip[:10]})"
        return (
            f"completed the interrupted transition {str(new)[:10]} in the index and work "
            f"tree{later}"
        )

    def _reached(self, tip: str, new: str) -> bool:
        """Whether the commit ``new`` is on the branch at ``tip``: the tip itself, or under
        a commit made since (a plain ``git commit`` before ``doctor --fix``)."""
        if tip == new:
            return True
        try:
            return bool(self.repo.descendant_of(tip, new))
        except (KeyError, ValueError, pygit2.GitError):
            return False

    def _set_aside_partial(self, old: str | None, new: str, paths: list[str]) -> list[str]:
        """Move aside what an interrupted write left at ``paths`` (neither old nor new).

        git writes a work-tree file in place, so a crash or a full disk can leave
        part of one; git would then refuse to update it. Nothing is deleted: it
        goes to ``.git/ledger/recovered/``. Returns the files that already hold what
        ``new`` has but are not staged so (written whole before the kill): git would
        not overwrite them, and their content is safe in ``new`` (``sync_worktree``'s
        ``already``, as a transition that was not interrupted finds them).
        """
        workdir = self.require_workdir()
        before = (
            Snapshot(self.repo, old, get_object(self.repo, old, pygit2.Commit).tree)
            if old
            else None
        )
        after = self.snapshot(new)
        staged = gitcli.index_entries(workdir, paths)
        already = []
        for path in paths:
            expected = (before.blob_id(path) if before else None, after.blob_id(path))
            if not (workdir / path).is_file():
                continue
            on_disk = self.worktree_blob(path, expected)
            if on_disk not in expected:
                target = self.ledger_state_dir / "recovered" / path
                target.parent.mkdir(parents=True, exist_ok=True)
                os.replace(workdir / path, target)
            elif on_disk == expected[1] and on_disk != expected[0]:
                blob, skip = staged.get(path, (None, False))
                if blob != on_disk and not skip:
                    already.append(path)
        return already

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
        deadline = time.monotonic() + INDEX_WAIT
        while True:
            proc = gitcli.read_tree_update(self.workdir, old, new)
            if proc.returncode == 0:
                return
            if "not uptodate" in proc.stderr and not refreshed:
                # Stat data that no longer matches (a copied or touched tree): read-tree
                # does not refresh it as checkout does. The content was checked above.
                gitcli.run(["update-index", "-q", "--refresh"], self.workdir, check=False)
                refreshed = True
                continue
            if not gitcli.index_busy(proc.stderr) or time.monotonic() >= deadline:
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
