"""``git ledger matrix new|status|conclude|clean``: several independent bets at once.

One pre-registration (``V213-matrix.md``) holds every cell's bet, files,
falsifier and gate and the shared baseline; it is committed before any cell
runs. Each cell then gets a branch (``ledger/V213.A-slug``) and a worktree
under ``.ledger/worktrees/``; inside it the ordinary verbs work on the cell id
(``V213.A``). Status reads every cell branch straight from git, compares each
cell with the shared baseline and holds it to a many-comparisons-adjusted
threshold; conclude merges exactly one winner and keeps every cell's results.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import replace
from pathlib import Path
from typing import Any

from ledger.core import gitcli, output, stats
from ledger.core.context import Context, open_context
from ledger.core.errors import BadInput, Refused
from ledger.core.markdown import fmt, signed
from ledger.core.model.config import StatsTable
from ledger.core.model.documents import Document, decode_text, parse_document, set_block
from ledger.core.model.entries import CELL_SLUG, GateStat, MatrixCell, MatrixFront
from ledger.core.model.ids import check_case_unique, check_safe, parse_version
from ledger.core.repobase import is_cell_name, results_dir, write_atomic
from ledger.core.state import LedgerState, cell_versions, load_state
from ledger.core.store import Snapshot, Transition
from ledger.core.verify import create_witness
from ledger.presets.versions import rules
from ledger.presets.versions.baseline import NO_RESULTS, compare, standing_baseline
from ledger.presets.versions.views import readme_update

WORKTREES = ".ledger/worktrees"


def _slug(text: str) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    return slug[:40] or "cell"


def worktree_path(ctx: Context, mid: str, cell: MatrixCell) -> Path:
    """Where a cell's worktree lives: always directly under .ledger/worktrees/."""
    base = ctx.store.require_workdir() / WORKTREES
    target = base / f"{mid.lower()}-{cell.name.lower()}-{cell.slug}"
    if target.parent.resolve() != base.resolve() or not CELL_SLUG.fullmatch(cell.slug):
        raise Refused(f"cell {cell.name} of {mid} names a worktree outside {WORKTREES}")
    return target


def registered_worktrees(ctx: Context) -> set[Path]:
    """The linked worktrees git itself has on record (``git worktree list``)."""
    out = gitcli.output(["worktree", "list", "--porcelain", "-z"], ctx.store.require_workdir())
    return {
        Path(field[len("worktree ") :]).resolve()
        for field in out.split("\0")
        if field.startswith("worktree ")
    }


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
    cwd: Path, mid: str, cells: tuple[str, ...], spec: Path | None, cites: str | None, as_json: bool
) -> int:
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
        slug = check_safe(_slug(str(item.get("slug") or item["bet"])), "cell slug")
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
    rule = _rule_text(ctx, len(parsed))

    def build(snap: Snapshot) -> Transition:
        state = ctx.state(snap)
        blockers = rules.registration_blockers(state, cites)
        if blockers:
            raise Refused.of(blockers)
        if state.version(mid) or state.matrix(mid):
            raise BadInput(f"{mid} is already registered", "pick another id")
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

    commit_id, _ = ctx.store.transact(build)
    create_witness(ctx.store, mid, commit_id)
    workdir = ctx.store.require_workdir()
    _exclude_worktrees(ctx)
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
    if remote is None or ctx.config.sync.sync_on_register is False:
        return
    refs = [f"refs/heads/{b}:refs/heads/{b}" for b in branches]
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


def _exclude_worktrees(ctx: Context) -> None:
    exclude = ctx.store.common_dir / "info" / "exclude"
    text = exclude.read_text() if exclude.exists() else ""
    if "/.ledger/" not in text.splitlines():
        write_atomic(
            exclude, text + ("" if text.endswith("\n") or not text else "\n") + "/.ledger/\n"
        )


def _find(ctx: Context, mid: str) -> tuple[LedgerState, str, MatrixFront]:
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


def comparison(
    ctx: Context, state: LedgerState, matrix: MatrixFront, remote: str | None = None
) -> dict[str, dict[str, Any]]:
    """Per cell: its evidence against the shared baseline, read from the cell's branch."""
    table: dict[str, dict[str, Any]] = {}
    for cell in matrix.cells:
        cid = f"{matrix.id}.{cell.name}"
        tip = cell_tip(ctx, cell.branch, remote)
        cell_state = load_state(ctx.store, ctx.config, ctx.store.snapshot(tip)) if tip else state
        base_id = matrix.baselines.get(cell.gate)
        base = cell_state.version(base_id) if base_id else None
        stat = compare(cell_state, cid, cell.gate, base)
        table[cell.name] = {
            "cell": cid,
            "stat": stat,
            "branch": cell.branch,
            "exists": tip is not None,
        }
    cells = adjudicate(ctx.config.stats, {n: row["stat"] for n, row in table.items()})
    for name, row in table.items():
        row.update(cells[name])
    return table


