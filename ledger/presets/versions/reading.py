"""One reading of a version: the evidence every judgment of it stands on, built once.

``conclude``, its dry run, ``next`` and ``status`` judge a version from one
:class:`Reading`: its results, the configuration frozen at its registration
(invariant 4: a change made after it applies to later versions only), its code
commits since the registration and the flags on its results. They used to ask
each on their own, and disagreed: after ``config set ... noise_floor`` following
results, the dry run and ``next`` judged with today's ledger.toml ("confirmed:
allowed") while ``conclude`` judged with the frozen one and refused.

A command builds the readings it needs once (:func:`read` for one version,
:func:`read_open` for the open ones, one walk of history for all of them) and
passes them down; the verdict checks are methods of the reading, so the dry run
is conclude's own code up to the write.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ledger.core import runfiles
from ledger.core.model.entries import VERDICTS, GateStat
from ledger.core.state import LedgerState, Result, Version
from ledger.presets.versions import readiness
from ledger.presets.versions.baseline import NO_RESULTS
from ledger.presets.versions.verdicts import contradiction, evidence

if TYPE_CHECKING:
    from ledger.core.store import Store


@dataclass(frozen=True)
class Reading:
    version: Version
    # The entries as read, under the configuration frozen at the registration (the
    # configuration of today when the registration is not on this branch).
    state: LedgerState
    registration: str | None
    results: tuple[Result, ...]  # ok results on the targeted gate: what a verdict stands on
    failed: tuple[Result, ...]  # failed runs on the targeted gate
    gates: tuple[GateStat, ...]  # the statistics per gate measured, the targeted one first
    commits: tuple[str, ...] | None  # code commits since the registration (None: not read)
    flags: readiness.Flags
    # Seeds runs of the version started on its gate that have no result (a run killed
    # half-way): conclude refuses until they are measured, and next measures them.
    missing: tuple[str, ...] = ()

    @property
    def id(self) -> str:
        return self.version.id

    @property
    def gate(self) -> str:
        return self.version.front.gate

    @property
    def target(self) -> GateStat:
        return self.gates[0]

    def contradiction(self, verdict: str) -> str | None:
        """Why the numbers contradict ``verdict`` (None: they allow it)."""
        return contradiction(verdict, self.target, self.version.front.effect)

    def allowed(self) -> dict[str, str | None]:
        """Per verdict: None if the numbers allow it, else why not."""
        return {v: self.contradiction(v) for v in VERDICTS}

    def supported(self) -> str:
        """The first verdict the numbers allow, in the order confirmed, refuted, inconclusive."""
        return next((v for v in VERDICTS if self.contradiction(v) is None), "inconclusive")

    def unjudged(self) -> str | None:
        """Why results on the gate say nothing under the frozen configuration (None: they do).

        Results carry the metrics ledger.toml mapped when they were recorded; when the
        gate's metric was changed after the registration (a template's ``score`` fixed
        to what the evaluation writes), the frozen metric is in none of them, and no
        new measurement can add it.
        """
        if not self.results or self.target.outcome != NO_RESULTS:
            return None
        return (
            f"{self.id}'s {len(self.results)} result(s) on '{self.gate}' carry no "
            f"'{self.target.metric}', the gate's metric frozen at its registration "
            "(ledger.toml changed after it)"
        )


def read(
    store: Store | None,
    state: LedgerState,
    vid: str,
    registration: str | None,
    commits: Iterable[str] | None,
    records: Iterable[dict[str, object]] = (),
) -> Reading:
    """The reading of ``vid`` in ``state``; ``registration`` its registration commit on this
    branch (None: not found, today's configuration applies), ``commits`` its code commits
    since (None: history not read, or the version needs none), ``records`` the run
    records (what runs started)."""
    from ledger.core.verify import frozen_config

    version = state.version(vid)
    if version is None:
        raise state.no_version(vid)
    frozen: LedgerState = (
        frozen_config(store, state, registration)
        if store is not None and registration is not None
        else state
    )
    gate = version.front.gate
    listed = None if commits is None else tuple(commits)
    return Reading(
        version=version,
        state=frozen,
        registration=registration,
        results=tuple(frozen.results_for(vid, gate)),
        failed=tuple(r for r in frozen.results_for(vid, gate, ok_only=False) if r.status != "ok"),
        gates=tuple(evidence(frozen, vid)),
        commits=listed,
        flags=readiness.flags(store, state, vid, None if listed is None else list(listed))
        if store is not None
        else readiness.Flags((), ()),
        missing=readiness.missing_seeds(
            records, vid, gate, (r.key for r in frozen.results_for(vid, gate, ok_only=False))
        ),
    )


def read_open(
    store: Store, state: LedgerState, recent: Iterable[str] = ()
) -> tuple[dict[str, Reading], dict[str, readiness.Flags]]:
    """The readings of the open versions (not matrix cells), and the flags of the
    ``recent`` versions besides, from one walk of history."""
    opened = [v.id for v in state.open_versions()]
    wanted = list(dict.fromkeys([*recent, *opened]))
    found = readiness.history_of(state, store, wanted)
    # Read along with the ledger tree, by which status caches next: seeds go missing when
    # a killed run's finished seeds are recorded (run --record-finished: a new tree). A
    # run that dies before any result leaves the tree, and the cached next, as they were
    # (conclude reads the records itself, fresh).
    records = runfiles.evidence(store.ledger_state_dir / "runs") if opened else []
    readings = {}
    for vid in opened:
        registration, commits = found.get(vid, (None, None))
        readings[vid] = read(store, state, vid, registration, commits, records)
    others = [v for v in wanted if v not in readings]
    flags = readiness.flags_of(store, state, others, found)
    return readings, {v: readings[v].flags if v in readings else flags[v] for v in wanted}
