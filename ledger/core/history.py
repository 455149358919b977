"""Rules that need history, not just a tree: registration integrity.

Hooks can be skipped with ``--no-verify``, so a verdict re-reads history: the
registration commit must be an ancestor of HEAD and the frozen part (registered
front matter and the Hypothesis section) identical in *every* commit since (an
edit followed by a revert is still tampering). That rule has one implementation,
the replay of ``git ledger verify`` (:mod:`ledger.core.verify.registrations`);
this module asks it about one version, and gives the hooks and ``doctor`` the
frozen part of a file as that rule defines it.
"""

from __future__ import annotations

from dataclasses import dataclass

from ledger.core.errors import Refused
from ledger.core.model.documents import decode_text, get_section, parse_document
from ledger.core.model.entries import HYPOTHESIS
from ledger.core.store import Store
from ledger.core.verify import STARTS, frozen_of, registration

__all__ = ["STARTS", "Registration", "check_registration", "frozen_part"]


def frozen_part(text: str, where: str) -> tuple[dict[str, object], str]:
    """The registered front-matter keys and the Hypothesis section of a version file."""
    doc = parse_document(text, where)
    return frozen_of(doc.front, get_section(doc.body, HYPOTHESIS))


@dataclass(frozen=True)
class Registration:
    commit: str
    frozen: tuple[dict[str, object], str]


def check_registration(store: Store, dir_: str, vid: str, rev: str | None = None) -> Registration:
    """The registration of ``vid`` (the file ``dir_/vid.md``) as history proves it; Refused
    with the frozen-registration finding ``git ledger verify`` reports, worded the same."""
    from ledger.core.context import load_config

    tip = store.resolve(rev)
    loaded = load_config(store, store.snapshot(tip)) if tip is not None else None
    if tip is None or loaded is None:
        raise Refused(f"{vid} has no registration commit", f"git ledger register {vid} ...")
    config, config_file = loaded
    commit = registration(store, config, config_file, vid, tip)
    path = f"{dir_}/{vid}.md"
    text = decode_text(store.snapshot(commit).read(path) or b"", path)
    return Registration(commit, frozen_part(text, path))
