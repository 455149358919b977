"""Rules that need history, not just a tree: registration integrity.

Hooks can be skipped with ``--no-verify``, so before a verdict the ledger
re-reads every commit since the registration: the registration commit must be
an ancestor of HEAD, the frozen part (registered front matter and the
Hypothesis section) byte-identical in *every* commit since (an edit followed by
a revert is still tampering), and the version's code commits must come after
the registration.
"""

from __future__ import annotations

from dataclasses import dataclass

from ledger.core.errors import Refused
from ledger.core.model.documents import decode_text, get_section, parse_document
from ledger.core.model.entries import HYPOTHESIS, REGISTERED_KEYS
from ledger.core.store import TRAILER_STEP, TRAILER_TRANSITION, CommitInfo, Store

# Transitions that bring a version's file into being.
STARTS = ("register", "rename")


def frozen_part(text: str, where: str) -> tuple[dict[str, object], str]:
    """The registered front-matter keys and the Hypothesis section of a version file."""
    doc = parse_document(text, where)
    registered = {k: doc.front.get(k) for k in REGISTERED_KEYS}
    return registered, get_section(doc.body, HYPOTHESIS) or ""


@dataclass(frozen=True)
class Registration:
    commit: str
    frozen: tuple[dict[str, object], str]


def check_registration(store: Store, dir_: str, vid: str, rev: str | None = None) -> Registration:
    """Verify the registration of ``vid`` from history; raise Refused naming the culprit."""
    path = f"{dir_}/{vid}.md"
    tip = store.resolve(rev)
    if tip is None:
        raise Refused(f"{vid} has no registration commit", f"git ledger register {vid} ...")
    # Newest first. Every commit's message is read (cheap) to find the version's
    # code commits; trees are read only back to the registration, so a verdict at
    # 10,000 steps does not look into 70,000 trees. A gap (the file missing in an
    # older commit) that is not the start of the registration is a deletion.
    code_commits: list[CommitInfo] = []
    since: list[tuple[CommitInfo, str]] = []
    gap: list[CommitInfo] = []
    looking = True
    for info in store.walk(tip):
        if info.trailer(TRAILER_STEP) == vid and info.trailer(TRAILER_TRANSITION) is None:
            code_commits.append(info)
        if not looking:
            continue
        blob = store.snapshot(info.id).blob_id(path)
        if blob is None:
            if since:  # the file is missing in an older commit
                oldest = since[-1][0]
                if (
                    oldest.trailer(TRAILER_TRANSITION) in STARTS
                    and oldest.trailer(TRAILER_STEP) == vid
                ):
                    looking = False  # reached the registration
                else:
                    gap.append(info)  # deleted, or added by hand: keep looking back
            continue
        if gap:
            deleted = gap[-1]
            raise Refused(
                f"[frozen-registration] {path} was deleted in commit {deleted.id[:10]} ({deleted.subject})",
                f"restore it: git revert {deleted.id[:10]}",
            )
        since.append((info, blob))
    since.reverse()
    registration: Registration | None = None
    last_blob: str | None = None
    for info, blob in since:
        if registration is None:
            text = decode_text(store.snapshot(info.id).read(path) or b"", path)
            registration = Registration(info.id, frozen_part(text, path))
            last_blob = blob
            continue
        if blob == last_blob:
            continue
        last_blob = blob
        text = decode_text(store.snapshot(info.id).read(path) or b"", path)
        if frozen_part(text, path) != registration.frozen:
            raise Refused(
                f"[frozen-registration] commit {info.id[:10]} ({info.subject}) changed the "
                f"registered part of {vid} after its registration {registration.commit[:10]}",
                "a registration is a contract: register a new version instead of editing this one",
            )
    if registration is None:
        raise Refused(
            f"{vid} has no registration commit on this branch", f"git ledger register {vid} ..."
        )
    for info in code_commits:
        if not store.is_ancestor(registration.commit, info.id):
            raise Refused(
                f"[code-before-registration] code commit {info.id[:10]} ({info.subject}) for {vid} "
                f"does not come after its registration {registration.commit[:10]}",
                "pre-register first, then commit code",
            )
    return registration
