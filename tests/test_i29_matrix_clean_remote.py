"""Issue 29: ``matrix clean --remote`` removes the cells' branches on the remote too
(plain ``matrix clean`` leaves them there), archiving each tip locally first."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import Repo, git
from tests.test_next_walk_states import shop

SPEC = "".join(
    f'[cells.{c}]\nslug = "s{c.lower()}"\nbet = "Cell {c}"\ngate = "recent"\n'
    f'files = ["src/cache{c}.py"]\nfalsifier = "no gain"\nsubsystem = "cache"\n\n'
    for c in "AB"
)


def _heads(remote: Path) -> list[str]:
    out = git(remote, "for-each-ref", "--format=%(refname)", "refs/heads")
    return sorted(out.split())


def test_matrix_clean_remote_deletes_the_cell_branches_there(
    bare_repo: Repo, tmp_path: Path
) -> None:
    repo = shop(bare_repo)
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    repo.git("remote", "add", "origin", str(remote))
    repo.git("push", "-q", "-u", "origin", "main")
    spec = tmp_path / "cells.toml"
    spec.write_text(SPEC)
    repo.ok("matrix", "new", "V1", "--spec", str(spec))
    cells = [h for h in _heads(remote) if h != "refs/heads/main"]
    assert len(cells) == 2, _heads(remote)
    tips = {c: git(remote, "rev-parse", c).strip() for c in cells}
    plain = repo.ok("matrix", "clean", "V1")
    assert "on origin" not in plain.out
    assert _heads(remote) == sorted(["refs/heads/main", *cells]), "plain clean stays local"
    done = repo.ok("matrix", "clean", "V1", "--remote", "--json").json()
    assert done["remote"] == {
        "name": "origin",
        "deleted": sorted(c.removeprefix("refs/heads/") for c in cells),
    }
    assert _heads(remote) == ["refs/heads/main"]
    for ref, tip in tips.items():
        name = ref.removeprefix("refs/heads/")
        assert repo.git("rev-parse", f"refs/ledger/archive/{name}").strip() == tip
    again = repo.ok("matrix", "clean", "V1", "--remote")
    assert "deleted 0 cell branch(es) on origin (none was there)" in again.out


def test_matrix_clean_remote_without_a_remote_is_bad_input(bare_repo: Repo, tmp_path: Path) -> None:
    repo = shop(bare_repo)
    spec = tmp_path / "cells.toml"
    spec.write_text(SPEC)
    repo.ok("matrix", "new", "V1", "--spec", str(spec))
    before = repo.git("worktree", "list")
    result = repo.run("matrix", "clean", "V1", "--remote")
    assert result.code == 2 and "no remote" in result.err
    assert repo.git("worktree", "list") == before, "nothing removed"
