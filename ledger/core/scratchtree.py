"""A detached worktree at one commit, for a measurement that must never run in the
user's work tree (``candidate record --run`` of the campaign loop).

Created under ``.git/ledger/<purpose>/`` with a name no other process uses (the
commit, the pid, the time), and removed on the way out even when the measurement
fails, then pruned so git forgets it. The versions loop's re-measurement
(``ledger.presets.versions.owncode.checkout``) does the same and can use this.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator
from pathlib import Path

from ledger.core import gitcli
from ledger.core.store import Store


@contextlib.contextmanager
def detached(store: Store, commit: str, purpose: str) -> Iterator[Path]:
    """A detached worktree at ``commit`` under ``.git/ledger/<purpose>/``, removed after."""
    workdir = store.require_workdir()
    base = store.ledger_state_dir / purpose
    base.mkdir(parents=True, exist_ok=True)
    tree = base / f"{commit[:12]}-{os.getpid()}-{int(time.time() * 1000)}"
    gitcli.run(["worktree", "add", "-q", "--detach", str(tree), commit], workdir)
    try:
        yield tree
    finally:
        gitcli.run(["worktree", "remove", "--force", str(tree)], workdir, check=False)
        gitcli.run(["worktree", "prune"], workdir, check=False)
