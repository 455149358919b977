"""``git ledger matrix new`` and ``matrix join``: one pre-registration for every cell,
then a branch and a worktree per cell, here or on another machine.

The registration (``V213-matrix.md``) holds every cell's bet, files, falsifier
and gate and the shared baseline; it is committed before any cell runs, and
the cell branches are pushed with it when a remote exists so that ``join``
can make a cell's worktree elsewhere.
"""

from __future__ import annotations

import tomllib
from dataclasses import replace
from pathlib import Path
from typing import Any

from ledger.core import gitcli, machine, output
from ledger.core.context import Context, open_context
from ledger.core.errors import BadInput, Refused
from ledger.core.model.documents import Document
from ledger.core.model.entries import MatrixCell, MatrixFront
from ledger.core.model.ids import check_case_unique, check_safe, parse_version
from ledger.core.repobase import is_cell_name
from ledger.core.state import cell_versions
from ledger.core.store import Snapshot, Transition
from ledger.core.verify import create_witness, reserved_ids
from ledger.presets.versions import rules
from ledger.presets.versions.baseline import standing_baseline
from ledger.presets.versions.matrix.adjudication import rule_text
from ledger.presets.versions.matrix.cells import (
    exclude_worktrees,
    fetch_cells,
    find,
    slug_of,
    worktree_path,
)
from ledger.presets.versions.register import never_reused, taken_names
from ledger.presets.versions.views import readme_update


def _read_spec(spec: Path | None, cells: tuple[str, ...]) -> dict[str, dict[str, Any]]:
    data: dict[str, Any] = {}
    if spec is not None:
        if not spec.is_file():
            raise BadInput(f"no such spec file: {spec}")
        try:
            data = tomllib.loads(spec.read_text())
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise BadInput(f"{spec}: not valid TOML: {exc}") from None
    table = data.get("cells", {})
    if not isinstance(table, dict):
        raise BadInput(f"{spec}: [cells] must be a table of cells")
    found: dict[str, dict[str, Any]] = {
        str(k): dict(v) for k, v in table.items() if isinstance(v, dict)
    }
    for item in cells:
        name, _, slug = item.partition(":")
        found.setdefault(name, {})
        if slug:
            found[name]["slug"] = slug
    if len(found) < 2:
        raise BadInput(
            "a matrix needs at least two cells", "--cell A:slug --cell B:slug --spec cells.toml"
        )
    return found


