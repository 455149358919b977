"""The rules for results (invariant 2): a result is added by its version's record
transition while the version is open, changes only by ``record --replace``, and
disappears only by a whole ``git revert`` of the transition that recorded it.

A re-measurement (``run --remeasure``, ``record --remeasure``: the eval noise a
reflection asks for) is a kind of transition of its own, ``remeasure``: a record
transition that carries a ``Ledger-Remeasure`` trailer. It only adds results to a
concluded version, each in a slot of its own (``-r1000`` and up) that says why
(``provenance.remeasure``), so no verdict ever reads it; it never edits or deletes one.
The trailer, not a new ``Ledger-Transition`` value, marks the kind: every
re-measurement already recorded carries it, so a history verify used to refuse for one
verifies as it is (nothing to rewrite), and ``log``, reverts and the hooks keep reading
the record kinds they know.
"""

from __future__ import annotations

import re
from typing import Any

from ledger.core.commitinfo import TRAILER_TRANSITION, CommitInfo
from ledger.core.repobase import base_id, cell_of
from ledger.core.verify.findings import deleted_finding, squash_fix, withdrawn_reason
from ledger.core.verify.replay import Change, Replay, VState

RESULT_KINDS = ("record", "run", "run-failed")  # transitions that add results
REMEASURE = "remeasure"  # the kind of a result transition with a Ledger-Remeasure trailer
TRAILER_REMEASURE = "Ledger-Remeasure"
# The first replicate slot of a re-measurement: past any the version's own runs use
# (1, 2, ...). The one definition: run and record --remeasure take their slots from it.
REMEASURE_SLOT = 1000
_SLOT = re.compile(r"-r([0-9]+)(?:-failed)?\.json$")


def kind_of(c: CommitInfo) -> str | None:
    """The kind of transition ``c`` is, as the history rules know it (None: not one)."""
    kind = c.trailer(TRAILER_TRANSITION)
    if kind in RESULT_KINDS and (c.trailer(TRAILER_REMEASURE) or "").strip():
        return REMEASURE
    return kind


def result_change(r: Replay, change: Change, state: dict[str, Any]) -> None:
    c, kind, step, path, rel = change.commit, change.kind, change.step, change.path, change.rel
    old, new = change.old, change.new
    vid = rel.split("/")[1]
    versions: dict[str, VState] = state["v"]
    if new is None:
        reverted = r.reverted(c)
        if kind == "rename" and moved_by_rename(r, c, step, vid, path, old):
            return
        if (
            reverted is not None
            and reverted.trailer(TRAILER_TRANSITION) in RESULT_KINDS
            and (path, None, old) in r.diff(reverted)
        ):
            if _fixed(versions, vid, path):
                # The verdict stated its n and its numbers: the evidence behind it is
                # fixed (and a confirmed version's results are the standing baseline).
                r.finding(
                    c,
                    path,
                    "append-only-results",
                    f"a result of {vid} was withdrawn after its conclusion, which it informed",
                    f"restore it (git revert {c.id[:10]}); a concluded version's evidence "
                    f"is fixed (git ledger void {vid} --reason ... if it cannot count)",
                    vid,
                )
                return
            r.note(c, "withdrawn", vid, path, f"withdrawn: {withdrawn_reason(c.message)}")
            return
        # Pending: a finding unless the same bytes come back before its verdict.
        state.setdefault("del", {})[path] = [c.id, old, vid]
        return
    parsed = r.parse("result", new, path)
    if isinstance(parsed, str):
        r.finding(c, path, "unparseable-entry", parsed, f"restore {path} as recorded", vid)
        return
    if old is not None:
        reverted = r.reverted(c)
        reason = parsed["model"].get("provenance", {}).get("replaced")
        if kind in RESULT_KINDS and step == vid and reason and _fixed(versions, vid, path):
            # record refuses a replacement after the verdict: its trailers cannot.
            r.finding(
                c,
                path,
                "append-only-results",
                f"a result of {vid} was replaced after its conclusion, which it informed",
                f"restore it (git revert {c.id[:10]}); measure again in a new version",
                vid,
            )
        elif kind in RESULT_KINDS and step == vid and reason:
            r.note(c, "replaced", vid, path, f"replaced: {reason}")
        elif reverted is not None and (path, new, old) in r.diff(reverted):
            r.note(c, "withdrawn", vid, path, f"replacement withdrawn: {c.subject}")
        else:
            r.finding(
                c,
                path,
                "append-only-results",
                f"a result of {vid} was edited outside 'record --replace'",
                f"restore it (git revert {c.id[:10]}); replace a result only with "
                "git ledger record --replace REASON",
                vid,
            )
        return
    reverted = r.reverted(c)
    pending = state.get("del", {}).pop(path, None)
    if pending is not None and pending[1] == new:
        r.note(c, "restored", vid, path, f"deleted in {pending[0][:10]}, restored: {c.subject}")
        return
    if pending is not None:
        r.finding(c, path, "append-only-results", *deleted_finding(pending)[2:], vid)
    if reverted is not None and (path, new, None) in r.diff(reverted):
        r.note(c, "restored", vid, path, f"restored: {c.subject}")
        return
    # matrix conclude brings every cell's results onto the base branch at once.
    by_matrix = kind == "matrix-conclude" and bool(cell_of(vid)) and base_id(vid) == step
    # sync's rename moves a version's results with it, in the same commit.
    by_matrix = by_matrix or (kind == "rename" and step == vid and moved_here(r, c, vid, path))
    remeasure = kind == REMEASURE
    if ((kind not in RESULT_KINDS and not remeasure) or step != vid) and not by_matrix:
        r.finding(
            c,
            path,
            "transitions-only",
            f"a result of {vid} was added outside a record transition "
            f"(Ledger-Transition: {c.trailer(TRAILER_TRANSITION) or 'none'})",
            # Registered in this very commit too: a squash merge, not a hand-added file.
            squash_fix(vid)
            if any(p == f"{r.dir}/{vid}.md" and was is None for p, was, _ in r.diff(c))
            else f"record results with git ledger record/run; revert {c.id[:10]}",
            vid,
        )
        return
    current = versions.get(vid)
    closed = current is not None and bool(set(current[3]) & set("cv"))
    if current is None or "g" in current[3]:
        r.finding(
            c,
            path,
            "ids-never-reused",
            f"a result of {vid} recorded while {vid} has no current registration",
            f"git ledger void {vid} --reason ...",
            vid,
        )
    elif remeasure:
        remeasure_added(r, change, parsed["model"], vid, closed)
    elif closed and not by_matrix:
        r.finding(
            c,
            path,
            "append-only-results",
            f"a result of {vid} recorded after its conclusion could not have informed it",
            "register a new version to measure again",
            vid,
        )


