"""Share a registration with the remote the moment it is made (``[sync] sync_on_register``).

``register`` and ``matrix new`` push here; ``git ledger sync`` (the CLI verb)
does the full exchange and uses the same remote choice.
"""

from __future__ import annotations

from ledger.core import gitcli, output
from ledger.core.context import Context
from ledger.core.verify import REMOTE_WITNESS, WITNESS


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
    if not ctx.config.sync.pushes_on_register or ctx.store.workdir is None:
        return
    remote = default_remote(ctx)
    if remote is None:
        return
    branch = ctx.store.branch().removeprefix("refs/heads/")
    witnesses = [f"{name}:{name}" for name in ctx.store.refs(WITNESS)]
    # Never silently: a push reaches other people (ledger.toml can turn it off).
    output.note(
        f"pushing {branch} and the registration's witness to {remote} "
        "(turn off: [sync] push_on_register = false in ledger.toml)"
    )
    proc = gitcli.run(
        ["push", "--quiet", remote, f"HEAD:refs/heads/{branch}", *witnesses],
        ctx.store.workdir,
        check=False,
        clean_env=True,
        timeout=120,
    )
    if proc.returncode == 0:
        mirror_witnesses(ctx, remote)
    if proc.returncode != 0:
        output.warn(
            f"registration committed locally but not pushed to {remote} ({gitcli.reason(proc)}); "
            "run 'git ledger sync' to share it"
        )


def mirror_witnesses(ctx: Context, remote: str) -> None:
    """Witnesses the remote now holds: kept as its copies, which a local rewrite cannot move."""
    for name, target in ctx.store.refs(WITNESS).items():
        ctx.store.create_ref(
            f"{REMOTE_WITNESS}{remote}/witness/{name[len(WITNESS) :]}", target, "ledger: pushed"
        )
