"""Witnesses: ``refs/ledger/witness/<id>`` names a registration commit, created once and
never moved, and pushed with it; a registration rewritten in history no longer matches."""

from __future__ import annotations

from pathlib import Path

from ledger.core.verify.findings import Finding
from ledger.core.verify.replay import VState

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: the incremental path stays light
if TYPE_CHECKING:
    from ledger.core.store import Store

WITNESS = "refs/ledger/witness/"
REMOTE_WITNESS = "refs/ledger/remotes/"


def create_witness(store: Store, step: str, commit: str) -> None:
    """``refs/ledger/witness/<step>`` at the registration commit: created once, never moved."""
    store.create_ref(f"{WITNESS}{step}", commit, f"ledger: witness of {step}")


def witness_findings(store: Store, versions: dict[str, VState], hidden: set[str]) -> list[Finding]:
    found = []
    # Each witness ref once (local, then every remote's copy): not each version.
    by_id: dict[str, list[tuple[str, str]]] = {}
    for name, target in store.refs(WITNESS).items():
        by_id.setdefault(name[len(WITNESS) :], []).append((name, target))
    for name, target in store.refs(REMOTE_WITNESS).items():
        _remote, marker, vid = name[len(REMOTE_WITNESS) :].partition("/witness/")
        if marker:
            by_id.setdefault(vid, []).append((name, target))
    for vid in sorted(by_id):
        if vid not in versions:
            continue
        reg, _frozen, _blob, flags = versions[vid]
        if "g" in flags or "x" in flags or reg in hidden:
            continue
        for name, target in by_id[vid]:
            if target != reg:
                found.append(
                    Finding(
                        reg,
                        "",
                        "witness",
                        f"the registration of {vid} in this history is {reg[:10]}, but {name} "
                        f"names {target[:10]}: the registration was rewritten (amend, rebase, "
                        "squash or a force-push)",
                        f"restore the original history (git reset --hard {target[:10]} on a "
                        f"branch that had it), or git ledger void {vid} --reason ...",
                        vid,
                    )
                )
    return found


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
    fetch them says the witnesses were asked for."""
    from ledger.core import gitcli

    found = gitcli.run(
        ["for-each-ref", "--count=1", "--format=%(refname)", WITNESS, REMOTE_WITNESS],
        top,
        check=False,
    )
    if found.returncode != 0 or found.stdout.strip():
        return None
    specs = gitcli.run(["config", "--get-regexp", r"^remote\..*\.fetch$"], top, check=False)
    if "refs/ledger/witness/" in specs.stdout:
        return None
    remotes = gitcli.remotes(top)
    if not remotes:
        return None
    return "origin" if "origin" in remotes else remotes[0]


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
