"""``git ledger matrix clean``: remove the cells' worktrees and branches, keeping
every cell's history under ``refs/ledger/archive/``.

Only worktrees git has on record are removed, and none with uncommitted work
or a live run.
"""

from __future__ import annotations

from pathlib import Path

from ledger.core import gitcli, output
from ledger.core.context import open_context
from ledger.core.errors import Refused
from ledger.presets.versions.matrix.cells import find, registered_worktrees, worktree_path


def clean(cwd: Path, mid: str, as_json: bool) -> int:
    from ledger.presets.versions.runrecords import RunRecords, alive

    ctx = open_context(cwd)
    _, _, matrix = find(ctx, mid)
    workdir = ctx.store.require_workdir()
    live = [
        r
        for r in RunRecords(ctx).all()
        if str(r.get("step", "")).startswith(f"{mid}.") and alive(r)
    ]
    if live:
        raise Refused(
            f"runs of {mid} are still alive: {', '.join(str(r.get('label')) for r in live)}",
            "git ledger wait, then clean",
        )
    removed = []
    with ctx.store.writer_lock():
        for cell in matrix.cells:
            target = worktree_path(ctx, mid, cell)
            if target.exists() and target.resolve() not in registered_worktrees(ctx):
                # Not made by `matrix new`/`join`: a directory that arrived some other
                # way (a commit can carry one that git would take for a repository).
                raise Refused(
                    f"{target} is not a worktree git has on record",
                    "look at what is in it, then remove it by hand",
                )
            if target.exists():
                dirty = gitcli.output(
                    ["-c", "safe.bareRepository=explicit", "status", "--porcelain"], target
                )
                if dirty.strip():
                    raise Refused(
                        f"{target} has uncommitted work",
                        "commit or stash it in that worktree first",
                    )
                gitcli.run(["worktree", "remove", str(target)], workdir)
            ref = ctx.store.repo.references.get(f"refs/heads/{cell.branch}")
            if ref is not None:
                gitcli.run(
                    ["update-ref", f"refs/ledger/archive/{cell.branch}", str(ref.target)], workdir
                )
                gitcli.run(["branch", "-D", cell.branch], workdir)
            removed.append(cell.branch)
        gitcli.run(["worktree", "prune"], workdir)
    if as_json:
        output.emit_json({"id": mid, "archived": [f"refs/ledger/archive/{b}" for b in removed]})
    else:
        output.say(
            f"removed {len(removed)} cell worktree(s); history kept under refs/ledger/archive/"
        )
    return 0
