"""Issue 29: ``register`` says on stderr when it pushes the branch and the witness to the
remote, and ``[sync] push_on_register = false`` in ledger.toml keeps it from pushing."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import Repo, git, register


def _remote(repo: Repo, tmp_path: Path) -> Path:
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    repo.git("remote", "add", "origin", str(remote))
    return remote


def test_register_says_it_pushes_to_origin(repo: Repo, tmp_path: Path) -> None:
    remote = _remote(repo, tmp_path)
    result = register(repo, "V1")
    assert result.code == 0, result.err
    assert "pushing main and the registration's witness to origin" in result.err
    assert "push_on_register = false" in result.err, "says how to turn it off"
    assert "pushing" not in result.out, "stdout stays the command's output"
    assert git(remote, "rev-parse", "main").strip() == repo.head()
    assert git(remote, "rev-parse", "refs/ledger/witness/V1").strip() == repo.head()


def test_push_on_register_false_keeps_register_local(repo: Repo, tmp_path: Path) -> None:
    remote = _remote(repo, tmp_path)
    toml = repo.path / "ledger.toml"
    toml.write_text(toml.read_text() + "\n[sync]\npush_on_register = false\n")
    repo.commit_all("chore: keep registrations local")
    result = register(repo, "V1")
    assert result.code == 0, result.err
    assert "pushing" not in result.err
    assert git(remote, "for-each-ref").strip() == "", "nothing reached the remote"


def test_push_on_register_is_validated(repo: Repo, tmp_path: Path) -> None:
    _remote(repo, tmp_path)
    toml = repo.path / "ledger.toml"
    base = toml.read_text()
    toml.write_text(base + '\n[sync]\npush_on_register = "no"\n')
    result = repo.run("status")
    assert result.code == 2, result.err
    assert "push_on_register" in result.err and "Traceback" not in result.err
    toml.write_text(base + "\n[sync]\npush_on_register = false\nsync_on_register = true\n")
    result = repo.run("status")
    assert result.code == 2, result.err
    assert "one setting" in result.err
