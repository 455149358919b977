"""The replay of history, parents first, and :func:`verify`, which every caller uses.

Replay is incremental: the state after a verified tip is cached by commit id under
``.git/ledger/``, so a repeated call reads only the new commits. Findings of a commit
depend only on the commit and its parents, so they are cached by commit id too.
"""

from __future__ import annotations

import json
from typing import Any

from ledger.core import caches
from ledger.core.commitinfo import CommitInfo
from ledger.core.errors import BadInput, LedgerError
from ledger.core.repobase import base_id
from ledger.core.verify.commits import merge_commit, step_commit
from ledger.core.verify.findings import Finding, Note, Report, deleted_finding
from ledger.core.verify.gitlog import log_changes
from ledger.core.verify.replay import NeedsFull as NeedsFull
from ledger.core.verify.replay import Replay, VState
from ledger.core.verify.witness import witness_findings
from ledger.core.verifycache import RULES_VERSION

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: the incremental path stays light
if TYPE_CHECKING:
    from ledger.core.store import Store

CACHE_FILE = "verify-cache.json"
# The history rules' version (and the cache's format): a cache or a saved report made by
# other rules is never read, so a rule that now accepts a kind of transition (or finds
# more) is applied to the whole history at once.
CACHE_VERSION = RULES_VERSION
KEEP_CONFIGS = 8  # configuration blobs whose verdict-affecting tables are cached
KEEP_TIPS = 4


def require_full(store: Store) -> None:
    """Exit 2 in a shallow clone: the history that proves the ledger is not there."""
    if store.is_shallow():
        raise BadInput(
            "cannot verify a shallow clone: the history that proves the ledger is missing",
            "git fetch --unshallow",
        )


def _key(r: Replay) -> str:
    return caches.key(
        CACHE_FILE,
        str(CACHE_VERSION),
        r.dir,
        r.prefix,
        r.preset,
        r.config_file,
        f"{r.free}{r.strict}",
    )


def replay(
    store: Store, config: Any, config_file: str, tip: str
) -> tuple[dict[str, Any], dict[str, Any]]:
    """(state at ``tip``, per-commit marks), from the cache plus the new commits."""
    require_full(store)
    r = Replay(store, config, config_file)
    cache_path = str(store.ledger_state_dir / CACHE_FILE)
    cache_key = _key(r)
    cache = _load_cache(cache_path, cache_key)
    tips: dict[str, Any] = cache["tips"]
    r.marks = cache["marks"]
    r.config_cache = cache["cfg"]
    if tip in tips:
        return tips[tip], r.marks
    light = bool(getattr(store, "light", False))
    if light:
        # The newest cached tip, unchecked: if HEAD does not descend from it, the walk
        # meets a parent that is not cached (or nothing at all) and the full replay runs.
        anchors = list(tips)[-1:]
        if not anchors:
            raise NeedsFull(tip)
        try:
            logged = log_changes(store, tip, anchors)
        except BadInput:
            raise NeedsFull(tip) from None
        if not logged:
            raise NeedsFull(tip)
    else:
        anchors = [t for t in tips if store.has_commit(t) and store.is_ancestor(t, tip)]
        logged = log_changes(store, tip, anchors)
    states: dict[str, dict[str, Any]] = {a: tips[a] for a in anchors}
    if any(p not in states for p in _outside(logged)):
        if light:
            raise NeedsFull(tip)
        # A parent hidden by an anchor but not itself cached: replay from the root.
        logged = log_changes(store, tip, [])
        states = {}
    todo = [c for c, _changes in logged]
    r.expect(_ledger_paths(logged, r.dir))
    for c, changes in logged:
        if changes is not None:
            r.diffs[c.id] = changes
        r.marks.pop(c.id, None)  # replayed again: its marks are made afresh
    needs: dict[str, int] = {}
    for c in todo:
        for p in c.parents:
            needs[p] = needs.get(p, 0) + 1
    kept = set(tips) - set(anchors)  # anchors are superseded by the new tip (below)
    for c in todo:
        parents = []
        for p in c.parents:
            needs[p] -= 1
            st = states[p]
            if needs[p] == 0 and p not in kept:  # the last child takes it over, uncopied
                del states[p]
                parents.append(st)
            else:
                parents.append(json.loads(json.dumps(st)))
        if len(parents) > 1:
            state = merge_commit(r, c, parents)
        else:
            state = parents[0] if parents else _empty()
            step_commit(r, c, state)
        if c.id in r.marks and c.id not in state["marks"]:
            state["marks"].append(c.id)
        states[c.id] = state
    final = states[tip]
    for anchor in anchors:
        # An ancestor's state is superseded by its descendant's (and the cache stays one
        # state long while HEAD moves forward); tips of other branches are kept.
        tips.pop(anchor, None)
    tips[tip] = final
    for old in list(tips)[:-KEEP_TIPS]:
        del tips[old]
    configs = dict(list(r.config_cache.items())[-KEEP_CONFIGS:])
    _save_cache(cache_path, cache_key, {"tips": tips, "marks": r.marks, "cfg": configs})
    r.save_entries()
    return final, r.marks


