"""Whether this clone has the witnesses (``refs/ledger/witness/*``), and the fetch that
brings them: what ``status`` and a repeated ``verify`` ask on every call.

Outside :mod:`ledger.core.verify` on purpose: importing any module of that package
imports the whole replay (a fifth of a warm ``status``), and neither asker replays.
Standard library and :mod:`ledger.core.gitcli` only.
"""

from __future__ import annotations

from pathlib import Path

from ledger.core import gitcli

WITNESS = "refs/ledger/witness/"
REMOTE_WITNESS = "refs/ledger/remotes/"

# What a clone runs to fetch the witnesses (a plain `git clone` never fetches
# refs/ledger/*): the refspec kept in the remote's config is also the sign that this clone
# asked for them, so a remote that holds none (nothing was ever pushed) still verifies.
FETCH_REFSPEC = "+refs/ledger/witness/*:refs/ledger/remotes/{remote}/witness/*"


def fetch_command(remote: str) -> str:
    spec = FETCH_REFSPEC.format(remote=remote)
    return f"git config --add remote.{remote}.fetch '{spec}' && git fetch {remote}"


def witnesses_absent(top: Path) -> str | None:
    """The remote whose witnesses this clone lacks (None: it has some, asked for them,
    or has no remote to fetch them from).

    A clone that never fetched ``refs/ledger/witness/*`` cannot tell a registration
    rewritten and force-pushed from the original: its witness check would be silently
    empty. Any witness ref here (its own, or a remote's copy) or a remote configured to
    fetch them says the witnesses were asked for.

    The remotes' configuration first, in one git call (the remotes, and whether one
    fetches the witnesses): a clone with no remote, or one that asked for them, needs
    no second; the refs are listed only when a remote was never asked.
    """
    remotes, asked = _remotes(top)
    if asked or not remotes:
        return None
    found = gitcli.run(
        ["for-each-ref", "--count=1", "--format=%(refname)", WITNESS, REMOTE_WITNESS],
        top,
        check=False,
    )
    if found.returncode != 0 or found.stdout.strip():
        return None
    return "origin" if "origin" in remotes else remotes[0]


def _remotes(top: Path) -> tuple[list[str], bool]:
    """(the configured remotes in ``git remote``'s order, whether a fetch refspec of one
    names the witnesses), from ``remote.<name>.<key>`` in git's configuration.

    As ``git remote`` lists them: every name any ``remote.<name>.*`` key configures
    (``remote.pushDefault`` names none), sorted as git sorts them (by bytes). ``-z``: a
    key ends at the first newline, its value at NUL (a value may hold one).
    """
    proc = gitcli.run(["config", "-z", "--get-regexp", r"^remote\."], top, check=False)
    if proc.returncode not in (0, 1):  # 1: no such key, no remote
        return [], False
    names: dict[str, None] = {}
    asked = False
    for record in proc.stdout.split("\0"):
        key, _, value = record.partition("\n")
        section, _, rest = key.partition(".")
        name, dot, variable = rest.rpartition(".")
        if section != "remote" or not dot or not name:
            continue
        names[name] = None
        if variable == "fetch" and WITNESS in value:
            asked = True
    return sorted(names, key=lambda name: name.encode()), asked


def require_witnesses(top: Path, registrations: dict[str, str]) -> None:
    """Exit 2 when history holds registrations and this clone never fetched a witness."""
    if not registrations:
        return
    remote = witnesses_absent(top)
    if remote is None:
        return
    from ledger.core.errors import BadInput

    shown = ", ".join(sorted(registrations)[:3]) + (" ..." if len(registrations) > 3 else "")
    raise BadInput(
        f"cannot verify the registrations ({shown}) without their witnesses: this clone "
        "has no refs/ledger/witness/* (a plain git clone does not fetch them)",
        fetch_command(remote),
    )
