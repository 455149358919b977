"""``sync`` decides by git's machine-readable output, so a translated git changes nothing.

No non-English locale is installed here (``locale -a``), so a wrapper ``git``
first on PATH stands in for one: it runs the real git and rewrites every
message on stderr into German, whatever ``LC_ALL`` says (the worst case: a
decision read from English text would miss). Its stdout, where ``--porcelain``
and ``ls-remote`` answer, is git's own, as a real translation leaves it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import Repo, git

ROOT = Path(__file__).resolve().parent.parent

_WRAPPER = """#!{python}
import subprocess, sys
WORDS = [
    ("failed to push some refs to", "Fehler beim Versenden einiger Referenzen nach"),
    ("[remote rejected]", "[entfernt abgewiesen]"),
    ("non-fast-forward", "kein Vorspulen"),
    ("fetch first", "zuerst anfordern"),
    ("stale info", "veraltete Informationen"),
    ("hook declined", "Hook abgelehnt"),
    ("couldn't find remote ref", "Remote-Referenz nicht gefunden"),
    ("rejected", "abgewiesen"),
    ("refused", "verweigert"),
    ("error:", "Fehler:"),
    ("fatal:", "Schwerwiegend:"),
    ("hint:", "Hinweis:"),
    ("Updates were", "Aktualisierungen wurden"),
]
proc = subprocess.run([{git!r}, *sys.argv[1:]], stderr=subprocess.PIPE)
text = proc.stderr.decode("utf-8", "replace")
for english, german in WORDS:
    text = text.replace(english, german)
with open({log!r}, "a") as log:
    log.write(text)
sys.stderr.write(text)
sys.exit(proc.returncode)
"""


@pytest.fixture
def translated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A ``git`` that speaks German on stderr, first on PATH; returns its stderr log."""
    real = shutil.which("git")
    assert real is not None
    bindir = tmp_path / "german-bin"
    bindir.mkdir()
    log = tmp_path / "german.log"
    wrapper = bindir / "git"
    wrapper.write_text(_WRAPPER.format(python=sys.executable, git=real, log=str(log)))
    wrapper.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}:{os.environ['PATH']}")
    return log


def _clone(remote: Path, path: Path) -> Repo:
    subprocess.run(["git", "clone", "-q", str(remote), str(path)], check=True, capture_output=True)
    repo = Repo(path)
    repo.ok("doctor", "--fix")
    return repo


def _note(repo: Repo, tag: str) -> None:
    subprocess.run(
        [sys.executable, "-m", "tests.writer", str(repo.path), "1", tag], cwd=ROOT, check=True
    )


@pytest.fixture
def shared(repo: Repo, tmp_path: Path) -> tuple[Repo, Path]:
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    repo.git("remote", "add", "origin", str(remote))
    repo.ok("sync")
    return repo, remote


def test_sync_with_a_translated_git_still_retries_a_push_race(
    shared: tuple[Repo, Path], tmp_path: Path, translated: Path
) -> None:
    repo, remote = shared
    other = _clone(remote, tmp_path / "other")
    _note(other, "theirs")
    _note(repo, "ours")
    # Another machine pushes while ours is between reading the remote and updating
    # it: its pre-push hook runs after git read the remote's refs.
    flag = tmp_path / "race-once"
    flag.write_text("")
    hook = repo.path / ".git/hooks/pre-push"
    hook.parent.mkdir(exist_ok=True)
    hook.write_text(
        "#!/bin/sh\n"
        f'if [ -f "{flag}" ]; then rm "{flag}"; '
        f'env -u GIT_DIR -u GIT_INDEX_FILE -u GIT_WORK_TREE git -C "{other.path}" '
        "push -q origin HEAD:refs/heads/main >&2; fi\n"
    )
    hook.chmod(0o755)
    result = repo.run("sync")
    assert result.code == 0, (result.code, result.err)
    assert not flag.exists(), "the race happened"
    assert "in 2 round(s)" in result.out, result.out
    files = git(remote, "ls-tree", "-r", "--name-only", "main", "training_log/notes").split()
    assert {"training_log/notes/ours-0000.json", "training_log/notes/theirs-0000.json"} <= set(
        files
    )
    assert "Fehler" in translated.read_text(), "git really spoke German on the way"


