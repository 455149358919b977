"""The ``next:`` line a writing verb ends with (``run``, ``conclude``): the loop's next
step read from the ledger just written, by the rules ``git ledger next`` uses
(:func:`~ledger.presets.versions.nextstep.next_action`)."""

from __future__ import annotations

from pathlib import Path

from ledger.core import output
from ledger.core.context import Context, open_context
from ledger.core.state import LedgerState


def say_next(cwd: Path, ctx: Context | None = None, state: LedgerState | None = None) -> None:
    """``state``: the ledger the verb has just committed, when it holds it (``conclude``);
    reading the whole ledger again cost a conclude at 1,000 versions a fifth of its time."""
    from ledger.presets.versions.nextstep import next_action
    from ledger.presets.versions.reading import read_open

    ctx = ctx if ctx is not None else open_context(cwd)
    state = state if state is not None else ctx.state()
    nxt = next_action(state, read_open(ctx.store, state)[0])
    output.say(f"next: {nxt.command}  # {nxt.reason}")
