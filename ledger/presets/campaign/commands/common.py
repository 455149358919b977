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


def require_owner(ctx: Context, owner: dict[str, object] | None) -> None:
    """Refuse a writing verb by anyone but the owner of an armed campaign (``arm``
    checks it too, and takes over only with ``--force REASON``)."""
    from ledger.core.errors import Refused
    from ledger.presets.campaign.loop import owner_id

    if not owner or not owner.get("armed"):
        return
    me = owner_id(ctx.config, ctx.store)
    if owner.get("owner") != me:
        raise Refused(
            f"[owner] the campaign is armed by {owner.get('owner')}, not {me}",
            "act as its owner, or take it over: git ledger arm --force REASON",
        )