def verify(
    store: Store,
    config: Any,
    config_file: str = "ledger.toml",
    tip: str | None = None,
    since: list[str] | None = None,
) -> Report:
    """Every history rule for the commits reachable from ``tip`` (default HEAD).

    ``since``: report only findings of commits not reachable from these (a
    pushed range); the replay still starts at the root (or the cache).
    """
    tip_id = store.resolve(tip)
    report = Report(tip=tip_id)
    if tip_id is None:
        return report
    state, marks = replay(store, config, config_file, tip_id)
    hidden: set[str] = set()
    if since:
        hidden = {c for c in state["marks"] if any(store.is_ancestor(c, s) for s in since if s)}
    for commit in state["marks"]:
        if commit in hidden:
            continue
        mark = marks.get(commit, {})
        for path, rule, msg, fix, step in mark.get("f", []):
            report.findings.append(Finding(commit, path, rule, msg, fix, step))
        for kind, step, path, text in mark.get("n", []):
            report.notes.append(Note(commit, kind, step, path, text))
    versions: dict[str, VState] = state["v"]
    report.ever = {vid for vid, vs in versions.items() if "x" not in vs[3]}
    report.registrations = {vid: vs[0] for vid, vs in versions.items() if "g" not in vs[3]}
    report.void = {vid for vid, vs in versions.items() if "v" in vs[3]}
    for path, pending in sorted(state.get("del", {}).items()):
        commit, rule, msg, fix = deleted_finding(pending)
        if commit not in hidden:
            report.findings.append(Finding(commit, path, rule, msg, fix, pending[2]))
    report.findings += witness_findings(store, versions, hidden)
    # A void version's findings stay on record as notes: its results never count.
    kept = []
    for f in report.findings:
        if f.step and (f.step in report.void or base_id(f.step) in report.void):
            report.notes.append(Note(f.commit, "void", f.step, f.path, f"[{f.rule}] {f.message}"))
        else:
            kept.append(f)
    report.findings = kept
    if not since:
        from ledger.core import verifycache

        verifycache.save(
            str(store.ledger_state_dir),
            str(store.common_dir),
            tip_id,
            [f.as_json() for f in report.findings],
            [n.as_json() for n in report.notes],
        )
    return report


def history_notes(store: Store, config: Any, config_file: str) -> list[dict[str, str]]:
    """verify's notes for HEAD (withdrawn, replaced, config, void, restored), shown forever
    by log, show and the reports; none when history cannot be verified (a shallow clone)."""
    from ledger.core import verifycache

    tip = store.resolve(None)
    if tip is None:
        return []
    if verifycache.load(str(store.ledger_state_dir), str(store.common_dir), tip) is not None:
        return verifycache.load_notes(str(store.ledger_state_dir))
    try:
        return [n.as_json() for n in verify(store, config, config_file, tip).notes]
    except LedgerError:
        return []


def _ledger_paths(logged: list[tuple[CommitInfo, Any]], directory: str) -> int | None:
    """How many paths in the ledger dir the logged commits change; None with a merge
    among them (its changes are read later)."""
    base = directory + "/"
    count = 0
    for _c, changes in logged:
        if changes is None:
            return None
        count += sum(1 for path, _old, _new in changes if path.startswith(base))
    return count


def _outside(logged: list[tuple[CommitInfo, Any]]) -> set[str]:
    """Parents of the logged commits that are not themselves logged."""
    ids = {c.id for c, _changes in logged}
    return {p for c, _changes in logged for p in c.parents if p not in ids}


def _empty() -> dict[str, Any]:
    return {"v": {}, "cfg": False, "marks": []}


def _load_cache(path: str, key: str) -> dict[str, Any]:
    data = caches.load(path, key, dict)
    if (
        data is None
        or not isinstance(data.get("tips"), dict)
        or not isinstance(data.get("marks"), dict)
    ):
        return {"tips": {}, "marks": {}, "cfg": {}}
    configs = data.get("cfg")
    valid = isinstance(configs, dict) and all(
        isinstance(v, dict) and all(isinstance(t, str) for t in v.values())
        for v in configs.values()
    )
    data["cfg"] = configs if valid else {}
    return data


def _save_cache(path: str, key: str, data: dict[str, Any]) -> None:
    caches.save(path, key, data)  # one that cannot be written only costs time
