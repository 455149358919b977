"""The rules for a version's and a matrix's own file: frozen registrations (invariant 1),
ids never reused (invariant 3), a conclusion written only by its transition (invariant 5).

This is the one frozen-registration rule: ``git ledger verify``, ``conclude``,
``show`` (through :func:`ledger.core.history.check_registration`) and the hooks' pushes
all read it from this replay.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ledger.core.commitinfo import TRAILER_STEP, TRAILER_TRANSITION
from ledger.core.repobase import results_dir
from ledger.core.verify.findings import deleted_finding, squash_fix
from ledger.core.verify.replay import Change, Replay, VState

# Transitions that bring a version's file into being.
STARTS = ("register", "rename")


def frozen_of(front: Mapping[str, Any], hypothesis: str | None) -> tuple[dict[str, Any], str]:
    """The frozen part of a version: its registered front-matter keys and its Hypothesis.

    The hooks compare it between the staged and the committed file; the replay, between
    every commit and the registration."""
    from ledger.core.model.entries import REGISTERED_KEYS  # pydantic: only with an entry

    return {k: front.get(k) for k in REGISTERED_KEYS}, hypothesis or ""


def frozen(kind: str, parsed: dict[str, Any]) -> tuple[str, str]:
    """(hash of the frozen part, hash of the conclusion part) of a version or matrix."""
    import hashlib

    model = parsed["model"]
    if kind == "version":
        fixed: Any = frozen_of(model, parsed.get("hypothesis"))
        closing: Any = [model.get("conclusion"), model.get("void")]
    else:
        fixed = {k: model.get(k) for k in ("id", "baselines", "cites", "cells")}
        closing = {
            k: model.get(k) for k in ("concluded", "winner", "override", "verdicts", "comparison")
        }
    digest = [
        hashlib.sha256(json.dumps(x, sort_keys=True).encode()).hexdigest()[:16]
        for x in (fixed, closing)
    ]
    return digest[0], digest[1]


def version_change(r: Replay, change: Change, state: dict[str, Any], what: str) -> None:
    c, kind, step, path, rel = change.commit, change.kind, change.step, change.path, change.rel
    old, new = change.old, change.new
    versions: dict[str, VState] = state["v"]
    vid = rel[: -len("-matrix.md")] if what == "matrix" else rel[:-3]
    starts = ("matrix-register",) if what == "matrix" else STARTS
    current = versions.get(vid)
    touched = state.setdefault("touched", [])
    touched.append(vid)
    if what == "matrix":
        touched.extend(f"{vid}.{name}" for name in cells_of(r, new or old, path))
    if new is None:
        if current is None:
            return
        reverted = r.reverted(c)
        renamed = kind == "rename" and any(
            p == f"{r.dir}/{step}.md" and was is None and step != vid for p, was, _ in r.diff(c)
        )
        if renamed or (
            reverted is not None
            and reverted.trailer(TRAILER_TRANSITION) in starts
            and reverted.trailer(TRAILER_STEP) == vid
        ):
            r.note(c, "withdrawn", vid, path, f"registration withdrawn: {c.subject}")
        else:
            r.finding(
                c,
                path,
                "frozen-registration",
                f"the registration of {vid} was deleted",
                f"restore it (git revert {c.id[:10]}), or git ledger void {vid} --reason ...",
                vid,
            )
        set_flags(versions, vid, add="g")
        if what == "matrix":  # its cells go with it (a cell is never open on its own)
            for name in cells_of(r, old, path):
                set_flags(versions, f"{vid}.{name}", add="g")
        return
    parsed = r.parse(what, new, path)
    if isinstance(parsed, str):
        r.finding(
            c, path, "unparseable-entry", parsed, f"restore the committed text of {path}", vid
        )
        return
    fixed, closing = frozen(what, parsed)
    model = parsed["model"]
    flags = ("m" if what == "matrix" else "") + closing_flags(what, model)
    if old is None or current is None or "g" in current[3]:
        if current is not None:
            r.finding(
                c,
                path,
                "ids-never-reused",
                f"{vid} was registered before (commit {current[0][:10]}); an id is never "
                "registered twice",
                f"register the next id instead, and git ledger void {vid} --reason ...",
                vid,
            )
        elif kind not in starts or step != vid:
            r.finding(
                c,
                path,
                "transitions-only",
                f"{vid} came into being in a commit that is not its registration "
                f"(Ledger-Transition: {c.trailer(TRAILER_TRANSITION) or 'none'}); a squash "
                "merge or a hand edit",
                squash_fix(vid),
                vid,
            )
        if current is not None and r.store.snapshot(c.id).is_tree(results_dir(r.dir, vid)):
            r.finding(
                c,
                results_dir(r.dir, vid),
                "ids-never-reused",
                f"results of {vid} recorded before its current registration never count",
                f"register the next id instead, and git ledger void {vid} --reason ...",
                vid,
            )
        versions[vid] = [c.id, fixed + ":" + closing, new, flags]
        if what == "matrix":
            for cell in model.get("cells", []):
                versions[f"{vid}.{cell.get('name')}"] = [c.id, "", "", "x" + flags.replace("m", "")]
        return
    old_frozen, _, old_closing = current[1].partition(":")
    if fixed != old_frozen:
        r.finding(
            c,
            path,
            "frozen-registration",
            f"the registered part of {vid} (front matter and Hypothesis) changed after its "
            f"registration {current[0][:10]}",
            f"a registration is a contract: git ledger void {vid} --reason ..., then register "
            "a new version",
            vid,
        )
    if closing != old_closing:
        allowed = ("matrix-conclude",) if what == "matrix" else ("conclude", "void")
        regressed = closing_regressed(r, what, old, model, path)
        if regressed:
            r.finding(
                c,
                path,
                "transitions-only",
                f"{vid}: {regressed}; a verdict is written once and never taken back",
                f"restore it (git revert {c.id[:10]}); register a new version to measure again",
                vid,
            )
        elif what == "version" and kind == "conclude" and (why := forged(r, model)):
            r.finding(
                c,
                path,
                "transitions-only",
                f"the conclusion of {vid} is not one 'conclude' could have written: {why}, "
                "and it records no override",
                f"restore it (git revert {c.id[:10]}); conclude with the verdict the "
                "statistics support, or --override REASON",
                vid,
            )
        elif kind not in allowed or step != vid:
            r.finding(
                c,
                path,
                "transitions-only",
                f"the conclusion of {vid} changed outside its conclude transition",
                f"restore it (git revert {c.id[:10]}); a verdict is written only by "
                "git ledger conclude",
                vid,
            )
        if kind == "void":
            r.note(c, "void", vid, path, str(model.get("void") or ""))
        pending = state.get("del", {})
        for gone in [p for p, (_c, _b, v) in pending.items() if v == vid]:
            r.finding(c, gone, "append-only-results", *deleted_finding(pending.pop(gone))[2:], vid)
    current[1] = old_frozen + ":" + closing
    current[2] = new
    current[3] = ("m" if what == "matrix" else "") + closing_flags(what, model)
    if what == "matrix":
        for cell in model.get("cells", []):
            cell_state = versions.get(f"{vid}.{cell.get('name')}")
            if cell_state is not None:
                cell_state[3] = "x" + current[3].replace("m", "")


def forged(r: Replay, model: dict[str, Any]) -> str | None:
    """The loop's own judgment of a conclusion against the statistics it records."""
    from ledger.core.loops import by_name

    return by_name(r.preset).conclusion_problem(model)


