"""The hooks' checks that need the ledger itself (imported only when there is ledger work).

Each check prints one line per finding (rule, offending paths or commits, the
command that fixes it) and returns 1 when any finding refuses.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from ledger import gitcli
from ledger.context import Context, open_context
from ledger.errors import LedgerError
from ledger.history import check_registration, frozen_part
from ledger.model.documents import decode_text, get_block, parse_document
from ledger.render.markdown import conclusion_block, gate_table
from ledger.rules import Finding, registration_blockers
from ledger.state import LedgerState, classify
from ledger.store import TRAILER_STEP, TRAILER_TRANSITION, Snapshot
from ledger.views import drift, readme_path, readme_views

ZERO = "0" * 40


def open_version_info() -> tuple[str | None, list[str]]:
    """The open version at HEAD and its planned files (for the hooks' cache)."""
    ctx = open_context(Path("."))
    state = ctx.state()
    opened = state.open_versions()
    if opened:
        return opened[0].id, list(opened[0].front.files)
    if not ctx.store.repo.head_is_detached:
        branch = ctx.store.branch().removeprefix("refs/heads/")
        for matrix in state.open_matrices():
            for cell in matrix.cells:
                if cell.branch == branch:
                    return f"{matrix.id}.{cell.name}", list(cell.files)
    return None, []


def run(check: str, staged: list[str], **kwargs: str) -> int:
    stage = check.replace("_", "-")
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
    from ledger.presets import preset_for

    preset = preset_for(ctx.config)
    for warning in preset.hook_warnings(ctx, staged):
        sys.stderr.write(f"git-ledger pre-commit warning: {warning}\n")
    return preset.hook_findings(ctx, staged)


def body_drift(snap: Snapshot, state: LedgerState) -> list[str]:
    """Generated blocks inside concluded version entries that differ from their data."""
    found = []
    for version in state.versions:
        conclusion = version.front.conclusion
        if conclusion is None:
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
    for line in stale:
        found.append(
            Finding(
                "views-drift",
                line,
                "regenerate with the git ledger verbs; do not edit generated blocks",
            )
        )
    return found


def _push_ranges(ctx: Context, remote: str, stdin: str) -> list[tuple[str, str]]:
    """(remote sha, local sha) pairs being pushed, from git's stdin or pre-commit's env."""
    pairs = []
    for line in stdin.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[1] != ZERO:
            pairs.append((parts[3], parts[1]))
    if not pairs and os.environ.get("PRE_COMMIT_TO_REF"):
        pairs.append((os.environ.get("PRE_COMMIT_FROM_REF", ZERO), os.environ["PRE_COMMIT_TO_REF"]))
    return pairs


def pre_push(ctx: Context, remote: str, stdin: str) -> list[Finding]:
    workdir = ctx.store.require_workdir()
    found: list[Finding] = []
    dirty = gitcli.output(
        ["status", "--porcelain", "--untracked-files=all", "-z", "--", ctx.dir], workdir
    )
    paths = [entry[3:] for entry in dirty.split("\0") if len(entry) > 3]
    if paths:
        found.append(
            Finding(
                "clean-workspace",
                f"uncommitted or untracked ledger files: {', '.join(paths[:5])}"
                + (" ..." if len(paths) > 5 else ""),
                "commit them, or run 'git ledger doctor --fix' to autosave them",
            )
        )
    remote_name = remote or os.environ.get("PRE_COMMIT_REMOTE_NAME", "")
    for old, new in _push_ranges(ctx, remote_name, stdin):
        if old != ZERO and ctx.store.repo.get(old) is not None:
            spec = [new, f"^{old}"]
        else:
            spec = [new, "--not", f"--remotes={remote_name}"] if remote_name else [new]
        log = gitcli.output(
            [
                "log",
                "--format=%H%x00%(trailers:key=Ledger-Step,valueonly,separator=%x2C)"
                "%x00%(trailers:key=Ledger-Transition,valueonly,separator=%x2C)%x00%s%x1e",
                *spec,
            ],
            workdir,
        )
        found += _check_pushed(ctx, new, log)
    return found


def _check_pushed(ctx: Context, tip: str, log: str) -> list[Finding]:
    found: list[Finding] = []
    code_versions: dict[str, list[str]] = {}
    for record in log.split("\x1e"):
        fields = record.strip("\n").split("\x00")
        if len(fields) < 4:
            continue
        commit, step, kind = fields[0], fields[1].strip(), fields[2].strip()
        if step and not kind:
            code_versions.setdefault(step, []).append(commit)
    if not code_versions:
        return found
    state = ctx.state(ctx.store.snapshot(tip))
    concluded_by_transition = {
        info.trailer(TRAILER_STEP)
        for info in ctx.store.walk(tip)
        if info.trailer(TRAILER_TRANSITION) == "conclude"
    }
    for vid, commits in sorted(code_versions.items()):
        try:
            check_registration(ctx.store, ctx.dir, vid, tip)
        except LedgerError as exc:
            found.append(
                Finding(
                    "code-before-registration",
                    f"{vid} ({', '.join(c[:10] for c in commits[:3])}): {exc.message}",
                    exc.hint or f"git ledger register {vid} ...",
                )
            )
            continue
        version = state.version(vid)
        later = version is not None and any(
            state.version_key(v.id) > state.version_key(vid) for v in state.versions
        )
        if (
            version is not None
            and (version.concluded or later)
            and vid not in concluded_by_transition
        ):
            found.append(
                Finding(
                    "log-entry-missing",
                    f"{vid} has code commits ({', '.join(c[:10] for c in commits[:3])}) but no "
                    "log-entry commit (Ledger-Transition: conclude)",
                    f"git ledger conclude {vid} --verdict ... --next ...",
                )
            )
    return found
