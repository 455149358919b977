"""The first minutes of a user: help through git, usage errors, -C, JSON errors, completion."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from ledger.cli import cli
from ledger.manpage import PAGE, render
from tests.helpers import Repo, fingerprint, ledger

ROOT = Path(__file__).resolve().parent.parent
GIT_COMPLETION = Path("/usr/share/bash-completion/completions/git")


def test_man_page_in_the_repository_matches_the_click_commands() -> None:
    assert PAGE.read_text() == render(cli), "regenerate it: python -m ledger.manpage"
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


def _complete(line: str, tmp_path: Path) -> list[str]:
    script = f"""
source {GIT_COMPLETION}
source {ROOT / "completion/git-ledger.bash"}
COMP_LINE={line!r}; COMP_POINT=${{#COMP_LINE}}
read -ra COMP_WORDS <<< "$COMP_LINE"
[[ $COMP_LINE == *" " ]] && COMP_WORDS+=("")
COMP_CWORD=$((${{#COMP_WORDS[@]}} - 1))
__git_wrap__git_main
printf '%s\\n' "${{COMPREPLY[@]}}"
"""
    proc = subprocess.run(
        ["bash", "--norc", "-c", script], cwd=tmp_path, capture_output=True, text=True, check=True
    )
    return [w.strip() for w in proc.stdout.splitlines() if w.strip()]


@pytest.mark.skipif(not GIT_COMPLETION.exists(), reason="git's bash completion is not installed")
def test_git_ledger_tab_completes_through_gits_own_completion(tmp_path: Path) -> None:
    assert _complete("git ledger mat", tmp_path) == ["matrix"]
    assert _complete("git ledger matrix ", tmp_path) == [
        "clean",
        "conclude",
        "join",
        "new",
        "status",
    ]
    assert _complete("git ledger register --fal", tmp_path) == ["--falsifier"]
    assert _complete("git -C . ledger sta", tmp_path) == ["status"]
    assert "ledger" in _complete("git led", tmp_path)


def test_zsh_and_fish_completion_scripts_name_the_console_script(tmp_path: Path) -> None:
    import os
    import sys

    for shell, first in (("zsh", "#compdef git-ledger"), ("fish", "function _git_ledger")):
        proc = subprocess.run(
            [sys.executable, "-m", "ledger"],
            env={**os.environ, "_GIT_LEDGER_COMPLETE": f"{shell}_source"},
            cwd=tmp_path,
            capture_output=True,
            text=True,
            check=False,
        )
        assert proc.returncode == 0 and proc.stdout.startswith(first), (shell, proc.stdout[:200])
