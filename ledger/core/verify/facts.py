"""The facts of every parent of a merge, folded (DESIGN: "Facts: what was recorded stays
recorded, across all of history").

Each commit of one line is judged against its parent by the rules of :mod:`.results`,
:mod:`.registrations` and the preset's ``history_rules``: a fact changes there only by
its transition (``record --replace``) and disappears only by a withdrawal (a whole
``git revert``). What one line cannot see is a merge: an adversary branches from before
the unwelcome results, records the same seeds again with better numbers, concludes, and
merges the real history with ``git merge -s ours`` (or resolves the conflicts to his
side). Every path of the merge equals one side's, every line passes on its own.

So a merge is judged as git itself merges, key by key, over the facts the preset
declares (:meth:`ledger.core.loops.Preset.fact_kinds`): against the merge base, a key
that two sides changed to different values was recorded twice (``fact-replaced``);
a key one side changed must read as that side has it in the merge (else
``fact-lost``, or ``fact-replaced`` for another value). A withdrawal on one side is a
change like any other; a withdrawn fact the merge keeps as it was recorded is not a
second value. Only the paths that differ between the base, the sides and the merge
are read (each blob once, its facts by blob id), so a merge costs its diffs.
"""

from __future__ import annotations

from collections.abc import Sequence

from ledger.core.commitinfo import CommitInfo
from ledger.core.commitrules import glob_match
from ledger.core.facts import Fact, FactFn
from ledger.core.verify.replay import Replay

# The values one tree holds for a key (one, as a rule; two is itself a second value).
Values = frozenset[str]
_NONE: Values = frozenset()


def fact_kinds(r: Replay) -> list[tuple[str, FactFn]]:
    if r.fact_kinds is None:
        from ledger.core.loops import by_name

        r.fact_kinds = by_name(r.preset).fact_kinds()
    return r.fact_kinds


def merge_facts(r: Replay, c: CommitInfo) -> None:
    """Mark ``fact-replaced`` / ``fact-lost`` on the merge ``c`` (findings of ``c`` alone,
    cached with it)."""
    kinds = fact_kinds(r)
    if not kinds or len(c.parents) < 2:
        return
    base = _base(r, c.parents)
    prefix = r.dir + "/"
    # path -> blob in the base, in each parent, in the merge (only paths that differ)
    at_base: dict[str, str | None] = {}
    sides: list[dict[str, str | None]] = []
    for parent in c.parents:
        changed: dict[str, str | None] = {}
        for path, old, new in r.store.changes(base, parent):
            if path.startswith(prefix) and _kind(kinds, path[len(prefix) :]) is not None:
                at_base[path] = old
                changed[path] = new
        sides.append(changed)
    merged: dict[str, str | None] = {}
    for path, old, new in r.diff(c):  # against the first parent
        if path.startswith(prefix) and _kind(kinds, path[len(prefix) :]) is not None:
            merged[path] = new
            if path not in at_base and path not in sides[0]:
                at_base[path] = old  # unchanged on every side: the first parent's is the base's
    if not at_base:
        return
    paths = sorted(at_base)
    read: dict[tuple[str, str], list[Fact]] = {}

    def facts_of(blobs: dict[str, str | None]) -> dict[str, tuple[Values, str, str]]:
        """key -> (values, step, a path that holds it) in one tree."""
        out: dict[str, tuple[Values, str, str]] = {}
        for path in paths:
            blob = blobs[path]
            if blob is None:
                continue
            rel = path[len(prefix) :]
            if (path, blob) not in read:
                fn = _kind(kinds, rel)
                read[(path, blob)] = fn(r, rel, blob) if fn is not None else []
            for fact in read[(path, blob)]:
                values, _step, _where = out.get(fact.key, (_NONE, "", ""))
                out[fact.key] = (values | {fact.value}, fact.step, path)
        return out

    before = facts_of(at_base)
    trees = [facts_of({p: side.get(p, at_base[p]) for p in paths}) for side in sides]
    first = {p: sides[0].get(p, at_base[p]) for p in paths}
    after = facts_of({p: merged.get(p, first[p]) for p in paths})
    keys = set(before) | set(after) | {k for tree in trees for k in tree}
    for key in sorted(keys):
        _judge(r, c, base, key, before, trees, after)


def _judge(
    r: Replay,
    c: CommitInfo,
    base: str | None,
    key: str,
    before: dict[str, tuple[Values, str, str]],
    trees: list[dict[str, tuple[Values, str, str]]],
    after: dict[str, tuple[Values, str, str]],
) -> None:
    was = before.get(key, (_NONE, "", ""))[0]
    holders = [t[key] for t in [*trees, after, before] if key in t]
    _values, step, path = holders[0]
    since = f"since {base[:10]}" if base else "in unrelated histories"
    fix = (
        f"redo the merge keeping every side's facts (git revert -m 1 {c.id[:10]}); a fact "
        "is recorded once: measure again under a new key (a new seed, replicate, step or "
        "batch), or replace it with its verb on the line that holds it"
    )
    changed = {values for t in trees if (values := t.get(key, (_NONE,))[0]) != was}
    if len(changed) > 1:
        r.finding(
            c,
            path,
            "fact-replaced",
            f"{key} was recorded on two sides of this merge {since}, with different "
            "values: history holds it twice",
            fix,
            step,
        )
        return
    wanted = next(iter(changed)) if changed else was
    now = after.get(key, (_NONE,))[0]
    if now == wanted or (not wanted and now == was):
        # As the side that changed it has it; or a withdrawn fact kept as recorded.
        return
    if not now:
        r.finding(
            c,
            path,
            "fact-lost",
            f"{key}, recorded on a side of this merge {since}, is not in the merge: "
            "the merge dropped it without a withdrawal",
            fix,
            step,
        )
        return
    r.finding(
        c,
        path,
        "fact-replaced",
        f"{key} holds a value in this merge that its sides did not record: history holds it twice",
        fix,
        step,
    )


def _kind(kinds: list[tuple[str, FactFn]], rel: str) -> FactFn | None:
    return next((fn for glob, fn in kinds if glob_match(rel, glob)), None)


def _base(r: Replay, parents: Sequence[str]) -> str | None:
    """The merge base of every parent (None: unrelated histories)."""
    base: str | None = parents[0]
    for other in parents[1:]:
        if base is None:
            return None
        found = r.store.repo.merge_base(base, other)
        base = str(found) if found else None
    return base
