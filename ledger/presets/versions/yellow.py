"""The >N-files yellow flag, kept in the version's entry.

The commit hook prints it once, when a code commit makes a version touch more files
than ``[hooks] max_files_warning`` (see :mod:`ledger.core.commitrules`), and then it
was lost. ``conclude`` is the transition that sees every code commit of the version,
so it counts their files the way the hook does (code only: not the ledger directory,
not the configuration, not a free path) and stores the flag in the conclusion, where
status, show and the report read it (issue 26).
"""

from __future__ import annotations

from ledger.core.commitrules import is_free
from ledger.core.context import Context


def code_files(ctx: Context, commits: list[str]) -> list[str]:
    """The code files the version's code commits touched, in first-seen order."""
    prefix = ctx.config.dir.rstrip("/") + "/"
    free = ctx.config.hooks.free_paths
    seen: dict[str, None] = {}
    for commit in commits:  # oldest first (readiness.code_commits): the order touched
        parents = ctx.store.commit_info(commit).parents
        for path, _, _ in ctx.store.changes(parents[0] if parents else None, commit):
            if path.startswith(prefix) or path == ctx.config_file or is_free(path, free):
                continue
            seen.setdefault(path)
    return list(seen)


def yellow_flag(ctx: Context, vid: str, commits: list[str]) -> str | None:
    """The flag's text when the version touched more files than the limit (None: it did not)."""
    files = code_files(ctx, commits)
    limit = ctx.config.hooks.max_files_warning
    if len(files) <= limit:
        return None
    shown = ", ".join(files[:6]) + (" ..." if len(files) > 6 else "")
    return (
        f"{vid} touches {len(files)} files across its code commits (more than {limit}): "
        f"is it still one bet? ({shown})"
    )
