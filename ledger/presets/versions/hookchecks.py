"""The versions loop's pre-commit checks on a commit of ledger files.

One version per commit, the registered part of a version frozen, a registration
only where the loop allows one, and the blocks generated inside version and
matrix files in step with their data. Every loop's checks (entries parse, no
code alongside, the README's blocks) are :mod:`ledger.hooks.full`'s.
"""

from __future__ import annotations

import re

from ledger.core.errors import LedgerError
from ledger.core.findings import Finding
from ledger.core.history import STARTS, frozen_part
from ledger.core.loops import StagedEntries
from ledger.core.markdown import conclusion_block, gate_table
from ledger.core.model.documents import decode_text, get_block, parse_document
from ledger.core.state import LedgerState, classify
from ledger.core.store import TRAILER_STEP, TRAILER_TRANSITION, Snapshot, Store
from ledger.core.views import DRIFT_FIX
from ledger.presets.versions.rules import registration_blockers

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ledger.core.context import Context

MATRIX_KINDS = ("matrix-register", "matrix-conclude")
BLOCK_NAME = re.compile(r"<!-- ledger:begin (\S+) -->")


def findings(ctx: Context, staged: StagedEntries) -> list[Finding]:
    base = ctx.dir
    prefix = ctx.config.ledger.id_prefix
    found: list[Finding] = []
    versions = {v for p in staged.paths if (v := version_of(p[len(base) + 1 :], prefix))}
    if len(versions) > 1:
        found.append(
            Finding(
                "one-version-per-commit",
                f"entry files of {', '.join(sorted(versions))} in one commit",
                "commit each version's files separately",
            )
        )
    found += _frozen(staged, base, prefix)
    before, after = staged.before, staged.after
    for vid in sorted({v.id for v in after.versions} - {v.id for v in before.versions}):
        version = after.version(vid)
        cites = version.front.cites if version else None
        for blocker in registration_blockers(before, cites):
            found.append(
                Finding(blocker.rule, f"cannot register {vid}: {blocker.message}", blocker.fix)
            )
    stale = body_drift(staged.index, after)
    stale += matrix_drift(
        ctx.store, staged.index, staged.head, [(path, m.id) for path, m in after.matrices]
    )
    return found + [Finding("views-drift", line, DRIFT_FIX) for line in stale]


def _frozen(staged: StagedEntries, base: str, prefix: str) -> list[Finding]:
    """A registered version file is never deleted, and its registered part never edited."""
    found = []
    for path in staged.paths:
        if classify(path[len(base) + 1 :], prefix) != "version":
            continue
        old, new = staged.head.read(path), staged.index.read(path)
        if old is None:
            continue
        if new is None:
            found.append(
                Finding(
                    "frozen-registration",
                    f"{path} is registered and cannot be deleted",
                    f"git restore --staged {path}",
                )
            )
            continue
        try:
            changed = frozen_part(decode_text(old, path), path) != frozen_part(
                decode_text(new, path), path
            )
        except LedgerError:
            continue  # reported as entry-schema
        if changed:
            found.append(
                Finding(
                    "frozen-registration",
                    f"{path}: the registered part (front matter and Hypothesis) is frozen",
                    f"git restore --staged --worktree {path}; register a new version instead",
                )
            )
    return found


def version_of(rel: str, prefix: str) -> str | None:
    """Which version an entry path belongs to (None: not a version's file)."""
    parts = rel.split("/")
    kind = classify(rel, prefix)
    if kind == "version":
        return parts[0][:-3]
    if kind == "result":
        return parts[1]
    if kind == "reflection":
        return parts[0][len("REFLECTION_") : -3]
    if kind == "matrix":
        return parts[0][: -len("-matrix.md")]
    return None


