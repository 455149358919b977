"""``sync``'s clean rebase: ledger-only commits on both sides need no merge commit.

Seeds measured on several machines and shared with ``sync`` used to leave one merge
commit per round (seven for five seeds). When every commit of ours since the merge base
is a ledger transition that writes only the ledger dir, has one parent and is no
registration (no witness names it: a witness is never moved, so a registration is never
rewritten), replaying them on the remote's tip says the same thing in a line. The rebase
runs through git (the views merge driver regenerates generated views); when it stops on
anything, it is aborted and ``sync`` merges as before.
"""

from __future__ import annotations

from ledger.core import gitcli
from ledger.core.context import Context
from ledger.core.verify import WITNESS


def rebase_if_clean(ctx: Context, theirs: str, ours: str) -> bool:
    """Replay our ledger-only transitions on ``theirs``; True when that happened."""
    workdir = ctx.store.require_workdir()
    listed = gitcli.run(
        [
            "log",
            "--format=%H %P%x00%(trailers:key=Ledger-Transition,valueonly)%x00",
            f"{theirs}..{ours}",
        ],
        workdir,
        check=False,
        clean_env=True,
    )
    if listed.returncode != 0 or not listed.stdout.strip():
        return False
    fields = listed.stdout.split("\0")
    commits = []
    for head, kind in zip(fields[0::2], fields[1::2], strict=False):
        ids = head.split()
        if len(ids) != 2 or not kind.strip():  # a merge, a root, or no transition
            return False
        commits.append(ids[0])
    witnessed = set(ctx.store.refs(WITNESS).values())
    if witnessed & set(commits):
        return False
    paths = gitcli.run(
        ["diff", "--name-only", "-z", f"{theirs}...{ours}"], workdir, check=False, clean_env=True
    )
    changed = [p for p in paths.stdout.split("\0") if p]
    if paths.returncode != 0 or any(not p.startswith(f"{ctx.dir}/") for p in changed):
        return False
    done = gitcli.run(["rebase", "--quiet", theirs], workdir, check=False, clean_env=True)
    if done.returncode == 0:
        return True
    gitcli.run(["rebase", "--abort"], workdir, check=False, clean_env=True)
    return False
