"""Hooks through real `git commit` / `git push`, and doctor after a crash."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.helpers import Repo, measure, register


@pytest.fixture
def hooked(repo: Repo) -> Repo:
    repo.ok("hooks", "install")
    return repo


def commit(
    repo: Repo, message: str, *paths: str, verify: bool = True
) -> subprocess.CompletedProcess[str]:
    repo.git("add", *paths)
    args = ["git", "commit", "-q", "-m", message] + ([] if verify else ["--no-verify"])
    return subprocess.run(args, cwd=repo.path, capture_output=True, text=True, check=False)


def test_install_keeps_a_foreign_hook_as_legacy_and_uninstall_restores_it(repo: Repo) -> None:
    hooks = repo.path / ".git/hooks"
    hooks.mkdir(exist_ok=True)
    (hooks / "pre-commit").write_text("#!/bin/sh\necho legacy-ran >> legacy.log\n")
    (hooks / "pre-commit").chmod(0o755)
    repo.ok("hooks", "install")
    assert (hooks / "pre-commit.legacy").exists()
    assert "git-ledger-hook v2" in (hooks / "pre-commit").read_text()
    repo.write("notes.txt", "x\n")
    repo.git("add", "notes.txt")
    subprocess.run(["git", "commit", "-q", "-m", "chore: notes"], cwd=repo.path, check=False)
    assert (repo.path / "legacy.log").read_text() == "legacy-ran\n"
    repo.ok("hooks", "uninstall")
    assert (hooks / "pre-commit").read_text().startswith("#!/bin/sh\necho legacy-ran")
    assert not (hooks / "commit-msg").exists()


def test_core_hooks_path_is_reported_not_ignored(repo: Repo) -> None:
    repo.git("config", "core.hooksPath", ".husky")
    result = repo.run("hooks", "install")
    assert result.code == 1 and "core.hooksPath" in result.err


def test_mixed_ledger_and_code_commit_is_refused_separate_commits_pass(hooked: Repo) -> None:
    assert register(hooked, "V200").code == 0
    entry = hooked.path / "training_log/V200.md"
    entry.write_text(entry.read_text() + "\nObservation while coding.\n")
    hooked.write("src/x.py", "x = 1\n")
    mixed = commit(hooked, "feat(x): V200 — code and log", "training_log/V200.md", "src/x.py")
    assert mixed.returncode == 1
    assert "two-commit-granularity" in mixed.stderr and "src/x.py" in mixed.stderr
    hooked.git("reset", "-q")
    code = commit(hooked, "feat(x): V200 — the bet", "src/x.py")
    assert code.returncode == 0, code.stderr
    log = commit(hooked, "docs(x): V200 note", "training_log/V200.md")
    assert log.returncode == 0, log.stderr


def test_editing_a_registered_bet_is_refused_at_commit(hooked: Repo) -> None:
    register(hooked, "V200", bet="Original bet")
    entry = hooked.path / "training_log/V200.md"
    entry.write_text(entry.read_text().replace("bet: Original bet", "bet: Another bet"))
    refused = commit(hooked, "docs(x): V200 wording", "training_log/V200.md")
    assert refused.returncode == 1 and "frozen-registration" in refused.stderr
    forced = commit(hooked, "docs(x): V200 wording", "training_log/V200.md", verify=False)
    assert forced.returncode == 0
    measure(hooked, "V200", "recent", 10.0)
    caught = hooked.run("conclude", "V200", "--verdict", "confirmed", "--next", "x")
    assert caught.code == 1 and "frozen-registration" in caught.err


def test_code_commit_needs_an_open_version_and_gets_its_trailer(hooked: Repo) -> None:
    hooked.write("src/x.py", "x = 1\n")
    refused = commit(hooked, "feat(x): sneak in a change", "src/x.py")
    assert refused.returncode == 1 and "one-bet-per-version" in refused.stderr
    hooked.git("reset", "-q")
    register(hooked, "V200")
    ok = commit(hooked, "feat(x): V200 — the bet", "src/x.py")
    assert ok.returncode == 0, ok.stderr
    assert hooked.trailers()["Ledger-Step"] == "V200"
    hooked.write("src/y.py", "y = 1\n")
    wrong = commit(hooked, "feat(x): V199 — leftovers", "src/y.py")
    assert wrong.returncode == 1 and "V199" in wrong.stderr
    hooked.git("reset", "-q")
    loose = commit(hooked, "tweak things", "src/y.py")
    assert loose.returncode == 1 and "conventional-commits" in loose.stderr


def test_warnings_for_big_changes_and_files_outside_the_plan(hooked: Repo) -> None:
    register(hooked, "V200")  # plan: src/model.py
    for name in "abcd":
        hooked.write(f"src/{name}.py", "x = 1\n")
    result = commit(hooked, "feat(x): V200 — the bet", "src")
    assert result.returncode == 0, result.stderr
    assert "yellow-flag" in result.stderr and "outside-plan" in result.stderr


def test_the_yellow_flag_counts_a_versions_files_across_its_code_commits(hooked: Repo) -> None:
    register(hooked, "V200")
    # Free paths (docs) and the ledger's own files are not code; only src/ counts.
    hooked.write("docs/notes.md", "n\n")
    hooked.write("README.md", "r\n")
    assert commit(hooked, "docs: notes", "docs", "README.md").returncode == 0
    for step, name in enumerate("abc"):
        hooked.write(f"src/{name}.py", "x = 1\n")
        small = commit(hooked, f"feat(x): V200 — part {name}", f"src/{name}.py")
        assert small.returncode == 0, small.stderr
        assert "yellow-flag" not in small.stderr, (step, small.stderr)
    # A free-path commit in between, and an amended code commit: still three files.
    hooked.write("docs/notes.md", "more\n")
    assert commit(hooked, "docs: more notes", "docs").returncode == 0
    hooked.write("src/c.py", "x = 3\n")
    hooked.git("add", "src/c.py")
    amend = subprocess.run(
        ["git", "commit", "-q", "--amend", "-m", "feat(x): V200 — part c, amended"],
        cwd=hooked.path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert amend.returncode == 0 and "yellow-flag" not in amend.stderr, amend.stderr
    # The same files again: still three files, no flag.
    hooked.write("src/a.py", "x = 2\n")
    again = commit(hooked, "feat(x): V200 — part a again", "src/a.py")
    assert again.returncode == 0 and "yellow-flag" not in again.stderr, again.stderr
    # A fourth file in a fourth one-file commit: the version touches four files.
    hooked.write("src/d.py", "x = 1\n")
    fourth = commit(hooked, "feat(x): V200 — part d", "src/d.py")
    assert fourth.returncode == 0, fourth.stderr
    assert "[yellow-flag] V200 touches 4 files across its code commits" in fourth.stderr
    # The count starts again with the next version.
    measure(hooked, "V200", "recent", 10.0)
    hooked.ok("conclude", "V200", "--verdict", "inconclusive", "--next", "x", "--override", "t")
    register(hooked, "V201")
    hooked.write("src/e.py", "x = 1\n")
    fresh = commit(hooked, "feat(x): V201 — one file", "src/e.py")
    assert fresh.returncode == 0 and "yellow-flag" not in fresh.stderr, fresh.stderr


CELLS = "".join(
    f'[cells.{c}]\nslug = "s{c.lower()}"\nbet = "Cell {c}"\ngate = "recent"\n'
    f'files = ["src/{c.lower()}.py"]\nfalsifier = "no gain"\n'
    for c in "ABC"
)


def _concluded_matrix(repo: Repo, tmp: Path) -> None:
    """V1 measured and concluded, then a three-cell matrix V2 measured and concluded."""
    register(repo, "V1")
    measure(repo, "V1", "recent", 10.0)
    repo.ok("conclude", "V1", "--verdict", "inconclusive", "--next", "a matrix")
    spec = tmp / "cells.toml"
    spec.write_text(CELLS)
    made = repo.ok("matrix", "new", "V2", "--spec", str(spec), "--json").json()
    for cell in made["cells"]:
        tree = Repo(Path(cell["worktree"]))
        name = cell["cell"].split(".")[1].lower()
        tree.write(f"src/{name}.py", "x = 1\n")
        done = commit(tree, f"feat(src): {cell['cell']} — its cell", f"src/{name}.py")
        assert done.returncode == 0, done.stderr
        measure(tree, cell["cell"], "recent", 10.0)
    repo.ok("matrix", "conclude", "V2", "--none")


def test_hand_commits_pass_after_a_matrix_is_concluded(hooked: Repo, tmp_path: Path) -> None:
    """The matrix file has one comparison block for all its cells: the views check
    compares it with what matrix conclude wrote, not with each cell's conclusion."""
    _concluded_matrix(hooked, tmp_path)
    hooked.write("training_log/notes.md", "What the matrix taught us.\n")
    notes = commit(hooked, "docs(ledger): notes on V2", "training_log/notes.md")
    assert notes.returncode == 0, notes.stderr
    # A squash merge of a branch that carries a hand-written ledger file.
    hooked.git("switch", "-q", "-c", "notes")
    hooked.write("training_log/more-notes.md", "More.\n")
    assert commit(hooked, "docs(ledger): more notes", "training_log").returncode == 0
    hooked.git("switch", "-q", "main")
    hooked.git("merge", "-q", "--squash", "notes")
    squash = subprocess.run(
        ["git", "commit", "-q", "-m", "docs(ledger): the notes branch"],
        cwd=hooked.path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert squash.returncode == 0, squash.stderr
    assert hooked.ok("verify").code == 0


def test_a_hand_edit_of_a_matrix_table_is_refused_once(hooked: Repo, tmp_path: Path) -> None:
    _concluded_matrix(hooked, tmp_path)
    path = hooked.path / "training_log/V2-matrix.md"
    text = path.read_text()
    assert "| V2.A | recent |" in text
    path.write_text(text.replace("| V2.A | recent |", "| V2.A | recent (best) |"))
    refused = commit(hooked, "docs(ledger): a better table", "training_log/V2-matrix.md")
    assert refused.returncode == 1
    lines = [line for line in refused.stderr.splitlines() if "views-drift" in line]
    assert lines == [
        "git-ledger pre-commit refused: [views-drift] training_log/V2-matrix.md: generated "
        "block 'comparison' is out of date (fix: regenerate with the git ledger verbs; do not "
        "edit generated blocks)"
    ], refused.stderr


def _bare_remote(repo: Repo, tmp: Path) -> Path:
    remote = tmp / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    repo.git("remote", "add", "origin", str(remote))
    return remote


def test_push_refused_with_untracked_entry_until_doctor_autosaves_it(
    hooked: Repo, tmp_path: Path
) -> None:
    _bare_remote(hooked, tmp_path)
    # A file an interrupted session left (a reflection in progress is the loop's draft,
    # never refused: tests/test_machine_problems.py; a registration only register writes).
    hooked.write("training_log/NOTES.md", "# Notes\n\nleft by an interrupted session\n")
    push = subprocess.run(
        ["git", "push", "-q", "origin", "HEAD:refs/heads/main"],
        cwd=hooked.path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert push.returncode != 0 and "clean-workspace" in push.stderr
    assert "training_log/NOTES.md" in push.stderr
    fixed = hooked.run("doctor", "--fix")
    assert "autosaved training_log/NOTES.md" in fixed.out
    assert "autosaved from interrupted session" in hooked.git("log", "-1", "--format=%s")
    assert hooked.trailers()["Ledger-Transition"] == "autosave"
    push = subprocess.run(
        ["git", "push", "-q", "origin", "HEAD:refs/heads/main"],
        cwd=hooked.path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert push.returncode == 0, push.stderr


def test_push_refuses_code_commits_of_an_unregistered_version(hooked: Repo, tmp_path: Path) -> None:
    _bare_remote(hooked, tmp_path)
    hooked.write("src/x.py", "x = 1\n")
    commit(hooked, "feat(x): V300 — no registration\n\nLedger-Step: V300", "src/x.py", verify=False)
    push = subprocess.run(
        ["git", "push", "-q", "origin", "HEAD:refs/heads/main"],
        cwd=hooked.path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert push.returncode != 0 and "one-bet-per-version" in push.stderr


def _start_commit_holding_the_index(repo: Repo) -> subprocess.Popen[bytes]:
    """A real `git commit -a` that sits in its editor while holding index.lock."""
    readme = repo.path / "training_log/README.md"
    readme.write_text(readme.read_text() + "\nedited\n")
    env = {**os.environ, "GIT_EDITOR": "sleep 60 #"}
    proc = subprocess.Popen(
        ["git", "commit", "-a", "--no-verify"], cwd=repo.path, env=env, start_new_session=True
    )
    lock = repo.path / ".git/index.lock"
    for _ in range(200):
        if lock.exists():
            break
        time.sleep(0.02)
    assert lock.exists()
    return proc


def _age(path: Path, minutes: float) -> None:
    old = time.time() - minutes * 60
    os.utime(path, (old, old))


def test_doctor_removes_a_stale_lock_of_a_killed_commit(repo: Repo) -> None:
    proc = _start_commit_holding_the_index(repo)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    lock = repo.path / ".git/index.lock"
    assert lock.exists()
    _age(lock, 30)
    found = repo.run("doctor")
    assert found.code == 1 and "stale lock" in found.out
    fixed = repo.run("doctor", "--fix")
    assert "removed stale lock" in fixed.out
    assert not lock.exists()


def test_doctor_leaves_a_live_git_process_lock_alone(repo: Repo) -> None:
    proc = _start_commit_holding_the_index(repo)
    try:
        lock = repo.path / ".git/index.lock"
        _age(lock, 30)
        result = repo.run("doctor", "--fix")
        assert "left alone" in result.out and "git process" in result.out
        assert lock.exists()
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