def _fixed(versions: dict[str, VState], vid: str, path: str) -> bool:
    """Is this result evidence a verdict stated (its version concluded, not void, and not
    a re-measurement slot, which no verdict reads)?"""
    current = versions.get(vid)
    slot = _SLOT.search(path)
    return (
        current is not None
        and "c" in current[3]
        and "v" not in current[3]
        and not (slot is not None and int(slot.group(1)) >= REMEASURE_SLOT)
    )


def moved_by_rename(
    r: Replay, c: CommitInfo, step: str, vid: str, path: str, old: str | None
) -> bool:
    """A rename (sync's, V -> Va) moves each result byte for byte but for its version
    field, in the same commit: a "rename" that only deletes one is a deletion."""
    if not step or step == vid or old is None:
        return False
    base = path.rsplit("/results/", 1)[0] + "/results/"
    target = base + step + path[len(base) + len(vid) :]
    added = next((new for p, was, new in r.diff(c) if p == target and was is None), None)
    if added is None:
        return False
    expected = r.read_blob(old).replace(
        f'"version": "{vid}"'.encode(), f'"version": "{step}"'.encode()
    )
    return r.read_blob(added) == expected


def moved_here(r: Replay, c: CommitInfo, vid: str, path: str) -> bool:
    """A result a rename adds is one it moved: the same commit deletes the old id's copy,
    byte for byte but for its version field."""
    base = path.rsplit("/results/", 1)[0] + "/results/"
    rest = path[len(base) + len(vid) :]
    for gone, old, now in r.diff(c):
        if now is not None or old is None or not gone.startswith(base) or not gone.endswith(rest):
            continue
        source = gone[len(base) : len(gone) - len(rest)]
        if source and source != vid and moved_by_rename(r, c, vid, source, gone, old):
            return True
    return False


def remeasure_added(
    r: Replay, change: Change, model: dict[str, Any], vid: str, closed: bool
) -> None:
    """A re-measurement adds to a concluded version only, where no verdict reads."""
    c, path = change.commit, change.path
    if not closed:
        r.finding(
            c,
            path,
            "transitions-only",
            f"a re-measurement of {vid} was recorded while {vid} is open: its verdict "
            "would read it",
            f"restore it (git revert {c.id[:10]}); record an open version's results with "
            "git ledger record/run, and re-measure it once concluded",
            vid,
        )
        return
    slot = _SLOT.search(path)
    reason = str((model.get("provenance") or {}).get("remeasure") or "").strip()
    # A failed run counts for no verdict, and its entry does not carry the reason.
    unread = bool(reason) or model.get("status") == "failed"
    if slot is None or int(slot.group(1)) < REMEASURE_SLOT or not unread:
        r.finding(
            c,
            path,
            "append-only-results",
            f"a re-measurement of {vid} was written where its verdict reads: a "
            f"re-measurement takes a slot of its own (-r{REMEASURE_SLOT} and up) and says "
            "why (provenance.remeasure)",
            f"restore it (git revert {c.id[:10]}); re-measure with git ledger run/record "
            "--remeasure REASON",
            vid,
        )
