"""The ledger README's generated blocks: the mechanics every loop shares.

What a block holds is the loop's (:meth:`ledger.core.loops.Preset.readme_views`);
how blocks are fenced, written, compared and blanked for a merge is the same for
every loop, and lives here. A block is never edited by hand: the verbs write it,
the hooks and ``sync`` compare it, the merge driver regenerates it.
"""

from __future__ import annotations

from ledger.core.entrykind import README
from ledger.core.model.documents import get_block, set_block

DRIFT_FIX = "regenerate with the git ledger verbs; do not edit generated blocks"

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ledger.core.loops import Preset
    from ledger.core.model.config import LedgerConfig
    from ledger.core.state import LedgerState
    from ledger.core.store import Snapshot


def readme_path(config: LedgerConfig) -> str:
    """The ledger README, relative to the repository."""
    return f"{config.dir}/{README}"


def apply_views(text: str, views: dict[str, str]) -> str:
    """``text`` with each block of ``views`` (name -> content) written in place."""
    for name, content in views.items():
        text = set_block(text, name, content)
    return text


def blank_views(text: str, names: tuple[str, ...]) -> str:
    """``text`` with the blocks ``names`` emptied (the merge driver merges only prose)."""
    for name in names:
        if get_block(text, name) is not None:
            text = set_block(text, name, "")
    return text


def drift(
    text: str | None, views: dict[str, str], where: str, kept: str | None = None
) -> list[str]:
    """One line per block of ``text`` that differs from what the entries generate and,
    when ``kept`` (the text as it was) is given, from the block as it was too."""
    if text is None:
        return [f"{where} is missing"] if views else []
    return [
        f"{where}: generated block '{name}' is out of date"
        for name, content in views.items()
        if (block := get_block(text, name)) != content
        and (kept is None or block != get_block(kept, name))
    ]


def readme_text(snap: Snapshot, config: LedgerConfig, template: str) -> tuple[str, bytes | None]:
    """The README's text at ``snap`` (the file ``template`` of ``templates/`` when there is
    none yet) and its bytes as they are (None: missing)."""
    from ledger.core.resources import read_resource

    current = snap.read(readme_path(config))
    if current is not None:
        return current.decode(), current
    return read_resource("templates", template), None


def readme_update(snap: Snapshot, state: LedgerState, preset: Preset) -> dict[str, bytes | None]:
    """The README write that brings the blocks of loop ``preset`` in line with ``state``
    ({} when they are)."""
    path = readme_path(state.config)
    text, current = readme_text(snap, state.config, preset.readme_template)
    updated = apply_views(text, preset.readme_views(state)).encode()
    return {} if updated == current else {path: updated}
