"""Issue 26: a matrix's cells count one by one toward the triggers, with their subsystem."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import Repo, ledger
from tests.test_next_walk_states import register_cache, shop

SPEC = "".join(
    f'[cells.{c}]\nslug = "s{c.lower()}"\nbet = "Cell {c}"\ngate = "recent"\n'
    f'files = ["src/cache{c}.py"]\nfalsifier = "no gain"\nsubsystem = "cache"\n\n'
    for c in "ABC"
)


def test_three_cells_inside_noise_are_three_bets_and_keep_their_subsystem(
    bare_repo: Repo, tmp_path: Path
) -> None:
    repo = shop(bare_repo)
    register_cache(repo, "V1")
    repo.ok("run", "V1", "--gate", "recent", "--seeds", "1,2,3,4")
    repo.ok("conclude", "V1", "--verdict", "confirmed", "--next", "x")
    spec = tmp_path / "cells.toml"
    spec.write_text(SPEC)
    repo.ok("matrix", "new", "V2", "--spec", str(spec))
    for cell in "ABC":
        tree = next((repo.path / ".ledger/worktrees").glob(f"v2-{cell.lower()}-*"))
        (tree / f"src/cache{cell}.py").write_text("UNUSED = 1\n")  # code that changes nothing
        Repo(tree).commit_all(f"feat(cache): V2.{cell} — a no-op")
        done = ledger(tree, "run", f"V2.{cell}", "--gate", "recent", "--seeds", "1,2,3,4")
        assert done.code == 0, done.err
    repo.ok("matrix", "conclude", "V2", "--none")
    shown = repo.ok("show", "V2.A", "--json").json()
    assert shown["registration"]["subsystem"] == "cache"
    # Three cells on 'recent' inside noise: three bets without improving it, as if they had
    # run one after another; the Goodhart tripwire fires (consecutive_refutations = 3).
    fired = repo.run("triggers", "--json")
    assert fired.code == 1, fired.out
    goodhart = [f for f in fired.json() if f["rule"] == "goodhart-tripwire"]
    assert goodhart and goodhart[0]["evidence"]["versions"] == ["V2.A", "V2.B", "V2.C"]
    # ... and the subsystem patching loop sees each cell's subsystem.
    loop = [f for f in fired.json() if f["rule"] == "subsystem-patching-loop"]
    assert loop and loop[0]["evidence"]["subsystem"] == "cache"
