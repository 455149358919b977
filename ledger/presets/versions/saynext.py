"""The ``next:`` line a writing verb ends with (``run``, ``conclude``): the loop's next
step read from the ledger just written, by the rules ``git ledger next`` uses
(:func:`~ledger.presets.versions.nextstep.next_action`)."""

from __future__ import annotations

from pathlib import Path

from ledger.core import output
from ledger.core.context import open_context
from ledger.core.state import LedgerState


def say_next(cwd: Path, before: LedgerState | None = None) -> None:
    """``before``: the state the verb read before its transition; the state after it
    reuses what that one built of the files the transition did not change."""
    from ledger.presets.versions.nextstep import next_action
    from ledger.presets.versions.reading import read_open

    ctx = open_context(cwd)
    state = ctx.state(previous=before)
    nxt = next_action(state, read_open(ctx.store, state)[0])
    output.say(f"next: {nxt.command}  # {nxt.reason}")
