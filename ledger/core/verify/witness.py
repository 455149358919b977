"""Witnesses: ``refs/ledger/witness/<id>`` names a registration commit, created once and
never moved, and pushed with it; a registration rewritten in history no longer matches."""

from __future__ import annotations

from ledger.core.verify.findings import Finding
from ledger.core.verify.replay import VState
from ledger.core.witnessrefs import REMOTE_WITNESS, WITNESS  # where status reads them too

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: the incremental path stays light
if TYPE_CHECKING:
    from ledger.core.store import Store


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
