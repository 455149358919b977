"""``status`` results cached by what they are a function of: the commit, the ledger tree, the config.

The state-derived part of ``status`` is one derived cache (:mod:`ledger.core.caches`),
``.git/ledger/cache/status.json``, keyed by the program's code, the config file's
name and text, the tree id of the ledger dir and the commit. It keeps the answers
for the :data:`KEEP` most recent keys (worktrees and branches ask for a few). A warm
``status`` (or ``next`` after ``status``, as an agent asks) then costs two git calls
whatever the ledger's size, and imports neither pygit2, pydantic nor scipy.

The commit is in the key because each loop's step reads history besides the ledger
tree: a ``git revert`` restores an earlier tree but withdraws what it reverted (a
batch's topic, a version's code that a parent must still hold), and a campaign's
delivery is judged by the code commits after the head. A code commit therefore costs
one cold ``status`` (the parsed entries below it are cached by blob on their own). What
can change without a commit (runs, locks, uncommitted files, other branches) is read
fresh on every call. Derived data only: delete it any time.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ledger.core import caches

FILE = "status.json"
KEEP = 8
# The contexts (ledger.core.context.Context) whose store committed a transition in this
# process, collected while the command line runs a verb (None otherwise: the MCP server,
# a library caller). When the verb succeeds, the command line makes this cache's answer
# for the commit it wrote (ledger.cli.status.warm): the process that wrote it has
# imported and loaded what a cold reader would, and an agent asks ``next`` after each step.
moved: list[Any] | None = None


def key(name: str, text: str, tree: str, commit: str) -> str:
    """The answer's key: this code, the config file's name and text, the ledger dir's
    tree and the commit whose history the loop's step reads."""
    return caches.key("status", name, text, tree, commit)


def get(state_dir: Path, cache_key: str) -> dict[str, Any] | None:
    return caches.recall(caches.path(state_dir, FILE), caches.key(FILE), cache_key, dict)


def put(state_dir: Path, cache_key: str, value: dict[str, Any]) -> None:
    # A cache that cannot be written only costs time.
    caches.remember(caches.path(state_dir, FILE), caches.key(FILE), cache_key, value, KEEP)
