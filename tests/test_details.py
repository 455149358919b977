"""Details a user trips on: unmeasured cells, show of a matrix and a reflection,
plot without --out, the demo's footprint, numbers' significant digits."""

from __future__ import annotations

from pathlib import Path

from ledger.core.markdown import fmt
from tests.helpers import Repo, ledger
from tests.test_next_walk_states import register_cache, shop

SPEC = "".join(
    f'[cells.{c}]\nslug = "s{c.lower()}"\nbet = "Cell {c}"\ngate = "recent"\n'
    f'files = ["src/cache.py"]\nfalsifier = "no gain"\n\n'
    for c in "AB"
)


def test_matrix_conclude_none_leaves_an_unmeasured_cell_unjudged(
    bare_repo: Repo, tmp_path: Path
) -> None:
    repo = shop(bare_repo)
    register_cache(repo, "V1")
    repo.ok("run", "V1", "--gate", "recent", "--seeds", "1,2")
    repo.ok("conclude", "V1", "--verdict", "confirmed", "--next", "x")
    spec = tmp_path / "cells.toml"
    spec.write_text(SPEC)
    repo.ok("matrix", "new", "V2", "--spec", str(spec))
    cell = next((repo.path / ".ledger/worktrees").glob("v2-a-*"))
    (cell / "src/cache.py").write_text("SIZE = 65\n")
    Repo(cell).commit_all("feat(cache): V2.A — 65")
    ledger(cell, "run", "V2.A", "--gate", "recent", "--seeds", "1,2")
    repo.ok("matrix", "conclude", "V2", "--none")
    shown = repo.ok("show", "V2", "--json").json()
    verdicts = {c["cell"]: c["verdict"] for c in shown["cells"]}
    assert verdicts["V2.B"] == "not measured" and verdicts["V2.A"] in ("refuted", "inconclusive")
    assert "V2.B" in repo.ok("show", "V2").out
    status = repo.ok("status", "--json").json()
    assert all(v["id"] != "V2.B" or v["verdict"] is None for v in status["recent"])


def test_unmeasured_cells_feed_no_trigger(bare_repo: Repo, tmp_path: Path) -> None:
    # Three cells concluded with --none and never measured: were they "refuted", the
    # Goodhart tripwire (3 consecutive refutations) would fire and block registering.
    repo = shop(bare_repo)
    register_cache(repo, "V1")
    repo.ok("run", "V1", "--gate", "recent", "--seeds", "1,2")
    repo.ok("conclude", "V1", "--verdict", "confirmed", "--next", "x")
    spec = tmp_path / "cells3.toml"
    spec.write_text(
        SPEC + SPEC.replace("cells.A", "cells.C").replace('"sa"', '"sc"').split("[cells.B]")[0]
    )
    repo.ok("matrix", "new", "V2", "--spec", str(spec))
    repo.ok("matrix", "conclude", "V2", "--none")
    cells = repo.ok("show", "V2", "--json").json()["cells"]
    assert [c["verdict"] for c in cells] == ["not measured"] * 3
    triggers = repo.run("triggers", "--json")
    assert triggers.code == 0, triggers.out
    assert repo.ok("next", "--json").json()["action"] == "register"


def test_show_a_reflection_prints_its_content(bare_repo: Repo) -> None:
    repo = shop(bare_repo)
    register_cache(repo, "V1")
    repo.ok("run", "V1", "--gate", "recent", "--seeds", "1")
    repo.ok("conclude", "V1", "--verdict", "confirmed", "--next", "x")
    repo.ok("reflect", "V1")
    path = repo.path / "training_log/REFLECTION_V1.md"
    path.write_text(
        path.read_text().replace("## Eval stability\n", "## Eval stability\n\nSeeds agree.\n")
    )
    repo.commit_all("docs(ledger): REFLECTION_V1 (partial)", "--no-verify")
    out = repo.ok("show", "REFLECTION_V1").out
    assert "Seeds agree." in out and "## Eval stability" in out
    assert repo.ok("show", "REFLECTION_V1", "--json").json()["body"].startswith("#")


def test_plot_without_out_never_writes_into_the_work_tree(bare_repo: Repo) -> None:
    repo = shop(bare_repo)
    register_cache(repo, "V1")
    repo.ok("run", "V1", "--gate", "recent", "--seeds", "1,2")
    repo.ok("conclude", "V1", "--verdict", "confirmed", "--next", "x")
    result = repo.ok("plot", "--gate", "recent")
    assert repo.git("status", "--porcelain", "--ignored") == ""
    written = Path(result.out.split("wrote ", 1)[1].strip())
    assert written.is_file() and ".git" in written.parts


def test_demo_writes_nothing_outside_its_directory(tmp_path: Path) -> None:
    parent = tmp_path / "parent"
    parent.mkdir()
    result = ledger(tmp_path, "demo", str(parent / "demo"))
    assert result.code == 0, result.err
    assert sorted(p.name for p in parent.iterdir()) == ["demo"]


def test_numbers_keep_four_significant_digits() -> None:
    assert [fmt(v) for v in (12.3456, 1234.567, 0.012345, 98765.4)] == [
        "12.35",
        "1235",
        "0.01235",
        "98765",
    ]


def test_run_conditions_record_expanded_values(bare_repo: Repo) -> None:
    command = '["python3", "eval.py", "--gate", "{gate}", "--seed", "{seed}", "--out", "{out}"]'
    repo = shop(bare_repo, run=f"\n[run]\ncommand = {command}\n")
    register_cache(repo, "V1")
    repo.ok("run", "V1", "--gate", "recent", "--seeds", "1")
    result = repo.ok("show", "V1", "--json").json()["results"][0]
    conditions = result["provenance"]["conditions"]
    assert conditions["gate"] == "recent", conditions
    assert "{" not in "".join(conditions.values()), conditions


def test_sync_with_staged_changes_says_that_is_why(repo: Repo, tmp_path: Path) -> None:
    from tests.helpers import fingerprint, git

    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    repo.git("remote", "add", "origin", str(remote))
    repo.write("notes.txt", "mine\n")
    repo.git("add", "notes.txt")
    before = fingerprint(repo.path)
    result = repo.run("sync")
    assert result.code == 2 and "staged changes" in result.err, result.err
    assert fingerprint(repo.path) == before
