"""Issue 29: completion (bash through git's own, zsh, fish) offers the ledger's names:
version ids, matrix ids, cells, gates and seeds, read from the repository."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests import shells
from tests.helpers import Repo, measure, register

ROOT = Path(__file__).resolve().parent.parent
COMPLETION = ROOT / "completion"
SPEC = "".join(
    f'[cells.{c}]\nslug = "s{c.lower()}"\nbet = "Cell {c}"\ngate = "recent"\n'
    f'files = ["src/cache{c}.py"]\nfalsifier = "no gain"\n\n'
    for c in "AB"
)


@pytest.fixture
def ledgered(repo: Repo, tmp_path: Path) -> Repo:
    register(repo, "V1")
    measure(repo, "V1", "recent", 10.0)
    repo.ok("conclude", "V1", "--verdict", "confirmed", "--next", "cells")
    spec = tmp_path / "cells.toml"
    spec.write_text(SPEC)
    repo.ok("matrix", "new", "V2", "--spec", str(spec))
    return repo


@pytest.mark.skipif(
    not shells.GIT_BASH_COMPLETION.exists(), reason="git's bash completion is not installed"
)
def test_bash_completes_ids_gates_cells_and_seeds(ledgered: Repo) -> None:
    script = COMPLETION / "git-ledger.bash"

    def complete(line: str) -> list[str]:
        return shells.bash_complete(line, script, ledgered.path)

    assert complete("git ledger show ") == ["V1", "V2.A", "V2.B"]
    assert complete("git ledger show V2") == ["V2.A", "V2.B"]
    assert complete("git ledger run V1 --gate ") == ["recent"]
    assert complete("git ledger matrix status ") == ["V2"]
    assert complete("git ledger matrix join V2 ") == ["A", "B"]
    assert complete("git ledger run V1 --gate recent --seeds 1,") == ["1,2", "1,3", "1,4"]
    assert complete("git-ledger record V1 --gate recent --seed ") == ["1", "2", "3", "4"]


@pytest.mark.skipif(not shells.have("zsh"), reason="zsh is not installed")
def test_zsh_completes_ids(ledgered: Repo) -> None:
    found = shells.zsh_complete("git ledger show ", COMPLETION, ledgered.path)
    assert {"V1", "V2.A", "V2.B"} <= set(found), found


@pytest.mark.skipif(not shells.have("fish"), reason="fish is not installed")
def test_fish_completes_ids_and_gates(ledgered: Repo) -> None:
    fish = COMPLETION / "git-ledger.fish"
    assert shells.fish_complete("git ledger show ", fish, ledgered.path) == ["V1", "V2.A", "V2.B"]
    assert shells.fish_complete("git-ledger run V1 --gate ", fish, ledgered.path) == ["recent"]
