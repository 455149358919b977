"""What the batches verbs share: the loop's context, how a verb reports, the trace
that rides along with a transition, and the two refusals every writing verb checks
first (a converged loop, a lowered bar)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ledger.core import output
from ledger.core.context import Context, open_preset
from ledger.core.errors import Refused
from ledger.core.findings import Finding
from ledger.core.model.config import BatchesTable
from ledger.core.repobase import read_regular
from ledger.core.store import Snapshot, write_atomic
from ledger.presets.batches import history
from ledger.presets.batches import loop as batches
from ledger.presets.batches.files import JOURNAL as JOURNAL
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


def remember(ctx: Context, before: str, after: str) -> None:
    """Note the lines the verbs added to a trace (``after`` past ``before``), so the
    transition they ride along with can tell them from a line written by hand."""
    added = [line for line in after.splitlines() if line.strip()][len(before.splitlines()) :]
    if not added:
        return
    path = ctx.store.ledger_state_dir / JOURNAL
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as handle:
        handle.write("".join(f"{history.line_id(line)}\n" for line in added))


def known_lines(ctx: Context) -> set[str]:
    path = ctx.store.ledger_state_dir / JOURNAL
    if not path.is_file():
        return set()
    # Digests only: bytes that are not one (a damaged journal) match no line, so the
    # lines they stood for are refused as written by hand, never an internal error.
    return set(path.read_text(encoding="utf-8", errors="replace").split())


def _on_disk(ctx: Context, b: Batches, snap: Snapshot) -> tuple[str, str, str | None]:
    """(path, committed text, text on disk or None when it is no regular file)."""
    rel = batches.trace_path(ctx.config, b.run_id)
    committed = (snap.read(rel) or b"").decode("utf-8", errors="replace")
    data = read_regular(ctx.store.require_workdir() / rel)
    if data is None:
        return rel, committed, None
    return rel, committed, data.decode("utf-8", errors="replace")


def _torn_event(text: str, repaired: str) -> str | None:
    """The ``torn-line`` event the repair made of a torn last line (the verbs' own
    line), or None: nothing was torn, or the last line only lacked its newline (a line
    kept as written, which the journal must know like any other)."""
    if repaired in (text, text + "\n"):
        return None
    return repaired.splitlines()[-1]


def trace_text(
    ctx: Context, b: Batches, snap: Snapshot, write: bool = True
) -> tuple[str, str, str | None]:
    """(path, committed text, text on disk or None) of the run's trace, a torn last line
    repaired first (the repair is the verbs' own line; ``write``: on disk too)."""
    rel, committed, text = _on_disk(ctx, b, snap)
    if text is None:
        return rel, committed, None
    repaired = batches.repair_trace(text)
    if repaired != text and write:
        write_atomic(ctx.store.require_workdir() / rel, repaired.encode())
        if _torn_event(text, repaired) is not None:
            remember(ctx, text.rpartition("\n")[0] + "\n" if "\n" in text else "", repaired)
    return rel, committed, repaired


def trace_findings(ctx: Context, b: Batches, snap: Snapshot, write: bool = True) -> list[Finding]:
    """What keeps the trace on disk from riding along with the next transition: a line
    no verb wrote, a changed committed line, a reused seq, an event after run_end (the
    one rule, :func:`ledger.presets.batches.history.trace_lines`, that verify applies).
    ``write=False`` (``next``) repairs a torn last line in memory only, and knows the
    one line that repair makes, as the verb will once it has written it."""
    if write:
        rel, committed, text = trace_text(ctx, b, snap)
        torn = None
    else:
        rel, committed, raw = _on_disk(ctx, b, snap)
        text = batches.repair_trace(raw) if raw is not None else None
        torn = _torn_event(raw, text) if raw is not None and text is not None else None
    if text is None:
        return []
    known = known_lines(ctx)
    if torn is not None:
        known.add(history.line_id(torn))
    return [
        Finding(rule, f"{rel}: {message}", fix)
        for rule, message, fix in history.trace_lines(committed, text, known)
    ]


def trace_ride_along(ctx: Context, b: Batches, snap: Snapshot) -> dict[str, bytes | None]:
    """Trace events written since the last commit ride along with this transition (a
    torn last line repaired first); refused when one of them was not written by a verb."""
    found = trace_findings(ctx, b, snap)
    if found:
        raise Refused.of(found)
    rel, _committed, text = trace_text(ctx, b, snap)
    return {rel: text.encode()} if text is not None else {}


def require_clean_history(ctx: Context) -> None:
    """Refused while ``verify`` has findings: a hand edit (a meta.json that unfreezes a
    target, a trace line committed past the hooks) stands until it is repaired, and no
    transition builds on it (every loop's writers: ``ledger.core.historyguard``)."""
    from ledger.core.historyguard import require_verified_history

    require_verified_history(ctx)


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
