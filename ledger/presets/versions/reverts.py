"""Which versions' code is reverted on HEAD: read from git's history (the git program).

A walk of the whole history cost ``register`` at 1,000 steps about a sixth of its
instructions, and its answer for a commit never changes (a commit's message is
what it is), so what was read is kept (:mod:`ledger.core.caches`): the tip it was
read at, the code commits of each version and every commit a revert names. When
that tip is an ancestor of HEAD, the history of HEAD is the history of the tip
plus ``^tip HEAD``, and only those few commits are read. A repository whose
history is not the plain commit graph (shallow, grafts, replace refs: ``git log``
would walk another graph than the one the ancestry check reads) is walked whole.
"""

from __future__ import annotations

import re
from pathlib import Path

from ledger.core import caches, gitcli
from ledger.core.store import Store

FILE = "reverts.json"

# One walk of history for both: the code commits (a Ledger-Step and no transition)
# and the reverts' bodies; each record starts with a NUL (bodies hold newlines).
_LOG = (
    "%x00%H%x1f%(trailers:key=Ledger-Step,valueonly,separator=%x2c)%x1f"
    "%(trailers:key=Ledger-Transition,valueonly,separator=%x2c)%x01%B"
)


def reverted_versions(store: Store) -> set[str]:
    """Versions whose every code commit is reverted on HEAD: a parent no bet can build on.

    After ``next``'s own advice to revert a refuted version, the default parent was still
    that version: its no-op gates then compared against code no longer there (a false
    eval-noise trigger, a forced reflection)."""
    top = store.require_workdir()
    tip = store.resolve(None)
    if tip is None or not _plain_graph(store):
        code, reverted = _walk(top, ["HEAD"], {}, set())
        return _all_reverted(code, reverted)
    file = caches.path(store.ledger_state_dir, FILE)
    cache_key = caches.key(FILE)
    code, reverted, since = _cached(store, caches.load(file, cache_key, dict), tip)
    if since != tip:
        code, reverted = _walk(top, [tip, f"^{since}"] if since else [tip], code, reverted)
        data = {"tip": tip, "code": code, "reverted": sorted(reverted)}
        caches.save(file, cache_key, data)
    return _all_reverted(code, reverted)


def _plain_graph(store: Store) -> bool:
    """Whether ``git log`` walks the commit graph the store's ancestry check reads."""
    if store.is_shallow() or (store.common_dir / "info" / "grafts").exists():
        return False
    return not store.refs("refs/replace/")


def _cached(
    store: Store, known: dict[str, object] | None, tip: str
) -> tuple[dict[str, list[str]], set[str], str | None]:
    """What the cache read at an ancestor of ``tip`` (that ancestor last), or nothing."""
    if known is None:
        return {}, set(), None
    since, code, reverted = known.get("tip"), known.get("code"), known.get("reverted")
    if not (
        isinstance(since, str)
        and isinstance(code, dict)
        and all(isinstance(v, list) for v in code.values())
        and isinstance(reverted, list)
        and store.has_commit(since)
        and store.is_ancestor(since, tip)
    ):
        return {}, set(), None
    return {str(k): [str(s) for s in v] for k, v in code.items()}, set(map(str, reverted)), since


def _walk(
    top: Path, revs: list[str], code: dict[str, list[str]], reverted: set[str]
) -> tuple[dict[str, list[str]], set[str]]:
    """``code`` and ``reverted`` with what the commits of ``revs`` add to them."""
    found = gitcli.output(
        ["log", f"--format={_LOG}", "--grep=^Ledger-Step: ", "--grep=^This reverts commit ", *revs],
        top,
    )
    for record in found.split("\0")[1:]:
        head, _, body = record.partition("\x01")
        sha, step, kind = [*head.split("\x1f"), "", ""][:3]
        if step.strip() and not kind.strip():  # a code commit: its step and no transition
            code.setdefault(step.strip(), []).append(sha.strip())
        reverted.update(re.findall(r"This reverts commit ([0-9a-f]{40})", body))
    return code, reverted


def _all_reverted(code: dict[str, list[str]], reverted: set[str]) -> set[str]:
    return {vid for vid, shas in code.items() if all(sha in reverted for sha in shas)}
