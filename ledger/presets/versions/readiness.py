"""Whether a version's results are ready for a verdict (before ``conclude`` commits one).

A verdict concluded while a run of the version still runs, or after a detached run
was killed half-way, silently stands on fewer seeds than were started; one concluded
on results measured on a dirty work tree, or before the version's code was committed,
stands on code nobody can check out. ``conclude`` refuses those (``--override REASON``
records the exception), and ``show`` names the flagged results.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable
from dataclasses import dataclass

from ledger.core.errors import BadInput, Refused
from ledger.core.history import STARTS
from ledger.core.model.ids import VersionId
from ledger.core.runfiles import alive
from ledger.core.state import LedgerState, Result
from ledger.core.store import TRAILER_STEP, TRAILER_TRANSITION, Store
from ledger.presets.versions import stepindex
from ledger.presets.versions.stepindex import Row

SEED_IN_LABEL = re.compile(r"\bseed (\S+)")


@dataclass(frozen=True)
class Flags:
    dirty: tuple[str, ...]  # result paths measured on a dirty work tree
    before_code: tuple[str, ...]  # result paths measured before any code commit of the version
    # Result paths not comparable with the others of the version: measured at an older code
    # commit of it than the newest its results were, or under other run conditions. Pooled
    # with no flag, they mixed two bets into one verdict (issue 26).
    mixed: tuple[str, ...] = ()

    def lines(self) -> list[str]:
        out = []
        if self.mixed:
            out.append(
                "measured at another code commit of the version, or under other conditions, "
                "than its other results: " + ", ".join(self.mixed)
            )
        if self.dirty:
            out.append(f"measured on a dirty work tree: {', '.join(self.dirty)}")
        if self.before_code:
            out.append(
                "measured before any code commit of the version: " + ", ".join(self.before_code)
            )
        return out


def _records_of(records: Iterable[dict[str, object]], vid: str) -> list[dict[str, object]]:
    return [r for r in records if r.get("step") == vid]


def running_runs(records: Iterable[dict[str, object]], vid: str) -> list[dict[str, object]]:
    # A record is alive by its PID *and* start time: a reused PID is never our run.
    return [r for r in _records_of(records, vid) if alive(r)]


def started_seeds(records: Iterable[dict[str, object]], vid: str, gate: str) -> set[str]:
    """Seeds that runs of ``vid`` on ``gate`` started (from their records, alive or not)."""
    seeds: set[str] = set()
    for record in _records_of(records, vid):
        if record.get("gate") != gate:
            continue
        argv = record.get("argv")
        listed = record.get("seeds")
        if record.get("batch") and isinstance(listed, list) and listed:
            seeds.update(str(s) for s in listed)
            continue
        if record.get("batch") and isinstance(argv, list) and "--seeds" in argv:
            at = argv.index("--seeds") + 1
            if at < len(argv):
                seeds.update(s for s in str(argv[at]).split(",") if s)
            continue
        found = SEED_IN_LABEL.search(str(record.get("label", "")))
        if found:
            seeds.add(found.group(1))
    return seeds


def missing_seeds(
    records: Iterable[dict[str, object]], vid: str, gate: str, measured: Iterable[str]
) -> tuple[str, ...]:
    """Seeds that runs of ``vid`` on ``gate`` started and that have no result (``measured``:
    the keys of its results on the gate, failed ones too): a verdict now would stand on
    fewer seeds than were started (a run killed half-way)."""
    return tuple(sorted(started_seeds(records, vid, gate) - set(measured)))


def code_commits(store: Store, vid: str, registration: str) -> list[str]:
    """The version's code commits (its Ledger-Step, no transition) since its registration.

    The commits reachable from HEAD but not from the registration (``registration..HEAD``,
    as git rev-list counts them): the walk is bounded by the registration through the
    graph, never by commit dates, so a clock that ran ahead on one machine cannot hide
    a code commit merged from another; and it does not sort the whole history first.
    """
    head = store.resolve(None)
    if head is None:
        return []
    try:
        since = store.walk_new(head, [registration])
    except BadInput:
        # The registration is not in this (shallow) history: everything back to its edge.
        since = list(store.walk(head))
    return [
        info.id
        for info in since
        if info.trailer(TRAILER_STEP) == vid and info.trailer(TRAILER_TRANSITION) is None
    ]


def code_commits_of(state: LedgerState, store: Store, vids: Iterable[str]) -> dict[str, list[str]]:
    """Each version's code commits since its registration, in one walk back from HEAD."""
    return {vid: commits for vid, (_, commits) in history_of(state, store, vids).items()}


def history_of(
    state: LedgerState, store: Store, vids: Iterable[str]
) -> dict[str, tuple[str, list[str]]]:
    """Each version's registration commit and code commits since, in one walk back from HEAD.

    A matrix cell starts at its matrix's registration. The walk stops once every
    registration is found, or at the registration of a version older than all of them
    (ids grow), so a version registered elsewhere (a cell seen from its base, an entry
    added by hand) is left out. The walk is topological (``Store.walk``: no commit
    before its children, whatever the commit dates say): a date-ordered walk met a
    registration dated ahead before the code merged from a branch, and flagged results
    measured after that code as measured before it.
    """
    starts: dict[str, str] = {}  # the step whose registration starts the version
    for vid in vids:
        version = state.version(vid)
        starts[vid] = version.front.matrix if version and version.front.matrix else vid
    done: dict[str, tuple[str, list[str]]] = {}
    if not starts:
        return done
    found: dict[str, list[str]] = {vid: [] for vid in starts}
    by_start: dict[str, list[str]] = {}
    for vid, at in starts.items():
        by_start.setdefault(at, []).append(vid)
    oldest = min(state.version_key(v) for v in set(starts.values()))
    for commit, step, kind in _stepped(state, store, oldest):
        if kind is None:
            if step in found:
                found[step].append(commit)
            continue
        if kind not in STARTS and kind != "matrix-register":
            continue
        for vid in [v for v in by_start.get(step, ()) if v in found]:
            done[vid] = (commit, found.pop(vid))
        if not found or state.version_key(step) < oldest:
            break
    return done


