"""``git ledger matrix clean``: remove the cells' worktrees and branches, keeping
every cell's history under ``refs/ledger/archive/``; with ``--remote``, the cells'
branches on the remote too (their tips archived here first).

Only worktrees git has on record are removed, and none with uncommitted work
or a live run.
"""

from __future__ import annotations

from pathlib import Path

from ledger.core import gitcli, output
from ledger.core.context import Context, open_context
from ledger.core.errors import BadInput, EnvironmentFailure, Refused
from ledger.presets.versions.matrix.cells import find, registered_worktrees, worktree_path


def clean(cwd: Path, mid: str, as_json: bool, remote: bool = False) -> int:
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
    # Which remote, before anything is removed: a bad --remote writes nothing.
    where = _remote_name(ctx) if remote else None
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
    deleted: list[str] = []
    if where is not None:
        deleted = _clean_remote(ctx, where, [cell.branch for cell in matrix.cells])
    if as_json:
        data: dict[str, object] = {
            "id": mid,
            "archived": [f"refs/ledger/archive/{b}" for b in removed],
        }
        if remote:
            data["remote"] = {"name": where, "deleted": deleted}
        output.emit_json(data)
    else:
        output.say(
            f"removed {len(removed)} cell worktree(s); history kept under refs/ledger/archive/"
        )
        if remote:
            output.say(
                f"deleted {len(deleted)} cell branch(es) on {where}"
                + (f": {', '.join(deleted)}" if deleted else " (none was there)")
            )
    return 0


def _remote_name(ctx: Context) -> str:
    from ledger.core.share import default_remote

    remote = default_remote(ctx)
    if remote is None:
        raise BadInput(
            "--remote: no remote to clean (none named origin, several, or [sync] remote unset)",
            "add one (git remote add origin URL) or set [sync] remote in ledger.toml",
        )
    return remote


def _clean_remote(ctx: Context, remote: str, branches: list[str]) -> list[str]:
    """Delete the cells' branches on ``remote``, each tip archived here first (a cell
    pushed from another machine has no local branch to archive)."""
    workdir = ctx.store.require_workdir()
    listed = gitcli.run(["ls-remote", "--heads", remote], workdir, check=False, clean_env=True)
    if listed.returncode != 0:
        raise EnvironmentFailure(f"cannot list {remote}'s branches: {gitcli.reason(listed)}")
    tips = {
        ref.removeprefix("refs/heads/"): sha
        for sha, _, ref in (line.partition("\t") for line in listed.stdout.splitlines())
    }
    there = [b for b in branches if b in tips]
    if not there:
        return []
    fetched = gitcli.run(
        ["fetch", "--quiet", remote, *(f"refs/heads/{b}:refs/ledger/archive/{b}" for b in there)],
        workdir,
        check=False,
        clean_env=True,
    )
    if fetched.returncode != 0:
        raise EnvironmentFailure(f"cannot archive the cells of {remote}: {gitcli.reason(fetched)}")
    output.note(f"deleting the cell branches on {remote}: {', '.join(there)}")
    pushed = gitcli.run(
        ["push", "--quiet", "--atomic", remote, *(f":refs/heads/{b}" for b in there)],
        workdir,
        check=False,
        clean_env=True,
        timeout=120,
    )
    if pushed.returncode != 0:
        raise EnvironmentFailure(
            f"the cell branches on {remote} were not deleted: {gitcli.reason(pushed)}",
            "their tips are archived here; retry git ledger matrix clean --remote",
        )
    return there
