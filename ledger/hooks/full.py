"""The hooks' checks that need the ledger itself (imported only when there is ledger work).

Each check prints one line per finding (rule, offending paths or commits, the
command that fixes it) and returns 1 when any finding refuses.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from ledger.core import gitcli
from ledger.core.context import Context, open_context
from ledger.core.errors import LedgerError
from ledger.core.findings import Finding
from ledger.core.loops import StagedEntries, hook_facts, preset_for
from ledger.core.model.config import LedgerConfig
from ledger.core.model.documents import decode_text
from ledger.core.repobase import ZERO
from ledger.core.store import Store
from ledger.core.verify import verify
from ledger.core.verify.casetwins import staged_twins
from ledger.core.views import DRIFT_FIX, drift, readme_path
from ledger.hooks import fastcode


def open_version_info() -> tuple[str | None, list[str], str]:
    """The step code commits belong to at HEAD, for the hooks' cache
    (:meth:`ledger.core.loops.Preset.open_step`)."""
    ctx = open_context(Path("."))
    return preset_for(ctx.config).open_step(ctx)


def run(check: str, staged: list[str], **kwargs: str) -> int:
    stage = check.replace("_", "-")
    if check in ("pre_receive", "update"):
        from ledger.hooks.server import server_side

        return server_side(stage, kwargs.get("refs", ""))
    try:
        ctx = open_context(Path("."))
        if check == "pre_commit":
            before = _code_alone(ctx, staged)
            findings = pre_commit(ctx, staged)
            if before is not None and not findings and _code_alone(ctx, staged) == before:
                tree, scope, key = before
                fastcode.remember(str(ctx.store.common_dir), key, tree, scope)
        elif check == "pre_push":
            # The fast path read git's stdin already (ledger.hooks.fastpush).
            pushed = kwargs.get("pushed")
            if pushed is None:
                pushed = sys.stdin.read() if not sys.stdin.isatty() else ""
            findings = pre_push(ctx, kwargs.get("remote", ""), pushed)
        else:
            raise LedgerError(f"unknown hook check {check}")
    except LedgerError as exc:
        sys.stderr.write(f"git-ledger {stage} refused: {exc.one_line()}\n")
        return 1
    for finding in findings:
        sys.stderr.write(f"git-ledger {stage} refused: {finding.line()}\n")
    return 1 if findings else 0


def _code_alone(ctx: Context, staged: list[str]) -> tuple[str, list[str], str] | None:
    """For a commit of code alone in a loop that checks its code commits: the ledger
    tree at HEAD, the loop's scope and :func:`fastcode.config_key`, which its pass is
    remembered by; read before and after the check, so that a commit or an edit landing
    in between is remembered under neither. Else None."""
    preset = preset_for(ctx.config)
    inside = [p for p in staged if p.startswith(ctx.dir + "/") or p == ctx.config_file]
    if not staged or inside or not hook_facts(preset.name)["code_checked"]:
        return None
    key = fastcode.config_key(".", ctx.config_file)
    if key is None:
        return None
    tree = gitcli.run(["rev-parse", "-q", "--verify", f"HEAD:{ctx.dir}"], Path("."), check=False)
    return tree.stdout.strip() or "none", preset.code_scope(ctx.config), key


def preset_findings(ctx: Context, staged: list[str]) -> list[Finding]:
    """The preset's own hook checks (its views, frozen files, transition-only entries)."""
    preset = preset_for(ctx.config)
    for warning in preset.hook_warnings(ctx, staged):
        sys.stderr.write(f"git-ledger pre-commit warning: {warning}\n")
    return preset.hook_findings(ctx, staged)


def pre_commit(ctx: Context, staged: list[str]) -> list[Finding]:
    """Every loop's checks of a commit (its own first: :func:`preset_findings`), and
    of a commit of ledger files: no code alongside, entries that parse, the loop's
    checks of its entries, no generated block of the README changed by hand."""
    base = ctx.dir
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
    found += staged_twins(index, head, base, ledger_paths)
    after = ctx.state(index)
    for path, error in after.problems:
        if path in ledger_paths:
            found.append(
                Finding("entry-schema", f"{path}: {error}", f"fix {path}, then git add it")
            )
    preset = preset_for(ctx.config)
    entries = StagedEntries(ledger_paths, head, index, ctx.state(head), after)
    found += preset.entry_findings(ctx, entries)
    found += readme_drift(ctx, entries)
    return found


def readme_drift(ctx: Context, staged: StagedEntries) -> list[Finding]:
    """The README's generated blocks a hand commit changed: a staged block that is
    neither what the entries generate now nor what HEAD has. A commit that leaves the
    README alone changes none; blocks a configuration transition left stale (it changes
    ledger.toml alone) are the next transition's to regenerate."""
    where = readme_path(ctx.config)
    if where not in staged.paths:
        return []
    readme, before = staged.index.read(where), staged.head.read(where)
    text = decode_text(readme, where) if readme is not None else None
    kept = decode_text(before, where) if before is not None else None
    views = preset_for(ctx.config).readme_views(staged.after)
    return [Finding("views-drift", line, DRIFT_FIX) for line in drift(text, views, where, kept)]


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
