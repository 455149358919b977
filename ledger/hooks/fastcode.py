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

from ledger.core import caches, repobase
from ledger.core.commitrules import outside_scope
from ledger.core.repobase import git

# Not typing.TYPE_CHECKING (see ledger.hooks.fast): mypy treats the name as true.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    # A commit's memo (ledger.hooks.fast.CommitMemo.get): NAME, how to compute it.
    MemoGet = Callable[[str, Callable[[], str]], str]

CACHE = "hook-code"
KEEP = 16  # ledger trees remembered (branches and worktrees ask for a few)


def config_key(top: str, config_file: str) -> str | None:
    """What a remembered pass is a function of besides the ledger tree: this program's
    code (:func:`ledger.core.codeid.code_id`: its version, and in a checkout its
    modules as the OS sees them) and the configuration file's content, read as the full
    check reads it (the work tree's: an edit not yet committed applies). None when the
    file is not a regular file in the work tree (absent in a sparse checkout: the
    committed one applies; a link: the full check refuses it): never answered then."""
    import hashlib

    from ledger.core.codeid import code_id

    path = os.path.join(top, config_file)
    if os.path.islink(path):
        return None
    try:
        with open(path, "rb") as handle:
            content = handle.read()
    except OSError:
        return None
    return f"{CACHE} {code_id()} {config_file} {hashlib.sha256(content).hexdigest()}"


def _file(common: str) -> str:
    return os.path.join(common, repobase.STATE_DIR, CACHE)


def ledger_tree(memo: MemoGet, directory: str) -> str:
    """The tree id of the ledger dir at HEAD ("none": no such dir), asked once a commit."""
    verify = ("rev-parse", "-q", "--verify", f"HEAD:{directory}")
    return memo("tree", lambda: git(*verify, check=False).strip() or "none")


def passed(
    top: str, common: str, config_file: str, memo: MemoGet, directory: str, code: list[str]
) -> bool:
    """Whether a commit of the code paths ``code`` alone, at the ledger tree at HEAD,
    passed the full check before and lies in scope."""
    key = config_key(top, config_file)
    if key is None:
        return False
    tree = ledger_tree(memo, directory)
    for line in caches.load_lines(_file(common), key) or []:
        at, _, globs = line.partition("\t")
        if at == tree:
            count, *scope = globs.split("\x1f")
            return not outside_scope(code, scope[: int(count)])
    return False


def remember(common: str, key: str, tree: str, scope: list[str]) -> None:
    """The full check passed a commit of code alone at ``tree``, with what
    :func:`config_key` gave ``key``; ``scope``: the globs a code path must match not to
    be warned about (none: every path is in scope)."""
    if any(c in glob for glob in scope for c in "\t\n\r\x1f"):
        return  # not one line of this file: asked of the full check each time
    path = _file(common)
    lines = [ln for ln in caches.load_lines(path, key) or [] if ln.partition("\t")[0] != tree]
    entry = "\x1f".join([str(len(scope)), *scope])
    caches.save_lines(path, key, [*lines[-(KEEP - 1) :], f"{tree}\t{entry}"])
