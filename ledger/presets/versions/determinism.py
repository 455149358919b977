"""The DETERMINISM outcome of a run with replicates, kept as a file of its own."""

from __future__ import annotations

from ledger.core.context import Context
from ledger.core.store import Snapshot, Transition


def determinism_path(dir_: str, vid: str, gate: str, slot: int | None = None) -> str:
    tail = f"-r{slot}" if slot is not None else ""
    return f"{dir_}/determinism/{vid}-{gate}{tail}.json"


def store_determinism(
    ctx: Context,
    vid: str,
    gate: str,
    report: dict[str, object],
    *,
    remeasure: str | None = None,
    slot: int | None = None,
) -> str:
    """Commit the DETERMINISM outcome (per seed: spread, first divergent field) with the
    results it judged, so show and the reports can say it later. A re-measurement's
    outcome is a file of its own (named by its first slot) beside the original's."""
    from ledger.core.model.documents import dump_json

    path = determinism_path(ctx.dir, vid, gate, slot)
    verdict = "PASS" if report.get("pass") else "FAIL"
    extra = {"remeasure": remeasure} if remeasure is not None else {}
    data = dump_json({"version": vid, "gate": gate, **extra, **report}).encode()

    def build(snap: Snapshot) -> Transition:
        return Transition(
            kind="record",
            step=vid,
            subject=f"docs(ledger): {vid} determinism {gate} {verdict}",
            writes={path: data},
        )

    commit_id, _ = ctx.store.transact(build)
    return commit_id
