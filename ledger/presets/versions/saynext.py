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
    from ledger.presets.versions.fresh import fresh_next
    from ledger.presets.versions.preset import next_data

    ctx = ctx if ctx is not None else open_context(cwd)
    state = state if state is not None else ctx.state()
    # What `next` reads: the loop's next step, then what only git says fresh (a refuted
    # version's code still on the branch, a draft, code not yet committed).
    data = {"dir": state.config.dir, **next_data(ctx, state)}
    store = ctx.store
    nxt = fresh_next(cwd, store.require_workdir(), store.common_dir, data)
    output.say(f"next: {nxt['command']}  # {nxt['reason']}")
