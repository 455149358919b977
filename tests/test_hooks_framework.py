"""The same hook checks, installed through the pre-commit framework from .pre-commit-hooks.yaml.

The framework clones this project as a hook repository and pip-installs it
into its own environment, exactly as a user's `repos:` entry would.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import Repo, git, register, sealed

ROOT = Path(__file__).resolve().parent.parent
SHIPPED = ["ledger", "hooks", "templates", "pyproject.toml", "README.md", ".pre-commit-hooks.yaml"]


@pytest.fixture(scope="module")
def hook_repo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """This checkout's shipped files as a committed git repository (what `repo:` points at).
    Built before any test's seal, so in a seal of its own (tests.helpers.sealed): the
    developer's template dir, hooks or signing never reach it."""
    path = tmp_path_factory.mktemp("git-ledger-hook-repo")
    for name in SHIPPED:
        src = ROOT / name
        if src.is_dir():
            shutil.copytree(src, path / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(src, path / name)
    with sealed(tmp_path_factory):
        git(path, "init", "-q")
        git(path, "add", "-A")
        git(path, "commit", "-q", "-m", "snapshot")
        return path, git(path, "rev-parse", "HEAD").strip()


@pytest.fixture(scope="module")
def pre_commit_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("pre-commit-home")


def _pre_commit() -> str:
    exe = shutil.which("pre-commit", path=str(Path(sys.executable).parent)) or shutil.which(
        "pre-commit"
    )
    if exe is None:
        pytest.fail("pre-commit is not installed; it is part of the test extra")
    return exe


def test_framework_hooks_hold_the_same_discipline(
    repo: Repo,
    hook_repo: tuple[Path, str],
    pre_commit_home: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PRE_COMMIT_HOME", str(pre_commit_home))
    path, rev = hook_repo
    ids = [
        "git-ledger-pre-commit",
        "git-ledger-prepare-commit-msg",
        "git-ledger-commit-msg",
        "git-ledger-pre-push",
    ]
    config = f"repos:\n  - repo: {path}\n    rev: {rev}\n    hooks:\n" + "".join(
        f"      - id: {i}\n" for i in ids
    )
    repo.write(".pre-commit-config.yaml", config)
    repo.git("add", ".pre-commit-config.yaml")
    repo.git("commit", "-q", "-m", "chore: use pre-commit")
    types = [
        a
        for s in ("pre-commit", "prepare-commit-msg", "commit-msg", "pre-push")
        for a in ("--hook-type", s)
    ]
    subprocess.run(
        [_pre_commit(), "install", *types], cwd=repo.path, check=True, capture_output=True
    )

    def commit(message: str, *paths: str) -> subprocess.CompletedProcess[str]:
        repo.git("add", *paths)
        return subprocess.run(
            ["git", "commit", "-q", "-m", message],
            cwd=repo.path,
            capture_output=True,
            text=True,
            check=False,
        )

    # A code commit while no version is open is refused (commit-msg).
    repo.write("src/x.py", "x = 1\n")
    refused = commit("feat(x): sneak in", "src/x.py")
    assert refused.returncode == 1, refused.stdout + refused.stderr
    assert "one-bet-per-version" in refused.stdout + refused.stderr
    repo.git("reset", "-q")

    # With V200 open, the code commit passes and gets its trailer (prepare-commit-msg).
    assert register(repo, "V200", bet="Original bet").code == 0
    ok = commit("feat(x): V200 — the bet", "src/x.py")
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert repo.trailers()["Ledger-Step"] == "V200"

    # Ledger and code in one commit are refused; an edit of the frozen bet too (pre-commit).
    entry = repo.path / "training_log/V200.md"
    entry.write_text(entry.read_text().replace("bet: Original bet", "bet: Edited bet"))
    repo.write("src/y.py", "y = 1\n")
    mixed = commit("feat(x): V200 — more", "training_log/V200.md", "src/y.py")
    assert mixed.returncode == 1
    out = mixed.stdout + mixed.stderr
    assert "two-commit-granularity" in out and "frozen-registration" in out
    repo.git("reset", "-q")
    repo.git("checkout", "--", "training_log/V200.md")
    (repo.path / "src/y.py").unlink()

    # An untracked entry blocks the push until doctor autosaves it (pre-push).
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    repo.git("remote", "add", "origin", str(remote))
    # A file an interrupted session left (a reflection in progress is the loop's draft,
    # never refused: tests/test_machine_workspace.py).
    repo.write("training_log/NOTES.md", "# Notes\n\nleft by an interrupted session\n")
    push = subprocess.run(
        ["git", "push", "-q", "origin", "HEAD:refs/heads/main"],
        cwd=repo.path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert push.returncode != 0 and "clean-workspace" in push.stdout + push.stderr
    repo.ok("doctor", "--fix")
    push = subprocess.run(
        ["git", "push", "-q", "origin", "HEAD:refs/heads/main"],
        cwd=repo.path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert push.returncode == 0, push.stdout + push.stderr