def adjudicate(st: StatsTable, cells: dict[str, GateStat]) -> dict[str, dict[str, Any]]:
    """Per cell: z = gain/SE, the adjusted k (Holm over every cell, floored by the rule and a
    single version's threshold), the adjusted threshold and whether it passes.

    The one place a matrix's winners are decided: ``matrix status``/``conclude`` and the
    calibration in bench/calibration.py both call it.
    """
    zs: dict[str, float] = {}
    for name, stat in cells.items():
        if stat.se and stat.delta is not None:
            sign = 1.0 if stat.direction == "higher" else -1.0
            zs[name] = stat.delta * sign / stat.se
    adjusted = stats.adjusted_passes(
        zs,
        st.alpha,
        st.matrix_sigma,
        sigma_k=st.sigma_k,
        small_n=st.small_n,
        dfs={name: cells[name].df for name in zs},
        m=len(cells),
    )
    out: dict[str, dict[str, Any]] = {}
    for name, stat in cells.items():
        k, passed = adjusted.get(name, (None, False))
        out[name] = {
            "k": k,
            "adjusted_threshold": k * stat.se if k is not None and stat.se else None,
            "z": zs.get(name),
            "pass": passed,
        }
    return out


def _table_md(mid: str, table: dict[str, dict[str, Any]], m: int, rule: str) -> str:
    lines = [
        f"Adjusted threshold for {m} cells: {rule}.",
        "",
        "| cell | gate | n | mean | baseline | Δ | SE | z | k | adjusted threshold | pass |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in table.values():
        s: GateStat = row["stat"]
        lines.append(
            f"| {row['cell']} | {s.gate} | {s.n} | {fmt(s.mean)} | {s.baseline_version or '—'} "
            f"| {signed(s.delta)} | {fmt(s.se)} | {fmt(row['z'])} | {fmt(row['k'])} "
            f"| {fmt(row['adjusted_threshold'])} | {'yes' if row['pass'] else 'no'} |"
        )
    return "\n".join(lines) + "\n"


def _rule_text(ctx: Context, m: int) -> str:
    st = ctx.config.stats
    k = max(stats.rule_sigma(m, st.matrix_sigma) or 0.0, st.sigma_k)
    return (
        f"Holm step-down over {m} cells at α={st.alpha:g} (Student-t at the cells' df when n "
        f"is small), floored at {k:g}σ: never below the documented rule (2.5σ for 3 cells, "
        f"3σ for 5 and beyond) nor a single version's {st.sigma_k:g}σ"
    )


def _fetch_cells(ctx: Context, matrix: MatrixFront) -> str:
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


def join(cwd: Path, mid: str, cell_name: str, as_json: bool) -> int:
    """Create a cell's worktree on this machine from the remote's cell branch."""
    ctx = open_context(cwd)
    _, _, matrix = _find(ctx, mid)
    cell = matrix.cell(cell_name)
    if cell is None:
        raise BadInput(f"matrix {mid} has no cell {cell_name!r}")
    remote = _fetch_cells(ctx, matrix)
    target = worktree_path(ctx, mid, cell)
    if target.exists():
        raise Refused(f"{target} already exists", "work in it, or git ledger matrix clean first")
    workdir = ctx.store.require_workdir()
    _exclude_worktrees(ctx)
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


def status(cwd: Path, mid: str, fetch: bool, as_json: bool) -> int:
    ctx = open_context(cwd)
    state, _, matrix = _find(ctx, mid)
    remote = _fetch_cells(ctx, matrix) if fetch else None
    table = comparison(ctx, state, matrix, remote)
    rule = _rule_text(ctx, len(matrix.cells))
    if as_json:
        output.emit_json(
            {
                "id": mid,
                "concluded": matrix.concluded,
                "winner": matrix.winner,
                "rule": rule,
                "cells": [
                    {
                        "cell": r["cell"],
                        "branch": r["branch"],
                        "z": r["z"],
                        "k": r["k"],
                        "adjusted_threshold": r["adjusted_threshold"],
                        "pass": r["pass"],
                        **r["stat"].model_dump(mode="json"),
                    }
                    for r in table.values()
                ],
            }
        )
        return 0
    output.say(f"matrix {mid}: {rule}")
    output.table(
        "",
        ("cell", "gate", "n", "mean", "Δ", "SE", "z", "k", "threshold", "pass"),
        [
            (
                r["cell"],
                r["stat"].gate,
                r["stat"].n,
                fmt(r["stat"].mean),
                signed(r["stat"].delta),
                fmt(r["stat"].se),
                fmt(r["z"]),
                fmt(r["k"]),
                fmt(r["adjusted_threshold"]),
                "yes" if r["pass"] else "no",
            )
            for r in table.values()
        ],
    )
    return 0


def conclude(
    cwd: Path, mid: str, winner: str | None, none: bool, override: str | None, as_json: bool
) -> int:
    ctx = open_context(cwd)
    state, path, matrix = _find(ctx, mid)
    if matrix.concluded:
        raise Refused(
            f"matrix {mid} is already concluded (winner: {matrix.winner or 'none'})",
            "a matrix has at most one winner",
        )
    if (winner is None) == (not none):
        raise BadInput("give exactly one of --winner CELL or --none")
    table = comparison(ctx, state, matrix)
    if winner is not None:
        if matrix.cell(winner) is None:
            raise BadInput(
                f"matrix {mid} has no cell {winner!r}",
                f"cells: {', '.join(c.name for c in matrix.cells)}",
            )
        if not table[winner]["pass"] and override is None:
            raise Refused(
                f"[verdict-contradicted] cell {winner} does not pass the adjusted threshold "
                f"({_rule_text(ctx, len(matrix.cells))})",
                "pick a passing cell, --none, or --override REASON (recorded forever)",
            )
    workdir = ctx.store.require_workdir()
    win_cell = matrix.cell(winner) if winner else None
    if win_cell is not None:
        proc = gitcli.run(
            [
                "merge",
                "--no-ff",
                "-m",
                f"feat(matrix): {mid} — merge cell {winner} ({win_cell.slug}), the winner",
                win_cell.branch,
            ],
            workdir,
            check=False,
        )
        if proc.returncode != 0:
            gitcli.run(["merge", "--abort"], workdir, check=False)
            raise Refused(
                f"cell {winner}'s branch does not merge cleanly",
                f"merge it by hand (git merge {win_cell.branch}), then conclude again",
            )
    verdicts: dict[str, str] = {}
    for name, row in table.items():
        if row["stat"].outcome == NO_RESULTS and name != winner:
            continue  # not measured: no verdict, so it feeds no trigger
        verdicts[name] = (
            "confirmed" if name == winner else ("inconclusive" if row["pass"] else "refuted")
        )

    def build(snap: Snapshot) -> Transition:
        now = ctx.state(snap)
        writes: dict[str, bytes | None] = {}
        for cell in matrix.cells:  # keep every losing cell's results on record here too
            ref = ctx.store.repo.references.get(f"refs/heads/{cell.branch}")
            if ref is None or cell.name == winner:
                continue
            cell_snap = ctx.store.snapshot(str(ref.target))
            for file, blob in cell_snap.files(results_dir(ctx.dir, f"{mid}.{cell.name}")).items():
                if snap.blob_id(file) != blob:
                    writes[file] = cell_snap.read_blob(blob)
        front = matrix.model_copy(
            update={
                "concluded": True,
                "winner": winner,
                "override": override if winner and not table[winner]["pass"] else None,
                "verdicts": verdicts,
                "comparison": {n: r["stat"] for n, r in table.items()},
            }
        )
        doc = parse_document(decode_text(snap.read(path) or b"", path), path)
        summary = _table_md(mid, table, len(matrix.cells), _rule_text(ctx, len(matrix.cells)))
        summary += (
            f"\nWinner: {winner or 'none'}"
            + (f" (**OVERRIDE**: {override})" if front.override else "")
            + "\n"
        )
        body = set_block(doc.body, "comparison", summary)
        writes[path] = doc.replace(front=front.model_dump(mode="json"), body=body).render().encode()
        matrices = [(p, front if m.id == mid else m) for p, m in now.matrices]
        versions = [v for v in now.versions if v.front.matrix != mid] + cell_versions(path, front)
        after = replace(
            now, matrices=matrices, versions=sorted(versions, key=lambda v: now.version_key(v.id))
        )
        writes.update(readme_update(snap, after))
        reason = front.override
        trailers = (("Ledger-Override", reason),) if reason else ()
        return Transition(
            kind="matrix-conclude",
            step=mid,
            subject=f"docs(ledger): {mid} matrix log entry, winner {winner or 'none'}",
            writes=writes,
            trailers=trailers,
        )

    commit_id, _ = ctx.store.transact(build)
    passing = [name for name, row in table.items() if row["pass"]]
    suggestion = _stacking(mid, passing, table)
    if as_json:
        output.emit_json(
            {
                "id": mid,
                "commit": commit_id,
                "winner": winner,
                "verdicts": verdicts,
                "passing": passing,
                "suggestion": suggestion,
            }
        )
    else:
        output.say(f"concluded matrix {mid}: winner {winner or 'none'} ({commit_id[:10]})")
        if suggestion:
            output.say(f"  {suggestion}")
    return 0


def _stacking(mid: str, passing: list[str], table: dict[str, dict[str, Any]]) -> str | None:
    """Several passing cells: one merged; the next version stacks the strongest pair or runs
    them as a 2×2 interaction matrix, never silently merging a second one."""
    if len(passing) < 2:
        return None
    ranked = sorted(passing, key=lambda n: -(table[n]["z"] or 0.0))
    a, b = ranked[0], ranked[1]
    return (
        f"{len(passing)} cells pass ({', '.join(ranked)}): only one merges. Next, stack the "
        f"strongest pair ({mid}.{a} + {mid}.{b}) as one version, or run them as a 2×2 "
        f"interaction matrix ({mid}.{a}{b}: neither, {a}, {b}, both)"
    )


def clean(cwd: Path, mid: str, as_json: bool) -> int:
    from ledger.presets.versions.runner import RunRecords, alive

    ctx = open_context(cwd)
    _, _, matrix = _find(ctx, mid)
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
