"""The only package that touches pygit2: read trees, write one transition as one commit.

- :mod:`~ledger.core.store.objects`: a snapshot of one commit's tree, a commit's facts;
- :mod:`~ledger.core.store.repository`: open the repository, resolve revisions, read
  snapshots (of a commit, of the index, of a merge computed in memory);
- :mod:`~ledger.core.store.commits`: walks of history, tree diffs, refs (witnesses);
- :mod:`~ledger.core.store.transition`: what a transition is, the names it may write;
- :mod:`~ledger.core.store.write`: the commit built in memory, the compare-and-swap
  on the branch, the writer lock;
- :mod:`~ledger.core.store.worktree`: the index and work tree brought up to date
  after the ref moves, and the journal that lets ``doctor`` finish after a crash;
- :mod:`~ledger.core.store.faults`: where a crash test may stop a transition.

Callers import from here; the modules are how the store is kept readable.
"""

from __future__ import annotations

from ledger.core.commitinfo import TRAILER_STEP as TRAILER_STEP
from ledger.core.commitinfo import TRAILER_TRANSITION as TRAILER_TRANSITION
from ledger.core.commitinfo import CommitInfo as CommitInfo
from ledger.core.commitinfo import parse_trailers as parse_trailers
from ledger.core.store.commits import Commits
from ledger.core.store.faults import fault_point as fault_point
from ledger.core.store.objects import PACK_WINDOW as PACK_WINDOW
from ledger.core.store.objects import Snapshot as Snapshot
from ledger.core.store.transition import Transition as Transition
from ledger.core.store.transition import check_case as check_case
from ledger.core.store.transition import check_entry_path as check_entry_path
from ledger.core.store.transition import check_identity as check_identity
from ledger.core.store.worktree import INDEX_WAIT as INDEX_WAIT
from ledger.core.store.worktree import JOURNAL as JOURNAL
from ledger.core.store.write import MAX_ATTEMPTS as MAX_ATTEMPTS
from ledger.core.store.write import Writer
from ledger.core.store.write import write_atomic as write_atomic


class Store(Commits, Writer):
    """A repository as git-ledger sees it: trees to read, a branch to extend."""
