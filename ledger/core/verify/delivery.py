"""A delivery ends the ledger on a branch of its own (the campaign's ``deliver``).

Its last commit, of kind ``deliver``, takes the configuration away and may only delete
the ledger's entries and write the documents the preset delivers; after it the branch
holds no ledger, and one brought back is a finding (:func:`ended`). The hooks' ref
rule (:func:`ledger.hooks.server.ended_in_place`) keeps a ledger's own branch from
being ended in place.
"""

from __future__ import annotations

from typing import Any

from ledger.core.commitinfo import CommitInfo
from ledger.core.repobase import CONFIG_FILES, project_part
from ledger.core.verify.replay import NeedsFull, Replay

# The ledger commit a delivery was made from: verify reads the delivery against it.
TRAILER_DELIVERED_FROM = "Ledger-Delivered-From"


def delivery_end(
    r: Replay, c: CommitInfo, changes: list[tuple[str, str | None, str | None]], state: Any
) -> bool:
    """A delivery ends the ledger on a branch of its own (the campaign's ``deliver``):
    a commit of kind ``deliver`` on one parent that takes the ledger's configuration
    away. Inside the ledger dir it may only delete entries and write the documents the
    preset delivers (:meth:`ledger.core.loops.Preset.delivered`), and it changes no
    code. True when ``c`` is one: the branch holds no ledger after it. A branch that
    holds a ledger where it is pushed is never ended in place (the hooks' ref rule)."""
    configs = [(path, old, new) for path, old, new in changes if path in CONFIG_FILES]
    if len(c.parents) != 1 or any(r.layout(new, path) is not None for path, _o, new in configs):
        return False  # a ledger goes on here: judged as any commit of this kind
    # The file that configured the ledger before this commit (either of the two).
    name, old, new = next(
        (item for item in configs if r.layout(item[1], item[0]) is not None), ("", None, None)
    )
    if old is None:
        return False
    import tomllib

    from ledger.core.loops import by_name
    from ledger.core.repobase import ledger_table

    try:
        data = tomllib.loads(r.read_blob(old).decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError):
        return False
    kept = by_name(r.preset).delivered(ledger_table(data, name) or {})
    if kept is None:
        return False
    base = r.dir + "/"
    stray = [
        path
        for path, _old, new in changes
        if path != name
        and not (path.startswith(base) and (new is None or path[len(base) :] in kept))
    ]
    if new is not None and project_part(r.read_blob(new)) != project_part(r.read_blob(old)):
        stray.insert(0, f"{name} beyond its ledger tables")
    if getattr(r.store, "light", False):
        raise NeedsFull(c.id)  # what the delivery was made from: the full program reads it
    source = (c.trailer(TRAILER_DELIVERED_FROM) or "").strip()
    problems = (
        by_name(r.preset).delivery_problems(r.store, source, c.id)
        if source
        else [f"it names no ledger commit it was made from ({TRAILER_DELIVERED_FROM})"]
    )
    for problem in problems:
        r.finding(
            c,
            name,
            "delivered-tree",
            f"this delivery is not the ledger's: {problem}",
            "push the ledger's branch with its delivery (git push REMOTE BRANCH "
            "DELIVERY); a delivery that differs from its ledger is made again from the "
            "finished ledger (git ledger deliver --branch NAME)",
            "",
        )
    if stray:
        r.finding(
            c,
            stray[0],
            "config-frozen",
            "a delivery ends the ledger: it deletes the ledger's entries and writes only "
            f"{', '.join(kept)}; this one also changes {', '.join(stray[:3])}",
            "deliver again (git ledger deliver --branch NAME) and drop this branch; code "
            "comes to a delivery only from the candidates it keeps",
            "",
        )
    state["end"] = c.id
    return True


def ended(
    r: Replay, c: CommitInfo, changes: list[tuple[str, str | None, str | None]], state: Any
) -> None:
    """After a delivery the branch is no ledger: what it carries is code and documents,
    and a configuration that brings a ledger back is a finding."""
    if state["end"] == c.id:
        return
    for path, _old, new in changes:
        if path in CONFIG_FILES and r.layout(new, path) is not None:
            r.finding(
                c,
                path,
                "config-frozen",
                f"the ledger ended on this branch with its delivery {state['end'][:10]}: "
                "a delivery branch holds no ledger",
                f"keep the ledger on its own branch (git revert {c.id[:10]})",
                "",
            )
