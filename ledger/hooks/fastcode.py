"""A code commit in a loop that checks its code commits, answered from a pass remembered.

The campaign loop holds every code commit to its discipline (``code_checked`` in
:data:`ledger.core.loops._HOOK_FACTS`): refused while the campaign has a base but is not
armed, or while a view is out of step with its entries; warned when a path lies outside
``[campaign] scope``. For a commit that stages no ledger file and not the configuration
those checks read the ledger tree at HEAD (the index holds the same there) and the
configuration, nothing else: so once the full check passed such a commit, the next one
at the same ledger tree, with the configuration file unchanged on disk and the same
program, passes too. The full check remembers its pass here (:func:`remember`, with the
scope's globs); the fast path asks (:func:`passed`) and answers a commit whose code all
lies in scope in milliseconds, standard library only. A commit with a path outside the
scope, at a tree never passed, or with anything else staged goes to the full check,
which decides and says why. Derived data under ``.git/ledger/``: delete it any time.
"""

from __future__ import annotations

import os

from ledger import __version__
from ledger.core import caches, repobase
from ledger.core.commitrules import outside_scope
from ledger.core.repobase import git

# Not typing.TYPE_CHECKING (see ledger.hooks.fast): mypy treats the name as true.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from ledger.hooks.fast import CommitMemo

CACHE = "hook-code"
KEEP = 16  # ledger trees remembered (branches and worktrees ask for a few)


def _key(config_file: str, where: str) -> str:
    """``where``: the configuration file as the OS sees it (an edit not yet committed
    applies, as it does for the full check, which reads the work tree's file)."""
    return f"{CACHE} {__version__} {config_file} {where}"


def _file(common: str) -> str:
    return os.path.join(common, repobase.STATE_DIR, CACHE)


def ledger_tree(memo: CommitMemo, directory: str) -> str:
    """The tree id of the ledger dir at HEAD ("none": no such dir), asked once a commit."""
    verify = ("rev-parse", "-q", "--verify", f"HEAD:{directory}")
    return memo.get("tree", lambda: git(*verify, check=False).strip() or "none")


def passed(
    top: str, common: str, config_file: str, memo: CommitMemo, directory: str, code: list[str]
) -> bool:
    """Whether a commit of the code paths ``code`` alone, at the ledger tree at HEAD,
    passed the full check before and lies in scope."""
    where = repobase.stat_key(os.path.join(top, config_file))
    if where == "-":
        return False  # the committed configuration applies (sparse): not in the key
    tree = ledger_tree(memo, directory)
    for line in caches.load_lines(_file(common), _key(config_file, where)) or []:
        at, _, globs = line.partition("\t")
        if at == tree:
            return not outside_scope(code, [g for g in globs.split("\x1f") if g])
    return False


def remember(common: str, config_file: str, where: str, tree: str, scope: list[str]) -> None:
    """The full check passed a commit of code alone at ``tree`` with the configuration
    file at ``where`` (:func:`ledger.core.repobase.stat_key`); ``scope``: the globs a
    code path must match not to be warned about (none: every path is in scope)."""
    path, key = _file(common), _key(config_file, where)
    lines = [ln for ln in caches.load_lines(path, key) or [] if ln.partition("\t")[0] != tree]
    caches.save_lines(path, key, [*lines[-(KEEP - 1) :], f"{tree}\t{chr(0x1F).join(scope)}"])