def new(
    cwd: Path,
    mid: str,
    cells: tuple[str, ...],
    spec: Path | None,
    cites: str | None,
    as_json: bool,
    requires: tuple[str, ...] = (),
) -> int:
    """``matrix new``: every cell registered in one commit, then a branch and a worktree
    each. ``requires``: the machine preconditions the verb declares (as register's)."""
    ctx = open_context(cwd)
    ctx.require_committed_config()
    prefix = ctx.config.ledger.id_prefix
    vid = parse_version(mid, prefix)
    if vid.cell:
        raise BadInput(f"{mid} is a cell id; name the matrix, e.g. {vid.base}")
    raw = _read_spec(spec, cells)
    # Cell names become branch and worktree names; checked first so that the
    # message names both cells, the later one as the offender.
    for i, name in enumerate(raw):
        check_case_unique(name, list(raw)[:i], "cell name")
    parsed: list[MatrixCell] = []
    for name, item in sorted(raw.items()):
        if not is_cell_name(name):
            raise BadInput(f"cell name {name!r} must start with a capital letter, e.g. A")
        missing = [k for k in ("bet", "gate", "falsifier") if not item.get(k)]
        if missing:
            raise BadInput(
                f"cell {name}: missing {', '.join(missing)}", "give them in the --spec file"
            )
        ctx.config.gate(str(item["gate"]))
        slug = check_safe(slug_of(str(item.get("slug") or item["bet"])), "cell slug")
        files = item.get("files", [])
        if not isinstance(files, list):
            raise BadInput(f"cell {name}: files must be a list")
        parsed.append(
            MatrixCell(
                name=name,
                slug=slug,
                bet=str(item["bet"]).strip(),
                gate=str(item["gate"]),
                files=[str(f) for f in files],
                falsifier=str(item["falsifier"]).strip(),
                branch=f"ledger/{mid}.{name}-{slug}",
                subsystem=str(item["subsystem"]).strip() if item.get("subsystem") else None,
            )
        )

    for i, one in enumerate(parsed):
        for other in parsed[i + 1 :]:
            shared = sorted(set(one.files) & set(other.files))
            if shared:
                output.warn(
                    f"cells {one.name} and {other.name} both touch {', '.join(shared)}: their "
                    "effects are not independent (matrix cells should have disjoint files)"
                )
    machine.require(requires, ctx.store, ctx.dir, ctx.config.ledger.preset)
    rule = rule_text(ctx, len(parsed))
    reserved = reserved_ids(ctx.store, ctx.config, ctx.config_file)

    def build(snap: Snapshot) -> Transition:
        state = ctx.state(snap)
        blockers = rules.registration_blockers(state, cites)
        if blockers:
            raise Refused.of(blockers)
        if state.version(mid) or state.matrix(mid):
            raise BadInput(f"{mid} is already registered", "pick another id")
        withdrawn = never_reused(mid, reserved, taken_names(state))
        if withdrawn is not None:
            raise Refused(withdrawn.message, "take the id git ledger next proposes")
        baselines = {}
        for cell in parsed:
            best = standing_baseline(state, cell.gate)
            if best is not None:
                baselines[cell.gate] = best.id
        front = MatrixFront(id=mid, baselines=baselines, cells=parsed, cites=cites)
        path = f"{ctx.dir}/{mid}-matrix.md"
        body = [
            f"# {mid} — matrix of {len(parsed)} cells",
            "",
            "One pre-registration for every cell; each runs in its own worktree.",
            "",
        ]
        for cell in parsed:
            body += [
                f"## Cell {cell.name}: {cell.slug}",
                "",
                f"- Bet: {cell.bet}",
                f"- Gate: `{cell.gate}` (baseline {baselines.get(cell.gate, 'none yet')})",
                f"- Falsifier: {cell.falsifier}",
                f"- Files: {', '.join(cell.files) or '—'}",
                f"- Branch: `{cell.branch}`",
                "",
            ]
        body += [
            "## Adjusted threshold",
            "",
            f"A cell wins only beyond the threshold for {len(parsed)} cells: {rule}.",
            "",
            "## Comparison",
            "",
            "<!-- ledger:begin comparison -->",
            "_Open: `git ledger matrix status " + mid + "`._",
            "<!-- ledger:end comparison -->",
            "",
        ]
        text = Document(front=front.model_dump(mode="json"), body="\n".join(body)).render()
        writes: dict[str, bytes | None] = {path: text.encode()}
        after = replace(
            state,
            matrices=[*state.matrices, (path, front)],
            versions=sorted(
                [*state.versions, *cell_versions(path, front)],
                key=lambda v: state.version_key(v.id),
            ),
        )
        writes.update(readme_update(snap, after))
        return Transition(
            kind="matrix-register",
            step=mid,
            subject=f"docs(ledger): {mid} — register a matrix of {len(parsed)} cells",
            body="\n".join(f"{c.name}: {c.bet}" for c in parsed),
            writes=writes,
        )

    for cell in parsed:
        worktree_path(ctx, mid, cell)  # refused (a symlinked .ledger) before anything is written
    commit_id, _ = ctx.store.transact(build)
    create_witness(ctx.store, mid, commit_id)
    workdir = ctx.store.require_workdir()
    exclude_worktrees(ctx)
    made = []
    for cell in parsed:
        target = worktree_path(ctx, mid, cell)
        gitcli.run(["worktree", "add", "-q", "-b", cell.branch, str(target), commit_id], workdir)
        made.append({"cell": f"{mid}.{cell.name}", "branch": cell.branch, "worktree": str(target)})
    _publish(ctx, [cell.branch for cell in parsed])
    if as_json:
        output.emit_json({"id": mid, "commit": commit_id, "cells": made})
    else:
        output.say(f"registered matrix {mid} ({commit_id[:10]}); one worktree per cell:")
        for item in made:
            output.say(f"  {item['cell']}: {item['worktree']} (branch {item['branch']})")
    return 0


def _publish(ctx: Context, branches: list[str]) -> None:
    """Push the registration and the cell branches at once when a remote exists."""
    from ledger.core.share import after_register, default_remote

    after_register(ctx)
    remote = default_remote(ctx)
    if remote is None or not ctx.config.sync.pushes_on_register:
        return
    refs = [f"refs/heads/{b}:refs/heads/{b}" for b in branches]
    output.note(f"pushing the cell branches to {remote}: {', '.join(branches)}")
    proc = gitcli.run(
        ["push", "--quiet", remote, *refs],
        ctx.store.require_workdir(),
        check=False,
        clean_env=True,
        timeout=120,
    )
    if proc.returncode != 0:
        output.warn(
            f"cell branches not pushed to {remote}; cells cannot be joined elsewhere until they are"
        )


def join(cwd: Path, mid: str, cell_name: str, as_json: bool) -> int:
    """Create a cell's worktree on this machine from the remote's cell branch."""
    ctx = open_context(cwd)
    _, _, matrix = find(ctx, mid)
    cell = matrix.cell(cell_name)
    if cell is None:
        raise BadInput(f"matrix {mid} has no cell {cell_name!r}")
    remote = fetch_cells(ctx, matrix)
    target = worktree_path(ctx, mid, cell)
    if target.exists():
        raise Refused(f"{target} already exists", "work in it, or git ledger matrix clean first")
    workdir = ctx.store.require_workdir()
    exclude_worktrees(ctx)
    tracking = f"refs/remotes/{remote}/{cell.branch}"
    if ctx.store.repo.references.get(f"refs/heads/{cell.branch}") is not None:
        gitcli.run(["worktree", "add", "-q", str(target), cell.branch], workdir)
    elif ctx.store.repo.references.get(tracking) is not None:
        gitcli.run(
            [
                "worktree",
                "add",
                "-q",
                "--track",
                "-b",
                cell.branch,
                str(target),
                f"{remote}/{cell.branch}",
            ],
            workdir,
        )
    else:
        raise BadInput(
            f"the remote has no branch {cell.branch}", "push it from the machine that made it"
        )
    if as_json:
        output.emit_json(
            {"cell": f"{mid}.{cell.name}", "worktree": str(target), "branch": cell.branch}
        )
    else:
        output.say(f"joined {mid}.{cell.name}: {target} (branch {cell.branch})")
    return 0
