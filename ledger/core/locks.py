"""The lock files git and a transition wait on, and which of them are stale.

``doctor`` removes the stale ones (``--fix``) or waits for the held ones
(``--wait-for-locks``); the machine problems (:mod:`ledger.core.machine`) name
each kind with the action that clears it. One classification, so that what
``next`` proposes is what ``doctor`` then does.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

from ledger.core import gitcli

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ledger.core.store import Store


WRITER_BUSY = "a git-ledger writer holds its lock"


def lock_files(store: Store) -> list[Path]:
    dirs = [store.common_dir]
    worktrees = store.common_dir / "worktrees"
    if worktrees.is_dir():
        dirs += [d for d in worktrees.iterdir() if d.is_dir()]
    found: list[Path] = []
    for base in dirs:
        for name in (
            "index.lock",
            "HEAD.lock",
            "packed-refs.lock",
            "config.lock",
            "ORIG_HEAD.lock",
        ):
            if (base / name).exists():
                found.append(base / name)
    # os.walk, not Path.rglob: git deletes a ref's lock (and may prune its empty
    # directory) at any moment, and os.walk skips what vanished while it looked.
    refs = [
        Path(root) / name
        for root, _dirs, files in os.walk(store.common_dir / "refs")
        for name in files
        if name.endswith(".lock")
    ]
    return found + sorted(refs)


def worktree_roots(store: Store) -> list[Path]:
    roots = [store.workdir] if store.workdir else []
    proc = gitcli.run(
        ["worktree", "list", "--porcelain"], store.workdir or store.common_dir, check=False
    )
    for line in proc.stdout.splitlines():
        if line.startswith("worktree "):
            roots.append(Path(line[len("worktree ") :]))
    return [r for r in roots if r is not None]


@dataclass(frozen=True)
class Lock:
    """A lock file and why doctor leaves it alone (``busy``: a process is at work;
    ``recent``: younger than the stale age, its writer may still be alive)."""

    path: Path
    age_min: float
    busy: tuple[str, ...]
    recent: str | None

    @property
    def stale(self) -> bool:
        return not self.busy and self.recent is None


def classify_locks(store: Store, stale_minutes: float) -> list[Lock]:
    """Every lock file git or a transition would wait on, classified; a lock released
    while it is looked at is simply not there (the process holding it ended)."""
    locks = lock_files(store)
    if not locks:
        return []
    from ledger.core.processes import git_processes_in

    live = git_processes_in([*worktree_roots(store), store.common_dir])
    busy = [f"git process {pid} ({line[:60]}) is working in the repository" for pid, line in live]
    busy = busy[:1]  # one is reason enough
    if not store.writer_lock_free():
        busy.append(WRITER_BUSY)
    now = time.time()
    found = []
    for lock in locks:
        try:
            age_min = (now - lock.stat().st_mtime) / 60
        except FileNotFoundError:
            continue
        recent = (
            f"only {age_min:.1f} min old (stale after {stale_minutes:g})"
            if age_min < stale_minutes
            else None
        )
        found.append(Lock(lock, age_min, tuple(busy), recent))
    return found


def wait_for_locks(store: Store, stale_minutes: float, timeout: float) -> list[Lock]:
    """Wait up to ``timeout`` seconds until no lock file is held by a process at work
    (a git process in the repository, the ledger's writer); the busy locks left."""
    deadline = time.monotonic() + timeout
    while True:
        busy = [lock for lock in classify_locks(store, stale_minutes) if lock.busy]
        if not busy or time.monotonic() > deadline:
            return busy
        time.sleep(0.2)
