"""The hooks' checks that need the ledger itself (imported only when there is ledger work).

Each check prints one line per finding (rule, offending paths or commits, the
command that fixes it) and returns 1 when any finding refuses.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

from ledger.core.context import Context, open_context
from ledger.core.errors import LedgerError
from ledger.core.findings import Finding
from ledger.core.history import frozen_part
from ledger.core.markdown import conclusion_block, gate_table
from ledger.core.model.config import LedgerConfig
from ledger.core.model.documents import decode_text, get_block, parse_document
from ledger.core.state import LedgerState, classify
from ledger.core.store import TRAILER_STEP, TRAILER_TRANSITION, Snapshot, Store
from ledger.core.verify import verify
from ledger.presets.versions.rules import registration_blockers
from ledger.presets.versions.views import drift, readme_path, readme_views

ZERO = "0" * 40


def open_version_info() -> tuple[str | None, list[str], str]:
    """The open version at HEAD, its planned files and its registration commit ('' when
    not found on this branch), for the hooks' cache."""
    ctx = open_context(Path("."))
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
    from ledger.core.history import STARTS

    for info in store.walk_log(None):
        kind = info.trailer(TRAILER_TRANSITION)
        if info.trailer(TRAILER_STEP) in steps and (kind in STARTS or kind == "matrix-register"):
            return info.id
    return ""


def run(check: str, staged: list[str], **kwargs: str) -> int:
    stage = check.replace("_", "-")
    if check in ("pre_receive", "update"):
        from ledger.hooks.server import server_side

        return server_side(stage, kwargs.get("refs", ""))
    try:
        ctx = open_context(Path("."))
        if check == "pre_commit":
            findings = pre_commit(ctx, staged)
        elif check == "pre_push":
            findings = pre_push(
                ctx, kwargs.get("remote", ""), sys.stdin.read() if not sys.stdin.isatty() else ""
            )
        else:
            raise LedgerError(f"unknown hook check {check}")
    except LedgerError as exc:
        sys.stderr.write(f"git-ledger {stage} refused: {exc.one_line()}\n")
        return 1
    for finding in findings:
        sys.stderr.write(f"git-ledger {stage} refused: {finding.line()}\n")
    return 1 if findings else 0


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


def preset_findings(ctx: Context, staged: list[str]) -> list[Finding]:
    """The preset's own hook checks (its views, frozen files, transition-only entries)."""
    from ledger.core.loops import preset_for

    preset = preset_for(ctx.config)
    for warning in preset.hook_warnings(ctx, staged):
        sys.stderr.write(f"git-ledger pre-commit warning: {warning}\n")
    return preset.hook_findings(ctx, staged)


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


MATRIX_KINDS = ("matrix-register", "matrix-conclude")
BLOCK_NAME = re.compile(r"<!-- ledger:begin (\S+) -->")


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


