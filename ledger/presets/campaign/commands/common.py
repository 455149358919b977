"""What the campaign's verbs share: the campaign's context, how a verb reports, and
telling a ledger transition from a candidate's own commit."""

from __future__ import annotations

from pathlib import Path

from ledger.core import output
from ledger.core.context import Context, open_preset


def open_campaign(cwd: Path) -> Context:
    """The ledger at ``cwd``, refused unless it is a campaign."""
    return open_preset(cwd, "campaign")


def say(as_json: bool, data: dict[str, object], text: str) -> None:
    """A verb's outcome: ``data`` with ``--json``, else ``text``."""
    if as_json:
        output.emit_json(data)
    else:
        output.say(text)


def is_transition(ctx: Context, sha: str) -> bool:
    """Whether ``sha`` is a commit the ledger wrote (it carries the transition trailer)."""
    from ledger.core.store import TRAILER_TRANSITION

    for info in ctx.store.walk(sha):
        return bool(info.trailer(TRAILER_TRANSITION))
    return False
