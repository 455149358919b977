"""``git ledger matrix new|join|status|conclude|clean``: several independent bets at once.

One pre-registration (``V213-matrix.md``) holds every cell's bet, files,
falsifier and gate and the shared baseline; it is committed before any cell
runs. Each cell then gets a branch (``ledger/V213.A-slug``) and a worktree
under ``.ledger/worktrees/``; inside it the ordinary verbs work on the cell id
(``V213.A``). Status reads every cell branch straight from git, compares each
cell with the shared baseline and holds it to a many-comparisons-adjusted
threshold; conclude merges exactly one winner and keeps every cell's results.

One module per verb group: ``registration`` (new, join), ``adjudication``
(which cells win; status), ``conclusion`` (conclude), ``cleanup`` (clean), and
``cells``, what they share about a cell's worktree and branch.
"""

from __future__ import annotations

from ledger.presets.versions.matrix.adjudication import adjudicate, comparison, status
from ledger.presets.versions.matrix.cells import WORKTREES
from ledger.presets.versions.matrix.cleanup import clean
from ledger.presets.versions.matrix.conclusion import conclude
from ledger.presets.versions.matrix.registration import join, new

# The verbs (``git ledger matrix ...``) and what the status view and the calibration read.
__all__ = ["WORKTREES", "adjudicate", "clean", "comparison", "conclude", "join", "new", "status"]
