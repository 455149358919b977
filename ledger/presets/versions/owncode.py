"""A re-measurement runs at the version's own code, never at HEAD.

``run ID --remeasure REASON`` measures the evaluation's own noise: the same code,
measured again. Run at today's HEAD, it measured a code change instead and the
reflection reported it as "eval noise" (issue 26). So the version's code commit
(the one its own results were measured at, from their provenance) is checked out
in a temporary worktree under ``.git/ledger/remeasure/``, detached, and the gate
runs there with the command frozen at the version's registration; the user's work
tree is never touched, and the worktree is removed once the runs are recorded.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

from ledger.core.context import Context
from ledger.core.errors import BadInput
from ledger.core.state import LedgerState


def own_commit(ctx: Context, state: LedgerState, vid: str) -> str:
    """The code commit ``vid``'s own results were measured at (the newest of them,
    when they were measured at several)."""
    found: list[str] = []
    for r in state.results:
        if r.version != vid or r.remeasured or r.status != "ok":
            continue
        at = r.data.provenance.code_commit
        if at and at not in found and ctx.store.resolve(at) is not None:
            found.append(at)
    if not found:
        raise BadInput(
            f"{vid}'s results name no code commit this repository has",
            f"re-measure with the code checked out by hand: git ledger record {vid} ... --remeasure REASON",
        )
    repo = ctx.store.repo
    newest = [c for c in found if all(o == c or repo.descendant_of(c, o) for o in found)]
    return newest[0] if newest else found[-1]


def frozen_command(ctx: Context, state: LedgerState, vid: str, gate: str) -> list[str] | None:
    """The gate's command as it stood at ``vid``'s registration (None: not found there)."""
    from ledger.core.verify import frozen_config
    from ledger.presets.versions.readiness import history_of

    registration = history_of(state, ctx.store, [vid]).get(vid, (None, []))[0]
    if registration is None:
        return None
    then = frozen_config(ctx.store, state, registration).config
    cfg = then.gates.get(gate)
    return list(cfg.command) if cfg is not None and cfg.command else None


@contextlib.contextmanager
def checkout(ctx: Context, commit: str) -> Iterator[Path]:
    """A detached worktree at ``commit``, removed on the way out (even on failure)."""
    from ledger.core.scratchtree import detached

    with detached(ctx.store, commit, "remeasure") as tree:
        yield tree
