"""The path a user walks: the wheel, installed without extras into a fresh venv,
driven only through git's dispatch (`git ledger ...`), the README first.

The expensive part (build, install, the README's blocks) runs once per module; each
test then works on its own copy of the resulting repository.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from tests import shells
from tests.conftest import PIP_CACHE
from tests.helpers import once, session_root
from tests.test_readme import readme_blocks

ROOT = Path(__file__).resolve().parent.parent


class User:
    def __init__(self, env: dict[str, str], cwd: Path) -> None:
        self.env = env
        self.cwd = cwd

    def sh(self, *argv: str, ok: bool = True) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(
            argv, cwd=self.cwd, env=self.env, capture_output=True, text=True, check=False
        )
        if ok:
            assert proc.returncode == 0, f"{argv} -> {proc.returncode}\n{proc.stderr}{proc.stdout}"
        return proc


@pytest.fixture(scope="module")
def walked(
    wheel_venv: Path, tmp_path_factory: pytest.TempPathFactory
) -> tuple[dict[str, str], Path, str]:
    """The README's walk as a user types it, run once per test session
    (tests.helpers.once); each test works on a copy of its repository."""
    base = session_root(tmp_path_factory.getbasetemp()) / "user"
    venv = wheel_venv
    home = base / "home"
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("GIT_", "LEDGER_", "PYTHON", "VIRTUAL_ENV"))
    }
    env.update(
        HOME=str(home),
        GIT_CONFIG_NOSYSTEM="1",
        GIT_CONFIG_GLOBAL=str(home / ".gitconfig"),
        PIP_CACHE_DIR=PIP_CACHE,
        # A user's PATH: the venv's bin first, then the system; no test shim.
        PATH=os.pathsep.join([str(venv / "bin"), "/usr/local/bin", "/usr/bin", "/bin"]),
        MANPAGER="cat",
        MANWIDTH="100",
        GIT_PAGER="cat",
        TZ="UTC",
    )

    def walk(base: Path) -> None:
        home.mkdir()
        (home / ".gitconfig").write_text(
            "[init]\n\tdefaultBranch = main\n[user]\n\tname = A User\n"
            "\temail = user@example.com\n"
            '[protocol "file"]\n\tallow = always\n'
        )
        work = base / "work"
        work.mkdir()
        blocks = (code for why, code in readme_blocks() if why is None)
        proc = subprocess.run(
            ["bash", "--norc", "-c", "set -euo pipefail\n" + "\n".join(blocks)],
            cwd=work,
            env=env,
            capture_output=True,
            text=True,
        )
        assert proc.returncode == 0, proc.stderr[-3000:] + proc.stdout[-3000:]
        (base / "stdout.txt").write_text(proc.stdout)

    once(base, walk)
    return env, base / "work" / "shop", (base / "stdout.txt").read_text()


@pytest.fixture
def user(walked: tuple[dict[str, str], Path, str], tmp_path: Path) -> User:
    env, shop, _ = walked
    copy = tmp_path / "shop"
    shutil.copytree(shop, copy, symlinks=True)
    return User(env, copy)


def test_the_wheel_has_no_extras_and_git_dispatches_to_it(user: User) -> None:
    which = user.sh("sh", "-c", "command -v git-ledger").stdout.strip()
    assert which.startswith(user.env["PATH"].split(os.pathsep)[0])
    user.sh("python", "-c", "import pygit2")  # default dependencies
    installed = user.sh("python", "-m", "pip", "list").stdout.lower()
    # No plotting library by default: SVG is written as text, PNG is the plots extra;
    # scipy is only the tests' oracle (ledger.core.distributions): the walk ran without it.
    for extra in ("pytest", "matplotlib", "cairosvg", "scipy"):
        assert extra not in installed, extra


def test_without_the_plots_extra_a_png_plot_says_how_and_an_svg_is_drawn(user: User) -> None:
    figures = user.cwd.parent / "figures"
    refused = user.sh(
        "git", "ledger", "plot", "--gate", "recent", "--out", f"{figures}/r.png", ok=False
    )
    assert refused.returncode == 2, refused.stderr
    assert "pip install 'git-ledger[plots]'" in refused.stderr and ".svg" in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1
    assert not figures.exists()
    user.sh("git", "ledger", "plot", "--gate", "recent", "--out", f"{figures}/r.svg")
    assert (figures / "r.svg").read_text().startswith("<svg")


def test_git_ledger_help_shows_the_manual_through_man(user: User) -> None:
    out = user.sh("git", "ledger", "--help").stdout
    assert "GIT-LEDGER(1)" in out and "git ledger register [OPTIONS]" in out
    assert "No manual entry" not in out
    verb = user.sh("git", "ledger", "help", "run").stdout
    assert verb.startswith("Usage: git ledger run [OPTIONS] STEP_ID")


def test_readme_walk_left_a_healthy_ledger(
    user: User, walked: tuple[dict[str, str], Path, str]
) -> None:
    status = user.sh("git", "ledger", "status", "--json")
    data = json.loads(status.stdout)
    assert data["counts"]["concluded"] >= 3 and not data["problems"]
    assert "<svg" in (walked[1].parent / "report.html").read_text()
    assert user.sh("git", "status", "--porcelain").stdout == ""
    user.sh("git", "fsck", "--strict")
    assert user.sh("git", "ledger", "doctor").returncode == 0


def test_report_html_and_plot_work_without_extras(user: User) -> None:
    user.sh("git", "ledger", "report", "--format", "html", "--out", "r.html")
    assert (user.cwd / "r.html").read_text().count("<svg") >= 1
    user.sh("git", "ledger", "plot", "--gate", "recent", "--out", "p.svg")
    assert (user.cwd / "p.svg").read_text().lstrip().startswith(("<?xml", "<svg"))


def test_matrix_winner_is_pushed_to_a_bare_remote(user: User, tmp_path: Path) -> None:
    remote = tmp_path / "remote.git"
    user.sh("git", "init", "-q", "--bare", str(remote))
    user.sh("git", "remote", "add", "origin", str(remote))
    push = user.sh("git", "push", "-q", "origin", "main", ok=False)
    assert push.returncode == 0, f"pre-push refused the merged matrix: {push.stderr}"
    cache = user.sh("git", "--git-dir", str(remote), "show", "main:src/cache.py").stdout
    assert cache.strip() == "SIZE = 256"
    sync = user.sh("git", "ledger", "sync", ok=False)
    assert sync.returncode == 0, sync.stderr


def test_a_git_revert_of_a_transition_shows_in_log(user: User) -> None:
    user.sh(
        "git",
        "ledger",
        "register",
        "V4",
        "--bet",
        "Eviction by LRU lifts the score",
        "--gate",
        "recent",
        "--files",
        "src/cache.py",
        "--falsifier",
        "no gain",
    )
    registered = user.sh("git", "rev-parse", "HEAD").stdout.strip()
    revert = user.sh("git", "revert", "--no-edit", "HEAD", ok=False)
    assert revert.returncode == 0, f"the hooks refused a revert: {revert.stderr.strip()}"
    log = user.sh("git", "ledger", "log", "-n", "2").stdout.splitlines()
    # A revert row naming what it undid, above the registration it undid (not a copy of it)
    assert log[1].split()[2:4] == ["revert", "V4"], log
    assert f"(undoes {registered[:10]})" in log[1], log
    assert log[2].split()[2:4] == ["register", "V4"], log
    assert "V4" not in json.loads(user.sh("git", "ledger", "status", "--json").stdout)["open"]


def test_doctor_fix_removes_a_stale_lock_typed_through_git(user: User) -> None:
    lock = user.cwd / ".git/index.lock"
    lock.write_text("")
    old = time.time() - 3600
    os.utime(lock, (old, old))
    user.sh("git", "ledger", "doctor", "--fix", ok=False)
    assert not lock.exists()
    assert user.sh("git", "ledger", "doctor").returncode == 0


def test_editing_ledger_toml_after_hooks_install_commits(user: User) -> None:
    toml = user.cwd / "ledger.toml"
    toml.write_text(toml.read_text().replace("noise_floor = 1.0", "noise_floor = 0.8"))
    # A setting that judges changes with its reason: the hook says how, in one line.
    asked = user.sh("git", "commit", "-qam", "chore(ledger): a tighter noise floor", ok=False)
    assert asked.returncode == 1 and "--trailer 'Ledger-Reason: why'" in asked.stderr
    user.sh("git", "commit", "-qam", "chore(ledger): a tighter noise floor", "--trailer",
            "Ledger-Reason: measured the noise again")  # fmt: skip
    assert user.sh("git", "status", "--porcelain", "--", "ledger.toml").stdout == ""
    trailers = user.sh("git", "log", "-1", "--format=%(trailers:only,unfold)").stdout
    assert "Ledger-Transition: config" in trailers, trailers
    user.sh("git", "ledger", "next")


def test_the_installed_completion_files_complete_git_ledger(user: User) -> None:
    share = Path(user.env["PATH"].split(os.pathsep)[0]).parent / "share"
    bash = share / "bash-completion/completions/git-ledger"
    if shells.GIT_BASH_COMPLETION.exists():
        assert shells.bash_complete("git ledger mat", bash, user.cwd, user.env) == ["matrix"]
    if shells.have("zsh"):
        zsh = share / "zsh/site-functions"
        assert shells.zsh_complete("git ledger mat", zsh, user.cwd, user.env) == ["matrix"]
    if shells.have("fish"):
        fish = share / "fish/vendor_completions.d/git-ledger.fish"
        assert shells.fish_complete("git ledger mat", fish, user.cwd, user.env) == ["matrix"]
    assert bash.is_file() and (share / "zsh/site-functions/_git-ledger").is_file()
