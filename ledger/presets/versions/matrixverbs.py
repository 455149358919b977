"""``git ledger matrix``: several bets at once, a versions-loop verb group.

Part of the versions loop's verbs (:mod:`ledger.presets.versions.verbs`).
"""

from __future__ import annotations

from pathlib import Path

import click

from ledger.core.clikit import Ctx, declare, json_option, pass_ctx, requires


@click.group()
def matrix() -> None:
    """Several independent bets at once: cells as branches and worktrees, one winner."""


# It pushes the cells' branches when the ledger pushes on register.
@declare("write", loop="versions", requires=("entries-committed",), open_world=True)
@matrix.command("new")
@click.argument("matrix_id")
@click.option("--cell", "cells", multiple=True, metavar="NAME:SLUG", help="A cell (repeatable).")
@click.option(
    "--spec",
    type=click.Path(path_type=Path),
    default=None,
    help="TOML with [cells.NAME] bet, gate, files, falsifier (and slug).",
)
@click.option("--cites", default=None, help="The reflection this registration answers.")
@json_option
@pass_ctx
def matrix_new(
    obj: Ctx,
    matrix_id: str,
    cells: tuple[str, ...],
    spec: Path | None,
    cites: str | None,
    as_json: bool,
) -> int:
    """Pre-register every cell in one commit, then give each a branch and a worktree."""
    from ledger.presets.versions import matrix as command

    return command.new(obj.cwd, matrix_id, cells, spec, cites, as_json, requires())


@declare("read", loop="versions", open_world=True)  # --fetch fetches the cells
@matrix.command("status")
@click.argument("matrix_id")
@click.option("--fetch", is_flag=True, help="Fetch every cell branch from the remote first.")
@json_option
@pass_ctx
def matrix_status(obj: Ctx, matrix_id: str, fetch: bool, as_json: bool) -> int:
    """Each cell against the shared baseline, with the many-comparisons-adjusted threshold."""
    from ledger.presets.versions import matrix as command

    return command.status(obj.cwd, matrix_id, fetch, as_json)


@declare(
    "write",
    loop="versions",
    note="Adds the cell's worktree here.",
    args={"cell": "The cell's letter, e.g. A for V13.A."},
)
@matrix.command("join")
@click.argument("matrix_id")
@click.argument("cell")
@json_option
@pass_ctx
def matrix_join(obj: Ctx, matrix_id: str, cell: str, as_json: bool) -> int:
    """Create a cell's worktree here from the remote's cell branch (run it on this machine)."""
    from ledger.presets.versions import matrix as command

    return command.join(obj.cwd, matrix_id, cell, as_json)


@declare("destructive", loop="versions")
@matrix.command("conclude")
@click.argument("matrix_id")
@click.option("--winner", default=None, help="The one cell to merge.")
@click.option("--none", "none_", is_flag=True, help="No cell wins; nothing is merged.")
@click.option(
    "--override", default=None, metavar="REASON", help="Merge a winner that does not pass."
)
@json_option
@pass_ctx
def matrix_conclude(
    obj: Ctx, matrix_id: str, winner: str | None, none_: bool, override: str | None, as_json: bool
) -> int:
    """Merge exactly one winning cell (or none) and record every cell's comparison."""
    from ledger.presets.versions import matrix as command

    return command.conclude(obj.cwd, matrix_id, winner, none_, override, as_json)


@declare("destructive", loop="versions", open_world=True)  # --remote deletes remote branches
@matrix.command("clean")
@click.argument("matrix_id")
@click.option(
    "--remote",
    is_flag=True,
    help="Also delete the cells' branches on the remote (their tips archived here first).",
)
@json_option
@pass_ctx
def matrix_clean(obj: Ctx, matrix_id: str, as_json: bool, remote: bool) -> int:
    """Remove the cells' worktrees; keep their history under refs/ledger/archive/."""
    from ledger.presets.versions import matrix as command

    return command.clean(obj.cwd, matrix_id, as_json, remote)
