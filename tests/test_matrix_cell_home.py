"""A matrix cell is measured on its own branch, wherever ``run`` or ``record`` is called.

From the main worktree (or the MCP server, which acts there), ``run V2.A`` goes to the
cell's worktree as ``git -C`` would; before this, it recorded the cell's results on the
main branch, where the matrix never reads them. A cell whose worktree is not on this
machine is refused with the command that brings it.
"""

from __future__ import annotations

import json
import shlex
import subprocess
from pathlib import Path

from tests.helpers import Repo, git
from tests.test_run_matrix import SPEC, _establish_baseline, evalrepo

__all__ = ["evalrepo"]  # the fixture, shared with test_run_matrix


def _matrix(repo: Repo, tmp_path: Path) -> dict[str, Path]:
    repo.ok("hooks", "install")
    _establish_baseline(repo)
    spec = tmp_path / "cells.toml"
    spec.write_text(SPEC)
    made = repo.ok("matrix", "new", "V2", "--spec", str(spec), "--json").json()
    return {c["cell"]: Path(c["worktree"]) for c in made["cells"]}


def _code(tree: Path, cell: str, lr: float) -> None:
    (tree / "params.json").write_text(json.dumps({"lr": lr, "width": 32, "dropout": 0.3}))
    git(tree, "add", "params.json")
    git(tree, "commit", "-q", "-m", f"feat(params): V2.{cell} — tune")


def _results_on(repo: Repo, branch: str, cell: str) -> list[str]:
    listed = repo.git("ls-tree", "-r", "--name-only", branch, "--", "training_log/results/")
    return [line for line in listed.splitlines() if f"/V2.{cell}/" in line]


def test_run_and_record_of_a_cell_from_the_main_worktree_land_on_the_cell_branch(
    evalrepo: Repo, tmp_path: Path
) -> None:
    trees = _matrix(evalrepo, tmp_path)
    _code(trees["V2.A"], "A", 0.3)
    _code(trees["V2.B"], "B", 0.2)
    main_head = evalrepo.head()

    done = evalrepo.ok("run", "V2.A", "--gate", "recent", "--seeds", "1,2,3,4")
    assert "measured in its worktree .ledger/worktrees/v2-a-carry" in done.err
    assert len(_results_on(evalrepo, "ledger/V2.A-carry", "A")) == 4
    assert evalrepo.head() == main_head and not _results_on(evalrepo, "HEAD", "A")

    result = tmp_path / "b.json"
    result.write_text(json.dumps({"score": 51.0, "loss": 0.4}))
    evalrepo.ok("record", "V2.B", str(result), "--gate", "recent", "--seed", "1")
    assert _results_on(evalrepo, "ledger/V2.B-width", "B") == [
        "training_log/results/V2.B/recent/seed-1.json"
    ]
    assert evalrepo.head() == main_head and evalrepo.git("status", "--porcelain") == ""
    # The cell's own worktree is where its results are, and its status sees them.
    status = evalrepo.ok("matrix", "status", "V2", "--json").json()
    assert {c["cell"]: c["n"] for c in status["cells"]}["V2.A"] == 4


def test_next_proposes_a_cell_step_that_runs_from_the_main_worktree(
    evalrepo: Repo, tmp_path: Path
) -> None:
    trees = _matrix(evalrepo, tmp_path)
    for cell, lr in (("A", 0.3), ("B", 0.2), ("C", 0.25)):
        _code(trees[f"V2.{cell}"], cell, lr)
    for _ in range(3):
        step = evalrepo.ok("next", "--json").json()
        assert step["action"] == "measure" and step["command"].startswith("git ledger run V2.")
        assert "&&" not in step["command"]  # one command, run from the main worktree
        done = subprocess.run(
            shlex.split(step["command"]), cwd=evalrepo.path, capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr
    assert evalrepo.ok("next", "--json").json()["action"] == "matrix-conclude"


def test_a_cell_whose_worktree_is_elsewhere_is_refused_with_the_join_command(
    evalrepo: Repo, tmp_path: Path
) -> None:
    trees = _matrix(evalrepo, tmp_path)
    _code(trees["V2.C"], "C", 0.25)
    evalrepo.git("worktree", "remove", "--force", str(trees["V2.C"]))
    before = evalrepo.git("for-each-ref")
    done = evalrepo.run("run", "V2.C", "--gate", "recent", "--seeds", "1,2,3,4")
    assert done.code == 1, done.err
    assert "not on this machine" in done.err and "git ledger matrix join V2 C" in done.err
    assert evalrepo.git("for-each-ref") == before and not _results_on(evalrepo, "HEAD", "C")


def test_a_plain_version_is_recorded_without_loading_the_matrix(repo: Repo) -> None:
    """Only a cell's id needs the matrix to find its home: a plain id's ``record`` never
    imports the matrix package (its adjudication, statistics and templates)."""
    import sys

    from tests.helpers import register

    assert register(repo, "V1").code == 0
    results = repo.path.parent / "r.json"
    results.write_text('{"score": 1.5}')
    probe = (
        "import sys\n"
        "from ledger.cli.app import main\n"
        "try:\n"
        "    main(sys.argv[1:])\n"
        "except SystemExit as exc:\n"
        "    code = exc.code\n"
        "package = 'ledger.presets.versions.matrix'\n"
        "print(code, sorted(m for m in sys.modules if (m + '.').startswith(package + '.')))\n"
    )
    args = ["record", "V1", "--gate", "recent", "--seed", "1", str(results)]
    done = subprocess.run(
        [sys.executable, "-c", probe, *args],
        cwd=repo.path,
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.splitlines()[-1] == "0 []", done.stdout + done.stderr
    assert (repo.path / "training_log" / "results" / "V1" / "recent" / "seed-1.json").is_file()
