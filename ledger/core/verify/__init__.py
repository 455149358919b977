"""The one implementation of the ledger's history rules: ``git ledger verify``.

Hooks are a convenience (``--no-verify``, ``git revert``, rebase, amend, a
force-push or a squash merge all skip them); history is the proof. This package
replays the commits that lead to a tip, parents first, and checks every
transition against the rules below. ``conclude`` (for its version),
``status`` (as problems), the pre-push hook (what is pushed), ``sync`` (what
arrives) and the server-side pre-receive hook all call :func:`verify`.

Rules (each finding names one):

1. ``frozen-registration``: a registration's frozen part (registered front
   matter and the Hypothesis) is byte-identical in every commit after it; a
   registration is deleted only by reverting it; ``witness``: the
   registration commit in history is the one ``refs/ledger/witness/<id>``
   names (locally and as fetched from a remote), so a rewritten registration
   is caught even when the rewriter moved the branch.
2. ``append-only-results``: a result changes only by ``record --replace``
   (a ``Ledger-Replace`` trailer) and disappears only by a whole ``git revert``
   of the transition that recorded it (shown as "withdrawn" forever); after
   its version's conclusion only a re-measurement (the ``remeasure`` kind: a
   ``Ledger-Remeasure`` trailer) adds one, in a slot no verdict reads.
3. ``ids-never-reused``: an id registered once is never registered again;
   results that predate the current registration of their id never count.
4. ``config-frozen``: the verdict-affecting tables of the configuration
   (``gates``, ``stats``, ``triggers``, ``batches``, ``campaign``) change only
   in a configuration transition (``Ledger-Transition: config``).
5. ``transitions-only``: entries change only through their transitions
   (registrations, results, conclusions, matrices, the phase, and each
   preset's own entries and views as its ``history_rules`` declare them); a
   merge adds nothing of its own.
6. ``unparseable-entry``: an entry the tool cannot parse is a finding, never
   a crash.
7. ``one-bet-per-version``: while a version is open, a code commit carries its
   ``Ledger-Step`` trailer or touches only free paths (``[hooks] free_paths``).
8. ``fact-replaced``, ``fact-lost``: a fact (each preset's ``fact_kinds``: a result,
   a verdict, a registration, a candidate's verdict, a topic...) is recorded once in
   all reachable history: a merge is judged key by key against its merge base
   (:mod:`.facts`), whatever strategy made it.
9. ``case-twin``: no entry path, nor a directory of one, differs from another
   only in letter case (:mod:`.casetwins`).
10. ``bounded-commit``: a commit writes at most 1,000 ledger paths of at most
    1 MiB each, checked first, from the tree diff and object headers; a commit
    over either is not judged further (:mod:`.bounds`).
11. ``config-reason``: a setting that judges (the frozen tables) changes in a commit
    of the configuration alone with its ``Ledger-Reason:`` on record.

Replay is incremental: the state after a verified tip is cached by commit id
under ``.git/ledger/``, so a repeated call reads only the new commits.
Findings of a commit depend only on the commit and its parents, so they are
cached by commit id too.

The package: :mod:`.engine` replays and reports, :mod:`.commits` sends each
changed path to its rule (:mod:`.registrations` for versions and matrices,
:mod:`.results` for results, the preset's declared rules for its own entries),
:mod:`.witness` holds the witness refs, :mod:`.queries` answers the verbs
(``conclude``, ``register``, ``show``), :mod:`.gitlog` reads the commits.
"""

from __future__ import annotations

from ledger.core.verify.engine import (
    CACHE_FILE,
    CACHE_VERSION,
    NeedsFull,
    history_notes,
    replay,
    require_full,
    verify,
)
from ledger.core.verify.findings import (
    Finding,
    Note,
    Report,
    deleted_finding,
    withdrawn_reason,
)
from ledger.core.verify.gitlog import log_changes
from ledger.core.verify.queries import (
    frozen_config,
    ingest_config,
    registration,
    require_clean,
    reserved_ids,
)
from ledger.core.verify.registrations import STARTS, frozen_of
from ledger.core.verify.replay import VState
from ledger.core.verify.results import (
    REMEASURE,
    REMEASURE_SLOT,
    RESULT_KINDS,
    TRAILER_REMEASURE,
    kind_of,
)
from ledger.core.verify.witness import create_witness, witness_findings
from ledger.core.witnessrefs import REMOTE_WITNESS, WITNESS

__all__ = [
    "CACHE_FILE",
    "CACHE_VERSION",
    "REMEASURE",
    "REMEASURE_SLOT",
    "REMOTE_WITNESS",
    "RESULT_KINDS",
    "STARTS",
    "TRAILER_REMEASURE",
    "WITNESS",
    "Finding",
    "NeedsFull",
    "Note",
    "Report",
    "VState",
    "create_witness",
    "deleted_finding",
    "frozen_config",
    "frozen_of",
    "history_notes",
    "ingest_config",
    "kind_of",
    "log_changes",
    "registration",
    "replay",
    "require_clean",
    "require_full",
    "reserved_ids",
    "verify",
    "withdrawn_reason",
    "witness_findings",
]