def _stepped(state: LedgerState, store: Store, oldest: VersionId) -> Iterable[Row]:
    """The commits of HEAD's history that carry a step, newest first: read from the kept
    index when the walk reaches back to the ledger's first version (it reads the whole
    history then), else walked lazily (a walk for recent versions stops early)."""
    if state.versions and oldest <= min(state.version_key(v.id) for v in state.versions):
        return stepindex.steps(store)
    return (
        (info.id, step, info.trailer(TRAILER_TRANSITION))
        for info in store.walk(None)
        if (step := info.trailer(TRAILER_STEP)) is not None
    )


def flags_of(
    store: Store,
    state: LedgerState,
    vids: Iterable[str],
    found: dict[str, tuple[str, list[str]]] | None = None,
) -> dict[str, Flags]:
    """:func:`flags` of several versions, reading history once (status, reports);
    ``found``: their :func:`history_of`, when the caller has read it already."""
    wanted = list(vids)
    if found is None:
        found = history_of(state, store, wanted)
    commits = {vid: listed for vid, (_, listed) in found.items()}
    by_version: dict[str, list[Result]] = {vid: [] for vid in wanted}
    for r in state.results:
        if r.version in by_version and r.status == "ok":
            by_version[r.version].append(r)
    return {vid: flags(store, state, vid, commits.get(vid), by_version[vid]) for vid in wanted}


def flags(
    store: Store,
    state: LedgerState,
    vid: str,
    commits: list[str] | None,
    results: list[Result] | None = None,
) -> Flags:
    """Flagged results of ``vid``; ``commits`` None when the version needs no code (a first
    measurement with no parent) or history was not read."""
    version = state.version(vid)
    if results is None:
        results = [r for r in state.results if r.version == vid and r.status == "ok"]
    dirty = tuple(r.path for r in results if r.dirty)
    before: list[str] = []
    # Result path -> how many code commits of the version its code contains: results with
    # fewer ran at older code of the version than the others (any order of ``commits``).
    ran: dict[str, int] = {}
    if commits is not None and version is not None and version.front.parent:
        # Only results `run` measured here say which code they ran (Result.ran_at).
        for r in results:
            by_run, at = r.ran_at
            if not by_run:
                continue
            contained = (
                0
                if at is None
                else sum(1 for c in commits if c == at or store.repo.descendant_of(at, c))
            )
            if not contained:
                before.append(r.path)
            elif not r.remeasured:  # at the version's own code, after the verdict: never pooled
                ran[r.path] = contained
    newest = max(ran.values(), default=0)
    mixed = {path for path, n in ran.items() if n < newest}
    by_gate: dict[str, list[Result]] = {}
    for r in results:
        if r.remeasured:
            continue
        by_gate.setdefault(r.gate, []).append(r)
    for rows in by_gate.values():
        seen = [tuple(sorted(r.conditions.items())) for r in rows]
        usual = max(sorted(set(seen)), key=seen.count) if seen else ()
        mixed.update(r.path for r, c in zip(rows, seen, strict=True) if c != usual)
    return Flags(dirty, tuple(before), tuple(sorted(mixed)))


def wait_or_refuse(records: list[dict[str, object]], vid: str, *, wait: bool) -> None:
    """No verdict while a run of ``vid`` still runs; with ``wait``, wait for it to end."""
    live = running_runs(records, vid)
    while live and wait:
        time.sleep(0.5)
        live = [r for r in live if alive(r)]
    if live:
        labels = ", ".join(f"{r.get('label')} (pid {r.get('pid')})" for r in live)
        raise Refused(
            f"[run-in-progress] a run of {vid} is still running: {labels}",
            f"wait for it: git ledger wait, or git ledger conclude {vid} --wait ...",
        )


def check_results(state: LedgerState, vid: str, missing: Iterable[str], found: Flags) -> None:
    """Refuse a verdict on results that are missing or unreproducible (--override skips);
    ``missing`` and ``found``: the missing seeds and the flags of the version's reading."""
    version = state.version(vid)
    if version is None:
        return
    gate = version.front.gate
    if missing:
        seeds = ",".join(missing)
        raise Refused(
            f"[results-missing] seeds {seeds} of {vid} on '{gate}' were started but have no results",
            f"run them: git ledger run {vid} --gate {gate} --seeds {seeds} (or --override REASON)",
        )
    if found.dirty or found.before_code or found.mixed:
        raise Refused(
            f"[unreproducible-results] {vid}: " + "; ".join(found.lines()),
            "commit the code and measure again (git ledger run ... --replace REASON), "
            "or --override REASON",
        )
