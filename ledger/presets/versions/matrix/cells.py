"""What every matrix verb shares about its cells: where their worktrees live, which
branch tip holds their evidence, and finding the matrix itself.

A cell's worktree sits directly under ``.ledger/worktrees/`` (a name from a
committed file must never point elsewhere); its evidence is the newest of the
local cell branch, its remote-tracking copy and, once cleaned, its archive ref.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from ledger.core import gitcli, output
from ledger.core.context import Context, open_context
from ledger.core.errors import BadInput, Refused
from ledger.core.model.entries import CELL_SLUG, MatrixCell, MatrixFront
from ledger.core.model.ids import parse_version
from ledger.core.repobase import base_id, cell_of, write_atomic
from ledger.core.state import LedgerState

WORKTREES = ".ledger/worktrees"


def slug_of(text: str) -> str:
    """A cell's slug from its bet: lowercase words joined by dashes, at most 40 characters."""
    slug = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    return slug[:40] or "cell"


def worktree_path(ctx: Context, mid: str, cell: MatrixCell) -> Path:
    """Where a cell's worktree lives: always directly under .ledger/worktrees/."""
    workdir = ctx.store.require_workdir()
    base = workdir / WORKTREES
    # A committed symlink (.ledger, .ledger/worktrees, the ledger directory) would carry
    # every worktree, and what git writes into it, outside the repository.
    for part in (workdir / ".ledger", base, workdir / ctx.dir):
        if part.is_symlink():
            raise BadInput(
                f"{part.relative_to(workdir)} is a symlink: worktrees stay inside the repository",
                f"remove it (git rm {part.relative_to(workdir)}) and run the verb again",
            )
    if not base.resolve().is_relative_to(workdir.resolve()):
        raise BadInput(
            f"{WORKTREES} resolves outside the repository", "remove the symlink above it"
        )
    target = base / _tree_name(mid, cell)
    if target.parent.resolve() != base.resolve() or not CELL_SLUG.fullmatch(cell.slug):
        raise Refused(f"cell {cell.name} of {mid} names a worktree outside {WORKTREES}")
    return target


def home(cwd: Path, vid: str) -> Path:
    """Where a step of ``vid`` acts: a cell of a matrix still open is measured on its own
    branch, so ``run`` and ``record`` of a cell go to the cell's worktree from anywhere
    in the repository (as ``git -C`` would): the main worktree, another cell's, or the
    MCP server's. A cell whose worktree is not on this machine is refused with the
    command that brings it; any other id acts where it was asked.
    """
    cell_name = cell_of(vid)
    if not cell_name:
        return cwd
    ctx = open_context(cwd)
    mid = base_id(vid)
    found = ctx.state().matrix(mid)
    cell = None if found is None else next((c for c in found[1].cells if c.name == cell_name), None)
    if found is None or found[1].concluded or cell is None or not CELL_SLUG.fullmatch(cell.slug):
        return cwd
    tree = (ctx.store.common_dir.parent / WORKTREES / _tree_name(mid, cell)).resolve()
    if ctx.store.require_workdir().resolve() == tree:
        return cwd
    if tree not in registered_worktrees(ctx):
        raise Refused(
            f"{vid} is cell {cell_name} of matrix {mid}; its worktree is not on this machine",
            f"git ledger matrix join {mid} {cell_name}",
        )
    output.note(f"{vid} is measured in its worktree {os.path.relpath(tree, cwd.resolve())}")
    return tree


def _tree_name(mid: str, cell: MatrixCell) -> str:
    return f"{mid.lower()}-{cell.name.lower()}-{cell.slug}"


def registered_worktrees(ctx: Context) -> set[Path]:
    """The linked worktrees git itself has on record (``git worktree list``)."""
    out = gitcli.output(["worktree", "list", "--porcelain", "-z"], ctx.store.require_workdir())
    return {
        Path(field[len("worktree ") :]).resolve()
        for field in out.split("\0")
        if field.startswith("worktree ")
    }


def exclude_worktrees(ctx: Context) -> None:
    """Keep ``.ledger/`` out of ``git status`` (the repository's ``info/exclude``)."""
    exclude = ctx.store.common_dir / "info" / "exclude"
    text = exclude.read_text() if exclude.exists() else ""
    if "/.ledger/" not in text.splitlines():
        write_atomic(
            exclude, text + ("" if text.endswith("\n") or not text else "\n") + "/.ledger/\n"
        )


def find(ctx: Context, mid: str) -> tuple[LedgerState, str, MatrixFront]:
    """The state, the matrix file's path and the matrix ``mid``; refused when it does not parse."""
    parse_version(mid, ctx.config.ledger.id_prefix)
    state = ctx.state()
    found = state.matrix(mid)
    if found is None:
        # A matrix file that does not parse is not "no matrix": say what is wrong with it.
        path = f"{ctx.dir}/{mid}-matrix.md"
        reason = next((why for where, why in state.problems if where == path), None)
        if reason is not None:
            raise Refused(f"{path} does not parse: {reason}", "git ledger verify; restore the file")
        raise BadInput(f"no matrix {mid!r} in {ctx.dir}/", "git ledger matrix new ...")
    return state, found[0], found[1]


def fetch_cells(ctx: Context, matrix: MatrixFront) -> str:
    """Fetch every cell branch from the remote into refs/remotes/<remote>/..."""
    from ledger.core.share import default_remote

    remote = default_remote(ctx)
    if remote is None:
        raise BadInput("no remote to fetch cells from", "git remote add origin URL")
    specs = [f"+refs/heads/{c.branch}:refs/remotes/{remote}/{c.branch}" for c in matrix.cells]
    for spec in specs:  # one by one: a cell that was never pushed must not fail the rest
        gitcli.run(
            ["fetch", "--quiet", remote, spec],
            ctx.store.require_workdir(),
            check=False,
            clean_env=True,
        )
    return remote


def cell_tip(ctx: Context, branch: str, remote: str | None) -> str | None:
    """The newest of the local cell branch and its remote-tracking copy."""
    local = ctx.store.repo.references.get(f"refs/heads/{branch}")
    tracking = ctx.store.repo.references.get(f"refs/remotes/{remote}/{branch}") if remote else None
    archived = ctx.store.repo.references.get(f"refs/ledger/archive/{branch}")
    tips = [str(r.target) for r in (local, tracking) if r is not None]
    if not tips:
        return str(archived.target) if archived is not None else None
    if len(tips) == 2 and ctx.store.is_ancestor(tips[0], tips[1]):
        return tips[1]
    return tips[0]
