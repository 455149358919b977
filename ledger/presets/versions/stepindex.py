"""Every commit of HEAD's history that names a step, in the order ``Store.walk`` reads them.

:func:`ledger.presets.versions.readiness.history_of` walks back from HEAD until it has
met the registrations it was asked for. A request that reaches back to the ledger's
first version (a report, ``flags_of`` of every version) walks the whole history: 7,000
commits at 1,000 versions, a tenth of an HTML report. What that walk reads for a tip
never changes, so it is kept (:mod:`ledger.core.caches`) with the tip it was read at:
each commit's id, step and kind, for the commits that carry a step.

A HEAD that only adds single-parent commits on top of the kept tip (the loop's own
transitions, a code commit) reads just those: a topological walk meets each of them
before the tip, newest first, and the tip's history after them as it was. Anything
else (a merge, a reset, another branch) is walked whole again and kept in turn.
"""

from __future__ import annotations

from ledger.core import caches
from ledger.core.commitinfo import CommitInfo
from ledger.core.store import TRAILER_STEP, TRAILER_TRANSITION, Store

FILE = "steps.json"
# How many new commits are read on top of the kept tip before the whole walk is cheaper.
REACH = 512

Row = tuple[str, str, str | None]  # commit id, its step, its transition kind (None: code)


def steps(store: Store) -> list[Row]:
    """The commits of HEAD's history that carry a step, newest first (``Store.walk``)."""
    tip = store.resolve(None)
    if tip is None:
        return []
    file = caches.path(store.ledger_state_dir, FILE)
    cache_key = caches.key(FILE)
    kept = _kept(caches.load(file, cache_key, dict))
    if kept is not None and kept[0] == tip:
        return kept[1]
    rows = _on_top(store, tip, kept) if kept is not None else None
    if rows is None:
        rows = [row for row in map(_row, store.walk(tip)) if row is not None]
    caches.save(file, cache_key, {"tip": tip, "rows": [list(r) for r in rows]})
    return rows


def _kept(data: dict[str, object] | None) -> tuple[str, list[Row]] | None:
    """The kept tip and rows, when the file holds exactly that shape."""
    if data is None:
        return None
    tip, raw = data.get("tip"), data.get("rows")
    if not isinstance(tip, str) or not isinstance(raw, list):
        return None
    rows: list[Row] = []
    for item in raw:
        if not (
            isinstance(item, list)
            and len(item) == 3
            and isinstance(item[0], str)
            and isinstance(item[1], str)
            and (item[2] is None or isinstance(item[2], str))
        ):
            return None
        rows.append((item[0], item[1], item[2]))
    return tip, rows


def _on_top(store: Store, tip: str, kept: tuple[str, list[Row]]) -> list[Row] | None:
    """The rows of ``tip`` from the kept ones, when ``tip`` is the kept tip plus a chain
    of single-parent commits; None when it is not (or the chain is longer than REACH)."""
    since, rows = kept
    if not store.has_commit(since) or not store.is_ancestor(since, tip):
        return None  # another branch, a reset: no chain leads back to the kept tip
    chain: list[CommitInfo] = []
    at = tip
    while at != since:
        if len(chain) >= REACH or not store.has_commit(at):
            return None
        info = store.commit_info(at)
        if len(info.parents) != 1:
            return None
        chain.append(info)
        at = info.parents[0]
    return [row for row in map(_row, chain) if row is not None] + rows


def _row(info: CommitInfo) -> Row | None:
    step = info.trailer(TRAILER_STEP)
    return None if step is None else (info.id, step, info.trailer(TRAILER_TRANSITION))
