"""The README's first command, and what the wheel ships."""

from __future__ import annotations

import os
import subprocess
import zipfile
from pathlib import Path

import pytest

from tests.helpers import git, ledger

ROOT = Path(__file__).resolve().parent.parent


def test_demo_walks_the_loop_and_leaves_a_healthy_repository(tmp_path: Path) -> None:
    repo = tmp_path / "demo"
    result = ledger(tmp_path, "demo", str(repo))
    assert result.code == 0, result.err + result.out[-3000:]
    for command in (
        "$ git ledger register V2",
        "$ git ledger run V2",
        "$ git ledger triggers",
        "$ git ledger reflect V5 --commit",
        "$ git ledger matrix conclude V6",
    ):
        assert command in result.out
    assert "goodhart-tripwire" in result.out
    assert ledger(repo, "doctor").code == 0
    git(repo, "fsck", "--strict")
    assert git(repo, "status", "--porcelain") == ""
    status = ledger(repo, "status", "--json").json()
    assert status["counts"]["concluded"] == 8 and not status["problems"]
    # Every code commit, the matrix cells' included, carries its version (hooks ran
    # in the cells' worktrees), so the whole history verifies.
    verified = ledger(repo, "verify")
    assert verified.code == 0, verified.out + verified.err
    assert ledger(repo, "log", "-n", "8").code == 0


def test_demo_refuses_a_non_empty_directory(tmp_path: Path) -> None:
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "keep.txt").write_text("mine\n")
    result = ledger(tmp_path, "demo", str(tmp_path / "x"))
    assert result.code == 2 and "not empty" in result.err
    assert (tmp_path / "x" / "keep.txt").read_text() == "mine\n"


# The installed wheel is shared with test_user_path: one worker builds it.


@pytest.fixture
def wheel(built_wheel: Path) -> Path:
    return built_wheel


def test_wheel_ships_hooks_and_templates(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    for required in (
        "ledger/_data/hooks/ledger-hook.sh",
        "ledger/_data/templates/version.md",
        "ledger/_data/templates/reflection.md",
        "ledger/_data/templates/demo/eval.py",
        "ledger/_data/templates/ledger-versions.toml",
        "ledger/cli/app.py",
    ):
        assert required in names, required


def test_fresh_venv_pip_install_then_git_ledger_demo(wheel_venv: Path, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PATH"] = f"{wheel_venv / 'bin'}{os.pathsep}{env['PATH']}"
    demo = subprocess.run(
        ["git", "ledger", "demo", str(tmp_path / "demo")],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert demo.returncode == 0, demo.stderr + demo.stdout[-2000:]
    doctor = subprocess.run(
        ["git", "ledger", "doctor"],
        cwd=tmp_path / "demo",
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert doctor.returncode == 0, doctor.stdout
    git(tmp_path / "demo", "fsck", "--strict")