def closing_regressed(
    r: Replay, what: str, old: str | None, model: dict[str, Any], path: str
) -> str:
    """What a change took back from a closed version (a verdict rewritten or removed, a
    void lifted), or "": whatever the commit's trailers claim, a second conclusion is not
    one that ``conclude`` could have written (it refuses a concluded version)."""
    if old is None:
        return ""
    before = r.parse(what, old, path)
    if isinstance(before, str):
        return ""
    was = before["model"]
    if what == "matrix":
        if was.get("concluded") and not model.get("concluded"):
            return "the matrix's conclusion was removed (reopened)"
        if was.get("concluded") and was.get("winner") != model.get("winner"):
            return "the matrix's winner was changed after its conclusion"
        return ""
    if was.get("void") and not model.get("void"):
        return "its void flag was removed"
    if was.get("conclusion") and not model.get("conclusion"):
        return "its conclusion was removed (the version reopened)"
    if was.get("conclusion") and was.get("conclusion") != model.get("conclusion"):
        return "its conclusion was rewritten after it was concluded (a second conclusion)"
    return ""


def cells_of(r: Replay, blob: str | None, path: str) -> list[str]:
    if blob is None:
        return []
    parsed = r.parse("matrix", blob, path)
    if isinstance(parsed, str):
        return []
    return [str(cell.get("name")) for cell in parsed["model"].get("cells", [])]


def closing_flags(what: str, model: dict[str, Any]) -> str:
    if what == "matrix":
        return "c" if model.get("concluded") else ""
    return ("c" if model.get("conclusion") else "") + ("v" if model.get("void") else "")


def set_flags(versions: dict[str, VState], vid: str, add: str) -> None:
    current = versions.get(vid)
    if current is not None and add not in current[3]:
        current[3] += add
