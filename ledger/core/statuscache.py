"""``status`` results cached by what they are a function of: the ledger tree and its config.

The ledger's state is a pure function of the ledger dir's tree and the
configuration, so the state-derived part of ``status`` is one derived cache
(:mod:`ledger.core.caches`), ``.git/ledger/cache/status.json``, keyed by the
program's code, the config file's name and text, and the tree id of the ledger
dir. It keeps the answers for the :data:`KEEP` most recent keys (worktrees and
branches ask for a few trees). A warm ``status`` then costs two git calls
whatever the ledger's size, and imports neither pygit2, pydantic nor scipy. Entries
that change nothing in the ledger dir (code commits) keep the key; any
change to an entry or to the config makes a new one. What the loop reads from
history besides (the configuration frozen at an open version's registration, its
code commits) is fixed once those entries are committed, so it keeps the key too;
what can change without them (runs, locks, uncommitted files, other branches) is
read fresh on every call. Derived data only: delete it any time.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ledger.core import caches

FILE = "status.json"
KEEP = 8


def key(name: str, text: str, tree: str) -> str:
    """The answer's key: this code, the config file's name and text, the ledger dir's tree."""
    return caches.key("status", name, text, tree)


def get(state_dir: Path, cache_key: str) -> dict[str, Any] | None:
    return caches.recall(caches.path(state_dir, FILE), caches.key(FILE), cache_key, dict)


def put(state_dir: Path, cache_key: str, value: dict[str, Any]) -> None:
    # A cache that cannot be written only costs time.
    caches.remember(caches.path(state_dir, FILE), caches.key(FILE), cache_key, value, KEEP)
