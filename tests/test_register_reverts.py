"""The versions whose code is reverted on HEAD (the parent register passes over) are read
from history once and kept: each later read adds only the new commits, and gives what a
whole walk gives whatever happened to the branch in between."""

from __future__ import annotations

import json
from pathlib import Path

from ledger.core.store import Store
from ledger.presets.versions.reverts import FILE, reverted_versions
from tests.helpers import Repo, register


def cache_file(repo: Repo) -> Path:
    return repo.path / ".git" / "ledger" / "cache" / FILE


def read(repo: Repo) -> set[str]:
    return reverted_versions(Store(repo.path))


def walked_whole(repo: Repo) -> set[str]:
    cache_file(repo).unlink(missing_ok=True)
    return read(repo)


def code(repo: Repo, vid: str, text: str) -> str:
    repo.write(f"src/{vid.lower()}.py", text)
    return repo.commit_all(f"feat: {vid} code", "-m", f"Ledger-Step: {vid}")


def test_reverted_versions_read_again_after_new_commits_equal_a_whole_walk(repo: Repo) -> None:
    register(repo, "V1")
    assert read(repo) == set() and cache_file(repo).exists()
    first = code(repo, "V1", "A = 1\n")
    assert read(repo) == set()
    repo.git("revert", "--no-edit", first)
    assert read(repo) == {"V1"} == walked_whole(repo)
    code(repo, "V1", "A = 2\n")  # code again: no longer all of it reverted
    assert read(repo) == set() == walked_whole(repo)


def test_reverted_versions_after_the_branch_is_rewound_forget_what_it_left(repo: Repo) -> None:
    register(repo, "V1")
    first = code(repo, "V1", "A = 1\n")
    repo.git("revert", "--no-edit", first)
    assert read(repo) == {"V1"}
    # The revert is dropped: the cached tip is no ancestor of HEAD any more.
    repo.git("reset", "-q", "--hard", first)
    assert read(repo) == set() == walked_whole(repo)


def test_reverted_versions_ignore_a_foreign_cache_and_a_tip_that_is_gone(repo: Repo) -> None:
    register(repo, "V1")
    first = code(repo, "V1", "A = 1\n")
    repo.git("revert", "--no-edit", first)
    assert read(repo) == {"V1"}
    record = json.loads(cache_file(repo).read_text())
    record["data"]["tip"] = "0" * 40  # a commit no longer in the repository
    cache_file(repo).write_text(json.dumps(record))
    assert read(repo) == {"V1"}
    cache_file(repo).write_text('{"key": "another program", "data": {"tip": 1}}\n')
    assert read(repo) == {"V1"}