def pre_commit(ctx: Context, staged: list[str]) -> list[Finding]:
    base = ctx.dir
    prefix = ctx.config.ledger.id_prefix
    ledger_paths = [p for p in staged if p.startswith(base + "/")]
    code_paths = [p for p in staged if not p.startswith(base + "/")]
    found: list[Finding] = preset_findings(ctx, staged)
    if not ledger_paths:
        return found
    if code_paths:
        found.append(
            Finding(
                "two-commit-granularity",
                f"ledger files ({', '.join(ledger_paths[:3])}) and code ({', '.join(code_paths[:3])}) "
                "in one commit",
                f"commit them separately: git restore --staged {' '.join(code_paths[:3])}",
            )
        )
    index = ctx.store.index_snapshot()
    head = ctx.store.snapshot()
    after = ctx.state(index)
    before = ctx.state(head)
    for path, error in after.problems:
        if path in ledger_paths:
            found.append(
                Finding("entry-schema", f"{path}: {error}", f"fix {path}, then git add it")
            )
    versions = {v for p in ledger_paths if (v := version_of(p[len(base) + 1 :], prefix))}
    if len(versions) > 1:
        found.append(
            Finding(
                "one-version-per-commit",
                f"entry files of {', '.join(sorted(versions))} in one commit",
                "commit each version's files separately",
            )
        )
    for path in ledger_paths:
        rel = path[len(base) + 1 :]
        if classify(rel, prefix) != "version":
            continue
        old, new = head.read(path), index.read(path)
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
            continue  # reported as entry-schema above
        if changed:
            found.append(
                Finding(
                    "frozen-registration",
                    f"{path}: the registered part (front matter and Hypothesis) is frozen",
                    f"git restore --staged --worktree {path}; register a new version instead",
                )
            )
    new_ids = {v.id for v in after.versions} - {v.id for v in before.versions}
    for vid in sorted(new_ids):
        version = after.version(vid)
        cites = version.front.cites if version else None
        for blocker in registration_blockers(before, cites):
            found.append(
                Finding(blocker.rule, f"cannot register {vid}: {blocker.message}", blocker.fix)
            )
    readme = index.read(readme_path(after))
    text = decode_text(readme, readme_path(after)) if readme is not None else None
    stale = drift(text, readme_views(after), readme_path(after))
    stale += body_drift(index, after)
    stale += matrix_drift(
        ctx.store, index, head, [(path, matrix.id) for path, matrix in after.matrices]
    )
    for line in stale:
        found.append(
            Finding(
                "views-drift",
                line,
                "regenerate with the git ledger verbs; do not edit generated blocks",
            )
        )
    return found


def _push_ranges(ctx: Context, remote: str, stdin: str) -> list[tuple[str, str, str]]:
    """(remote sha, local sha, remote ref) being pushed, from git's stdin or pre-commit's env.

    Witness refs (refs/ledger/*) name registrations already checked with their branch.
    """
    pairs = []
    for line in stdin.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[1] != ZERO and not parts[0].startswith("refs/ledger/"):
            pairs.append((parts[3], parts[1], parts[2]))
    if not pairs and os.environ.get("PRE_COMMIT_TO_REF"):
        to_ref = os.environ["PRE_COMMIT_TO_REF"]
        ref = os.environ.get("PRE_COMMIT_REMOTE_BRANCH", to_ref)
        pairs.append((os.environ.get("PRE_COMMIT_FROM_REF", ZERO), to_ref, ref))
    return pairs


def pre_push(ctx: Context, remote: str, stdin: str) -> list[Finding]:
    """No uncommitted ledger files (the rule status shows as a machine problem; the
    loop's drafts are its work in progress, and a push sends commits, not the work
    tree), and ``git ledger verify`` on the commits being pushed."""
    from ledger.core.loops import preset_for
    from ledger.core.workspace import of_loop

    found: list[Finding] = []
    left = of_loop(ctx.store.require_workdir(), ctx.dir, preset_for(ctx.config))
    if left.entries:
        found.append(
            Finding(
                "clean-workspace",
                left.line(),
                "commit them, or run 'git ledger doctor --fix' to autosave them "
                "(git ledger next says which)",
            )
        )
    remote_name = remote or os.environ.get("PRE_COMMIT_REMOTE_NAME", "")
    from ledger.hooks.server import ended_in_place

    for old, new, ref in _push_ranges(ctx, remote_name, stdin):
        ended = ended_in_place(ctx.store, ref, old, new)
        if ended is not None:
            found.append(ended)
        if old != ZERO and ctx.store.has_commit(old):
            since = [old]
        else:
            since = (
                list(ctx.store.refs(f"refs/remotes/{remote_name}/").values()) if remote_name else []
            )
        found += _verified(ctx.store, ctx.config, ctx.config_file, new, since)
    return found


def _verified(
    store: Store, config: LedgerConfig, config_file: str, tip: str, since: list[str]
) -> list[Finding]:
    report = verify(store, config, config_file, tip, since)
    return [
        Finding(f.rule, f"{f.commit[:10]} {f.path}: {f.message}".replace(" : ", ": "), f.fix)
        for f in report.findings
    ]
