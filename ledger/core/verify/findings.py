"""What a replay reports: findings (a rule broken), notes (a legitimate undo or change,
shown forever) and the report that carries both, with the wording shared by its rules."""

from __future__ import annotations

import re
from typing import NamedTuple

from ledger.core.commitinfo import parse_trailers
from ledger.core.repobase import base_id

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: the incremental path stays light
if TYPE_CHECKING:
    from ledger.core.store import Store

REVERTS = re.compile(r"This reverts commit ([0-9a-f]{40})")


class Finding(NamedTuple):
    """A history rule broken at ``commit`` (NamedTuples here, as ledger.core.commitinfo
    says why)."""

    commit: str
    path: str
    rule: str
    message: str
    fix: str
    step: str = ""

    def line(self) -> str:
        where = f"{self.commit[:10]} {self.path}" if self.path else self.commit[:10]
        return f"{where}: [{self.rule}] {self.message} (fix: {self.fix})"

    def as_json(self) -> dict[str, str]:
        return {
            "commit": self.commit,
            "path": self.path,
            "rule": self.rule,
            "message": self.message,
            "fix": self.fix,
            "step": self.step,
        }


class Note(NamedTuple):
    """A legitimate undo or change, shown forever: withdrawn, replaced, config, void."""

    commit: str
    kind: str
    step: str
    path: str
    text: str

    def line(self) -> str:
        return f"{self.commit[:10]} {self.kind}: {self.step} {self.path} {self.text}".rstrip()

    def as_json(self) -> dict[str, str]:
        return {
            "commit": self.commit,
            "kind": self.kind,
            "step": self.step,
            "path": self.path,
            "text": self.text,
        }


class Report:
    """What a replay up to ``tip`` found and noted, and what it learnt of the steps."""

    __slots__ = ("commits", "ever", "findings", "notes", "registrations", "tip", "void")

    def __init__(self, tip: str | None) -> None:
        self.tip = tip
        self.findings: list[Finding] = []
        self.notes: list[Note] = []
        self.registrations: dict[str, str] = {}
        self.ever: set[str] = set()
        self.void: set[str] = set()
        self.commits = 0

    def for_step(self, vid: str, since: str, store: Store) -> list[Finding]:
        """Findings that taint ``vid``: its own (or its matrix's), and unassigned ones
        in commits after its registration ``since``."""
        mine = {vid, base_id(vid)}
        return [
            f
            for f in self.findings
            if f.step in mine or (not f.step and store.is_ancestor(since, f.commit))
        ]


def withdrawn_reason(message: str) -> str:
    """Why a ``git revert`` withdrew what it undid: the revert's own words.

    The body a user wrote (``git revert -e``, or ``-m`` text) without git's
    "This reverts commit ..." line and trailers; git's subject when there is none.
    """
    paragraphs = [p.strip() for p in re.split(r"\n\s*\n", message.strip()) if p.strip()]
    subject = paragraphs[0].splitlines()[0] if paragraphs else ""
    body = paragraphs[1:]
    if body and parse_trailers(message):
        body = body[:-1]  # the trailers
    kept = [
        " ".join(line.strip() for line in p.splitlines()) for p in body if not REVERTS.search(p)
    ]
    return " ".join(kept) if kept else subject


def deleted_finding(pending: list[str]) -> tuple[str, str, str, str]:
    """(commit, rule, message, fix) for a result deleted in ``pending[0]``."""
    commit, _blob, vid = pending
    return (
        commit,
        "append-only-results",
        f"a result of {vid} was deleted in {commit[:10]} without reverting the transition "
        "that recorded it",
        f"restore it (git revert {commit[:10]}); a result is withdrawn only by 'git revert' "
        "of its record commit",
    )


def squash_fix(vid: str) -> str:
    """The way out of a squash-merged ledger branch (registration and results in one
    commit of no transition): only a merge commit keeps the registration and its
    witness (a rebase rewrites them too); once pushed, only ``void`` closes it."""
    return (
        "not pushed yet: reset the branch to before the squash and merge the ledger "
        "branch with a merge commit (git merge --no-ff BRANCH), which keeps its "
        f"registration; otherwise git ledger void {vid} --reason ... (its results then "
        "never count, and the id is never reused)"
    )
