"""The pre-push check answered from what ``git ledger verify`` saved, standard library only.

A push is refused for three things (:func:`ledger.hooks.full.pre_push`): ledger files
left uncommitted, a push that takes a ledger's configuration away from the branch that
holds it, and findings of ``verify`` in the commits pushed. Those findings are a part
of the findings of each pushed tip's whole history (``verify`` of a range reports the
tip's own, less those of commits the remote has), and the whole-history report of a tip
is what ``git ledger verify``, ``status`` and ``next`` save
(:mod:`ledger.core.verifycache`). So a push whose every tip has a saved report with no
finding, whose tips all hold the configuration, and whose ledger dir has nothing
uncommitted is let through here, in a few milliseconds and two or three git calls,
without pygit2 or pydantic. Anything else goes to the full check, which decides.
"""

from __future__ import annotations

import os

from ledger.core import repobase, verifycache
from ledger.core.repobase import ZERO, git


def verified(common: str, values: dict[str, str], pushed: str) -> bool:
    """True when the push described by ``pushed`` (git's pre-push stdin: one
    ``<local ref> <local sha> <remote ref> <remote sha>`` line per ref) passes; False
    when only the full check may say (never: it fails)."""
    tips = []
    for line in pushed.splitlines():
        parts = line.split()
        if not parts:
            continue  # git's stdin for a push with nothing to send is an empty line
        if len(parts) != 4:
            return False
        if parts[1] == ZERO or parts[0].startswith("refs/ledger/"):
            continue  # a deletion, or a witness: the full check skips them too
        tips.append(parts[1])
    if values.get("config_file") != repobase.CONFIG_FILE:
        return False  # [tool.ledger]: the full check reads it
    if not tips:
        # Nothing but witnesses or deletions, or nothing at all (git runs pre-push for
        # an up-to-date push too): only the work tree is checked, unless pre-commit's
        # environment names what is pushed.
        return not os.environ.get("PRE_COMMIT_TO_REF") and _committed_enough(values)
    state_dir = os.path.join(common, repobase.STATE_DIR)
    for tip in dict.fromkeys(tips):
        if verifycache.load(state_dir, common, tip) != []:
            return False
        # A tip without the configuration may end the ledger where it is pushed.
        held = git("rev-parse", "-q", "--verify", f"{tip}:{repobase.CONFIG_FILE}", check=False)
        if not held.strip():
            return False
    return _committed_enough(values)


def _committed_enough(values: dict[str, str]) -> bool:
    """Nothing in the ledger dir that the full check could count as uncommitted (no
    change to a tracked file, no draft, no untracked file but inside a committed
    directory only transitions write: a stray result the full check does not read), and
    ledger.toml as committed (the full check validates the work tree's)."""
    from ledger.core.loops import owned_dirs

    directory = values["dir"]
    try:
        status = git(
            *repobase.STAT_BY_SIZE_AND_MTIME,
            "--no-optional-locks",
            "status",
            "--porcelain",
            "-z",
            "--untracked-files=all",
            "--",
            directory,
            values["config_file"],  # one the full check would read differently
        )
    except RuntimeError:
        return False
    owned = owned_dirs(values.get("preset"))
    strays = set()
    for entry in status.split("\0"):
        if not entry:
            continue
        code, rel = entry[:2], entry[3:][len(directory) + 1 :]
        top, slash, _ = rel.partition("/")
        if code != "??" or not slash or top not in owned:
            return False
        strays.add(top)
    return all(
        git("rev-parse", "-q", "--verify", f"HEAD:{directory}/{top}", check=False).strip()
        for top in strays
    )
