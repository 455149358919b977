"""What the batches verbs share: the loop's context, how a verb reports, the trace
that rides along with a transition, and the two refusals every writing verb checks
first (a converged loop, a lowered bar)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ledger.core import output
from ledger.core.context import Context, open_preset
from ledger.core.errors import Refused
from ledger.core.model.config import BatchesTable
from ledger.core.store import write_atomic
from ledger.presets.batches import loop as batches
from ledger.presets.batches.loop import Batches
from ledger.presets.batches.rules import Withdrawn, withdrawn_topics


def open_batches(cwd: Path) -> Context:
    """The ledger at ``cwd``, refused unless it runs the batches loop."""
    return open_preset(cwd, "batches")


def say(as_json: bool, data: dict[str, Any], text: str) -> None:
    """A verb's outcome: ``data`` with ``--json``, else ``text``."""
    if as_json:
        output.emit_json(data)
    else:
        output.say(text)


def trace_ride_along(ctx: Context, b: Batches) -> dict[str, bytes | None]:
    """Trace events written since the last commit ride along with this transition
    (a torn last line repaired first)."""
    rel = batches.trace_path(ctx.config, b.run_id)
    path = ctx.store.require_workdir() / rel
    if not path.is_file():
        return {}
    text = path.read_text(encoding="utf-8", errors="replace")
    repaired = batches.repair_trace(text)
    if repaired != text:
        write_atomic(path, repaired.encode())
    return {rel: repaired.encode()}


def require_not_converged(b: Batches) -> None:
    """Refused once the loop has converged: its weights are frozen for good."""
    if b.converged_at is not None:
        raise Refused(
            f"the loop converged at batch {b.converged_at}; the weights are frozen",
            "start a new run in a new ledger",
        )


def frozen_thresholds(ctx: Context, b: Batches) -> BatchesTable:
    """The frozen thresholds; a bar lowered in ledger.toml since is refused."""
    broken = batches.broken_threshold(ctx.config, b)
    if broken is not None:
        setting, line = broken
        raise Refused(f"[thresholds-frozen] {line}", f"restore it: {setting.restore()}")
    return b.thresholds()


def withdrawn(ctx: Context) -> list[Withdrawn]:
    """The topic measurements a ``git revert`` withdrew, as ``verify`` reports them (from
    its report cache when current); none when history cannot be verified."""
    from ledger.core.verify import history_notes

    return withdrawn_topics(history_notes(ctx.store, ctx.config, ctx.config_file), ctx.dir)
