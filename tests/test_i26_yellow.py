"""Issue 26: the >3-files yellow flag is stored in the version's entry by the
transition that sees all its code commits (conclude), and shown by status, show,
conclude and the report, not printed once at commit time and lost."""

from __future__ import annotations

from tests.helpers import Repo, measure, register


def test_the_yellow_flag_is_stored_in_the_entry_and_shown_everywhere(repo: Repo) -> None:
    repo.ok("hooks", "install")
    register(repo, "V1")
    for i in range(3):  # two code commits, five files: the flag counts across them
        repo.write(f"src/m{i}.py", f"X = {i}\n")
    repo.commit_all("feat(model): V1 — three modules")
    repo.write("src/m3.py", "X = 3\n")
    repo.write("src/m4.py", "X = 4\n")
    repo.write("training_log/notes.txt", "ledger files do not count\n")
    repo.git("add", "src")
    repo.git("commit", "-q", "-m", "feat(model): V1 — two more")
    measure(repo, "V1", "recent", 10.0)
    concluded = repo.ok("conclude", "V1", "--verdict", "inconclusive", "--next", "split it")
    assert "yellow flag: V1 touches 5 files across its code commits (more than 3)" in (
        concluded.out
    )
    entry = (repo.path / "training_log" / "V1.md").read_text()
    assert "yellow_flag: 'V1 touches 5 files" in entry  # in the front matter, for good
    assert "Yellow flag: V1 touches 5 files" in entry  # and in the conclusion's prose
    shown = repo.ok("show", "V1", "--json").json()
    assert (
        "src/m0.py, src/m1.py, src/m2.py, src/m3.py, src/m4.py"
        in (shown["conclusion"]["yellow_flag"])
    )
    assert "yellow flag: V1 touches 5 files" in repo.ok("show", "V1").out
    status = repo.ok("status", "--json").json()
    assert [f["id"] for f in status["yellow"]] == ["V1"]
    assert "yellow flag: V1 touches 5 files" in repo.ok("status").out
    report = repo.ok("report").out
    assert "yellow flag: V1 touches 5 files" in report


def test_a_small_version_carries_no_flag(repo: Repo) -> None:
    repo.ok("hooks", "install")
    register(repo, "V1")
    repo.write("src/model.py", "X = 1\n")
    repo.commit_all("feat(model): V1 — one file")
    measure(repo, "V1", "recent", 10.0)
    out = repo.ok("conclude", "V1", "--verdict", "inconclusive", "--next", "go", "--json")
    assert "yellow_flag" not in out.json()
    assert repo.ok("status", "--json").json()["yellow"] == []
    assert "yellow" not in (repo.path / "training_log" / "V1.md").read_text().lower()
