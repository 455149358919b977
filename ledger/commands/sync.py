"""``git ledger sync``: share the ledger through an ordinary git remote."""

from __future__ import annotations

from ledger import gitcli, output
from ledger.context import Context


def default_remote(ctx: Context) -> str | None:
    if ctx.store.workdir is None:
        return None
    configured = ctx.config.sync.remote
    names = gitcli.remotes(ctx.store.workdir)
    if configured:
        return configured if configured in names else None
    return "origin" if "origin" in names else (names[0] if len(names) == 1 else None)


def after_register(ctx: Context) -> None:
    """Push a registration at once when a remote exists (``sync_on_register``).

    A failed push never undoes the registration: it is committed locally, and
    the warning says how to share it.
    """
    if ctx.config.sync.sync_on_register is False or ctx.store.workdir is None:
        return
    remote = default_remote(ctx)
    if remote is None:
        return
    branch = ctx.store.branch().removeprefix("refs/heads/")
    proc = gitcli.run(
        ["push", "--quiet", remote, f"HEAD:refs/heads/{branch}"],
        ctx.store.workdir,
        check=False,
        clean_env=True,
        timeout=120,
    )
    if proc.returncode != 0:
        output.warn(
            f"registration committed locally but not pushed to {remote} "
            f"({proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else proc.returncode}); "
            "run 'git ledger sync' to share it"
        )
