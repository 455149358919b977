"""The first minutes of a user: help through git, usage errors, -C, JSON errors, completion."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ledger.cli.app import cli
from ledger.cli.manpage import PAGE, render
from tests import shells
from tests.helpers import Repo, fingerprint, ledger

ROOT = Path(__file__).resolve().parent.parent


def test_man_page_in_the_repository_matches_the_click_commands() -> None:
    assert PAGE.read_text() == render(cli), "regenerate it: python -m ledger.cli.manpage"
    text = PAGE.read_text()
    for verb in ("register", "matrix new", "hooks install", "help"):
        assert f".SS {verb.replace('-', chr(92) + '-')}\n" in text, verb


def test_man_page_renders_without_warnings(tmp_path: Path) -> None:
    assert shutil.which("man"), "install man-db (.ci/run does)"
    proc = subprocess.run(
        ["man", "-l", str(PAGE)],
        capture_output=True,
        text=True,
        check=False,
        env={"MANPAGER": "cat", "MANWIDTH": "100", "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
    )
    assert proc.returncode == 0 and not proc.stderr.strip(), proc.stderr
    assert "git ledger register [OPTIONS] [STEP_ID]" in proc.stdout
    assert "--falsifier TEXT" in proc.stdout


def test_help_verb_prints_one_verbs_help(tmp_path: Path) -> None:
    result = ledger(tmp_path, "help", "matrix", "new")
    assert result.code == 0
    assert result.out.startswith("Usage: git ledger matrix new [OPTIONS] MATRIX_ID")
    whole = ledger(tmp_path, "help")
    assert whole.code == 0 and "Commands:" in whole.out and "register" in whole.out
    bad = ledger(tmp_path, "help", "nope")
    assert bad.code == 2 and bad.err.strip() == (
        "git-ledger: error: no verb 'nope' (see 'git ledger help')"
    )


def test_usage_errors_point_to_help_that_works(tmp_path: Path) -> None:
    result = ledger(tmp_path, "register", "--bet", "x")
    assert result.code == 2
    assert result.err.strip().endswith("(see 'git ledger help register')"), result.err
    hint = result.err.rsplit("(see '", 1)[1].split("'")[0].split()[2:]
    assert ledger(tmp_path, *hint).code == 0
    nested = ledger(tmp_path, "matrix", "new")
    assert "(see 'git ledger help matrix new')" in nested.err


def test_bare_git_ledger_prints_its_whole_usage(tmp_path: Path) -> None:
    result = ledger(tmp_path)
    assert result.code == 2 and result.out == ""
    lines = result.err.splitlines()
    assert lines[0] == "Usage: git ledger [OPTIONS] COMMAND [ARGS]..."
    assert len(lines) > 20 and any(line.strip().startswith("register") for line in lines)


def test_dash_c_to_a_missing_directory_says_so(tmp_path: Path) -> None:
    result = ledger(tmp_path, "-C", str(tmp_path / "nope"), "status")
    assert result.code == 2
    assert "does not exist" in result.err and "PATH" not in result.err
    assert len(result.err.strip().splitlines()) == 1


@pytest.mark.parametrize(
    "args",
    [
        ("next", "--json"),
        ("status", "--json"),
        ("log", "--json"),
        ("show", "V1", "--json"),
        ("baseline", "--json"),
        ("triggers", "--json"),
        ("doctor", "--json"),
        ("-C", "/nonexistent-dir", "next", "--json"),
        ("diff", "V1", "V2", "--format", "json"),
    ],
)
def test_json_verbs_outside_a_ledger_print_a_json_error(
    tmp_path: Path, args: tuple[str, ...]
) -> None:
    result = ledger(tmp_path, *args)
    assert result.code == 2, (result.code, result.err)
    data = json.loads(result.out)
    assert data["exit_code"] == 2 and data["error"]
    assert result.err.startswith("git-ledger: error: ")


def test_json_error_in_a_ledger_leaves_it_untouched(repo: Repo) -> None:
    before = fingerprint(repo.path)
    result = repo.run("show", "V9", "--json")
    assert result.code == 2 and "V9" in result.json()["error"]
    assert fingerprint(repo.path) == before


COMPLETION = ROOT / "completion"


def _click_source(shell: str, cwd: Path) -> str:
    proc = subprocess.run(
        [sys.executable, "-m", "ledger"],
        env={**os.environ, "_GIT_LEDGER_COMPLETE": f"{shell}_source"},
        cwd=cwd,
        capture_output=True,
        text=True,
        check=True,
    )
    return proc.stdout


def test_zsh_and_fish_completion_files_are_clicks_own_scripts(tmp_path: Path) -> None:
    # Kept in the repository (installed under share/ by the wheel) and regenerated from
    # the click commands: `_GIT_LEDGER_COMPLETE=zsh_source git-ledger > completion/_git-ledger`.
    zsh = (COMPLETION / "_git-ledger").read_text()
    assert zsh == _click_source("zsh", tmp_path) and zsh.startswith("#compdef git-ledger")
    fish = (COMPLETION / "git-ledger.fish").read_text()
    assert fish.startswith(_click_source("fish", tmp_path))
    for shell, script in (("zsh", "_git-ledger"), ("fish", "git-ledger.fish")):
        if shells.have(shell):
            checked = shells.parses(shell, COMPLETION / script)
            assert checked.returncode == 0, (shell, checked.stderr)


@pytest.mark.skipif(
    not shells.GIT_BASH_COMPLETION.exists(), reason="git's bash completion is not installed"
)
def test_git_ledger_tab_completes_through_gits_own_completion(tmp_path: Path) -> None:
    script = COMPLETION / "git-ledger.bash"

    def complete(line: str) -> list[str]:
        return shells.bash_complete(line, script, tmp_path)

    assert complete("git ledger mat") == ["matrix"]
    assert complete("git ledger matrix ") == ["clean", "conclude", "join", "new", "status"]
    assert complete("git ledger register --fal") == ["--falsifier"]
    assert complete("git -C . ledger sta") == ["status"]
    assert "ledger" in complete("git led")
    assert complete("git-ledger mat") == ["matrix"]


@pytest.mark.skipif(not shells.have("zsh"), reason="zsh is not installed")
def test_zsh_completes_git_ledger_and_git_dash_ledger(tmp_path: Path) -> None:
    # zsh's _git hands `git ledger ...` to a function _git-ledger when one is on fpath.
    def complete(line: str) -> list[str]:
        return shells.zsh_complete(line, COMPLETION, tmp_path)

    assert complete("git ledger mat") == ["matrix"]
    assert complete("git ledger matrix ") == ["clean", "conclude", "join", "new", "status"]
    assert complete("git-ledger register --fal") == ["--falsifier"]
    assert complete("git -C . ledger sta") == ["status"]
    empty = tmp_path / "empty"
    empty.mkdir()
    assert shells.zsh_complete("git ledger mat", empty, tmp_path) == []  # the file does it


@pytest.mark.skipif(not shells.have("fish"), reason="fish is not installed")
def test_fish_completes_git_ledger_and_git_dash_ledger(tmp_path: Path) -> None:
    def complete(line: str) -> list[str]:
        return shells.fish_complete(line, COMPLETION / "git-ledger.fish", tmp_path)

    assert complete("git ledger mat") == ["matrix"]
    assert complete("git ledger matrix ") == ["clean", "conclude", "join", "new", "status"]
    assert complete("git -C . ledger register --fal") == ["--falsifier"]
    assert complete("git-ledger sta") == ["status"]