def test_sync_with_a_translated_git_reports_a_remote_refusal_with_its_reason(
    shared: tuple[Repo, Path], translated: Path
) -> None:
    repo, remote = shared
    hook = remote / "hooks" / "pre-receive"
    hook.parent.mkdir(exist_ok=True)
    hook.write_text("#!/bin/sh\necho 'policy: the ledger is frozen for the release' >&2\nexit 1\n")
    hook.chmod(0o755)
    _note(repo, "ours")
    before = git(remote, "rev-parse", "main")
    result = repo.run("sync")
    assert result.code == 1, (result.code, result.err)
    line = result.err.strip()
    assert len(line.splitlines()) == 1 and "Traceback" not in line, line
    assert "origin refused the push (refs/heads/main: pre-receive hook declined)" in line, line
    assert "policy: the ledger is frozen for the release" in line, line
    assert "['" not in line and "[]" not in line, "never a Python list"
    assert git(remote, "rev-parse", "main") == before


def test_sync_reports_an_unreachable_remote_with_gits_reason_not_exit_3(
    repo: Repo, tmp_path: Path, translated: Path
) -> None:
    repo.git("remote", "add", "origin", str(tmp_path / "nowhere.git"))
    result = repo.run("sync")
    assert result.code == 1, (result.code, result.err)
    assert "cannot read origin" in result.err and "nowhere.git" in result.err, result.err
    assert "['" not in result.err


def test_git_calls_run_in_the_c_locale_with_an_allowlisted_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from ledger.core import gitcli

    monkeypatch.setenv("LANGUAGE", "de")
    monkeypatch.setenv("LC_ALL", "de_DE.UTF-8")
    monkeypatch.setenv("GIT_DIR", "/elsewhere")
    monkeypatch.setenv("GIT_INDEX_FILE", "/elsewhere/index")
    monkeypatch.setenv("GIT_OBJECT_DIRECTORY", "/elsewhere/objects")
    monkeypatch.setenv("GIT_SSH_COMMAND", "ssh -i key")
    monkeypatch.setenv("GIT_CONFIG_KEY_0", "core.sshCommand")
    monkeypatch.setenv("SSH_AUTH_SOCK", "/tmp/agent")
    monkeypatch.setenv("https_proxy", "http://proxy:3128")
    clean = gitcli.git_env(clean=True)
    assert clean["LC_ALL"] == "C" and "LANGUAGE" not in clean
    for gone in ("GIT_DIR", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY"):
        assert gone not in clean
    for kept in ("GIT_SSH_COMMAND", "GIT_CONFIG_KEY_0", "SSH_AUTH_SOCK", "https_proxy", "HOME"):
        assert kept in clean, kept
    inside_a_hook = gitcli.git_env()
    assert inside_a_hook["GIT_INDEX_FILE"] == "/elsewhere/index" and inside_a_hook["LC_ALL"] == "C"


def test_sync_that_cannot_fast_forward_says_gits_reason_not_exit_3(
    shared: tuple[Repo, Path], tmp_path: Path
) -> None:
    repo, remote = shared
    other = _clone(remote, tmp_path / "other")
    _note(other, "theirs")
    other.ok("sync")
    repo.write("training_log/notes/theirs-0000.json", "mine, untracked\n")
    head = repo.head()
    result = repo.run("sync")
    assert result.code == 1, (result.code, result.err)
    assert "could not fast-forward to origin/main" in result.err, result.err
    assert "training_log/notes/theirs-0000.json" in result.err, result.err
    assert repo.head() == head
