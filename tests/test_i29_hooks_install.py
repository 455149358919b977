"""Issue 29: ``hooks install`` in a working clone installs the client hooks only (the
four the README counts); the server's pre-receive, update and post-receive come with
``--server``, which in a bare repository installs just those three: they refuse tampered
pushes, and post-receive remembers each ledger branch's tip."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.helpers import Repo, git, measure, register
from tests.test_tamper import SCENARIOS, hooked_commit

CLIENT = ["commit-msg", "pre-commit", "pre-push", "prepare-commit-msg"]


def _ours(hooks: Path) -> list[str]:
    return sorted(
        p.name
        for p in hooks.iterdir()
        if p.is_file() and "identity: git-ledger-hook" in p.read_text(errors="replace")
    )


def test_hooks_install_in_a_clone_writes_the_four_client_hooks_only(repo: Repo) -> None:
    result = repo.ok("hooks", "install")
    assert _ours(repo.path / ".git" / "hooks") == CLIENT
    assert "installed 4 git-ledger hooks" in result.out
    assert "hooks install --server" in result.out, "says where the server hooks are"
    doctor = repo.run("doctor")
    assert "hooks missing" not in doctor.out + doctor.err, doctor.out


def test_hooks_install_server_in_a_clone_adds_pre_receive_and_update(repo: Repo) -> None:
    repo.ok("hooks", "install", "--server")
    server = ["post-receive", "pre-receive", "update"]
    assert _ours(repo.path / ".git" / "hooks") == sorted([*CLIENT, *server])
    repo.ok("hooks", "uninstall")
    assert _ours(repo.path / ".git" / "hooks") == []


def _served(tmp_path: Path) -> Path:
    """A bare repository with the server's hooks, installed through git's dispatch."""
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    installed = subprocess.run(
        ["git", "ledger", "hooks", "install", "--server"],
        cwd=remote,
        capture_output=True,
        text=True,
        check=False,
    )
    assert installed.returncode == 0, installed.stderr
    return remote


def test_hooks_install_server_in_a_bare_repository_refuses_a_tampered_push(
    repo: Repo, tmp_path: Path
) -> None:
    remote = _served(tmp_path)
    assert _ours(remote / "hooks") == ["post-receive", "pre-receive", "update"]
    repo.git("remote", "add", "origin", str(remote))
    repo.ok("hooks", "install")
    assert register(repo, "V1").code == 0
    repo.write("src/model.py", "x = 1\n")
    assert hooked_commit(repo, "feat(model): V1 — the change", "src/model.py").returncode == 0
    measure(repo, "V1", "recent", 10.0, seeds=(1, 2, 3))
    push = ["git", "push", "--no-verify", "origin", "HEAD:refs/heads/main"]
    done = subprocess.run(push, cwd=repo.path, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    # post-receive (its own boot, started with -S) remembered the ledger's branch.
    assert git(remote, "rev-parse", "refs/ledger/server/tips/main").strip() == repo.head()
    rule, _ = SCENARIOS["result_edited"](repo)
    done = subprocess.run(push, cwd=repo.path, capture_output=True, text=True, check=False)
    assert done.returncode != 0, done.stderr
    assert "git-ledger pre-receive refused" in done.stderr and f"[{rule}]" in done.stderr


def test_the_server_pair_judges_a_push_once(repo: Repo, tmp_path: Path) -> None:
    """git runs pre-receive on the whole push before any update hook: with ours beside
    it, update starts no check of its own; alone (or beside a foreign pre-receive) it
    judges each ref, and a tampered push is refused either way."""
    remote = _served(tmp_path)
    update = remote / "hooks" / "update"
    # Every Python the update hook starts says so on the pushing side ("remote: ...").
    update.write_text(update.read_text().replace("-I -S -c", "-X importtime -I -S -c"))
    repo.git("remote", "add", "origin", str(remote))
    assert register(repo, "V1").code == 0
    measure(repo, "V1", "recent", 10.0, seeds=(1, 2))
    push = ["git", "push", "--no-verify", "origin", "HEAD:refs/heads/main"]

    def pushed() -> subprocess.CompletedProcess[str]:
        return subprocess.run(push, cwd=repo.path, capture_output=True, text=True, check=False)

    done = pushed()
    assert done.returncode == 0, done.stderr
    assert "import time" not in done.stderr, "update judged again what pre-receive judged"
    rule, _ = SCENARIOS["result_edited"](repo)
    done = pushed()
    assert done.returncode != 0 and "git-ledger pre-receive refused" in done.stderr
    assert f"[{rule}]" in done.stderr and "import time" not in done.stderr
    # A foreign pre-receive: update is the ledger's only check, and it runs.
    pre_receive = remote / "hooks" / "pre-receive"
    pre_receive.write_text("#!/bin/sh\nexit 0\n")
    done = pushed()
    assert done.returncode != 0 and "git-ledger update refused" in done.stderr
    assert f"[{rule}]" in done.stderr and "import time" in done.stderr
    pre_receive.unlink()
    done = pushed()
    assert done.returncode != 0 and "git-ledger update refused" in done.stderr
