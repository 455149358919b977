"""``git ledger matrix conclude``: merge exactly one winning cell (or none) and record
every cell's comparison, keeping each losing cell's results on record.

A winner must pass the adjusted threshold (:mod:`.adjudication`) unless an
override reason is given, which is kept forever in the commit's trailer.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from ledger.core import gitcli, output
from ledger.core.context import open_context
from ledger.core.errors import BadInput, Refused
from ledger.core.model.documents import decode_text, parse_document, set_block
from ledger.core.repobase import results_dir
from ledger.core.state import cell_versions
from ledger.core.store import Snapshot, Transition
from ledger.presets.versions.baseline import NO_RESULTS
from ledger.presets.versions.matrix.adjudication import comparison, rule_text, table_md
from ledger.presets.versions.matrix.cells import find
from ledger.presets.versions.views import readme_update


def conclude(
    cwd: Path, mid: str, winner: str | None, none: bool, override: str | None, as_json: bool
) -> int:
    ctx = open_context(cwd)
    state, path, matrix = find(ctx, mid)
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
                f"({rule_text(ctx, len(matrix.cells))})",
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
        summary = table_md(mid, table, len(matrix.cells), rule_text(ctx, len(matrix.cells)))
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