def body_drift(snap: Snapshot, state: LedgerState) -> list[str]:
    """Generated blocks inside concluded version entries that differ from their data.

    A matrix's cells live in their matrix's file, which has blocks of its own
    (:func:`matrix_drift`): a cell has no 'gates' or 'conclusion' block to compare.
    """
    found = []
    for version in state.versions:
        conclusion = version.front.conclusion
        if conclusion is None or version.front.matrix:
            continue
        data = snap.read(version.path)
        if data is None:
            continue
        body = parse_document(decode_text(data, version.path), version.path).body
        if get_block(body, "gates") != gate_table(conclusion.gates):
            found.append(f"{version.path}: generated block 'gates' is out of date")
        if get_block(body, "conclusion") != conclusion_block(conclusion):
            found.append(f"{version.path}: generated block 'conclusion' is out of date")
    return found


def _blocks(data: bytes | None, path: str) -> dict[str, str | None]:
    text = decode_text(data, path) if data is not None else ""
    return {name: get_block(text, name) for name in BLOCK_NAME.findall(text)}


def matrix_drift(
    store: Store, index: Snapshot, head: Snapshot, matrices: list[tuple[str, str]]
) -> list[str]:
    """Generated blocks of the staged matrix files (``(path, matrix id)``) that differ
    from what the matrix transitions wrote, one line per file and block.

    A matrix's blocks (its comparison table) are computed from the cells' branches
    when it is concluded, so they cannot be recomputed here; they are compared with
    the file as the newest matrix transition wrote it (from HEAD, and from MERGE_HEAD
    while a merge is being committed). A file this commit does not change is what
    history has, which is ``verify``'s to judge.
    """
    found = []
    for path, mid in matrices:
        staged = index.read(path)
        if staged is None or staged == head.read(path):
            continue
        mine = _blocks(staged, path)
        written = [_blocks(data, path) for data in _transition_copies(store, path, mid)]
        if not written:
            continue  # no matrix transition wrote it on this branch: verify's to judge
        for name in sorted({n for copy in written for n in copy} | set(mine)):
            if all(copy.get(name) != mine.get(name) for copy in written):
                found.append(f"{path}: generated block '{name}' is out of date")
    return found


def _transition_copies(store: Store, path: str, mid: str) -> list[bytes]:
    """``path`` as the newest transition of matrix ``mid`` wrote it, seen from HEAD and,
    during a merge, from MERGE_HEAD."""
    tips: list[str | None] = [None]
    merging = store.git_dir / "MERGE_HEAD"
    if merging.is_file():
        tips.append(merging.read_text().split()[0])
    copies = []
    for tip in tips:
        for info in store.walk_log(tip):
            if info.trailer(TRAILER_STEP) == mid and info.trailer(TRAILER_TRANSITION) in (
                MATRIX_KINDS
            ):
                data = store.snapshot(info.id).read(path)
                if data is not None:
                    copies.append(data)
                break
    return copies


def open_step(ctx: Context) -> tuple[str | None, list[str], str]:
    """The open version at HEAD (or the matrix cell whose branch is checked out), its
    planned files and its registration commit ('' when not found on this branch)."""
    state = ctx.state()
    opened = state.open_versions()
    if opened:
        vid = opened[0].id
        return vid, list(opened[0].front.files), _registration(ctx.store, {vid})
    if not ctx.store.repo.head_is_detached:
        branch = ctx.store.branch().removeprefix("refs/heads/")
        for matrix in state.open_matrices():
            for cell in matrix.cells:
                if cell.branch == branch:
                    cid = f"{matrix.id}.{cell.name}"
                    return cid, list(cell.files), _registration(ctx.store, {cid, matrix.id})
    return None, [], ""


def _registration(store: Store, steps: set[str]) -> str:
    """The newest commit that registered one of ``steps`` (a version, or a cell's matrix),
    read lazily back from HEAD: where the version's code commits start."""
    for info in store.walk_log(None):
        kind = info.trailer(TRAILER_TRANSITION)
        if info.trailer(TRAILER_STEP) in steps and (kind in STARTS or kind == "matrix-register"):
            return info.id
    return ""
