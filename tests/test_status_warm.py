"""A verb that commits leaves the next reader's answer at hand (ledger.cli.status.warm):
``status`` and ``next`` right after it read their caches, importing neither pydantic
nor pygit2, and say exactly what a cold read of the same commit says."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from typing import Any

from tests.helpers import Repo, measure, register


def read(repo: Repo, verb: str) -> tuple[Any, set[str]]:
    """``verb --json`` through a real process, and the modules it imported."""
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "ledger", verb, "--json"],
        cwd=repo.path, capture_output=True, text=True, check=True,
    )  # fmt: skip
    imported = {line.rsplit("|", 1)[-1].strip() for line in proc.stderr.splitlines()}
    return json.loads(proc.stdout), imported


def cold(repo: Repo, verb: str) -> Any:
    """``verb --json`` with every derived cache gone (as after an upgrade)."""
    shutil.rmtree(repo.path / ".git" / "ledger" / "cache")
    return read(repo, verb)[0]


def assert_at_hand(repo: Repo, after: str) -> None:
    for verb in ("next", "status"):
        warm, imported = read(repo, verb)
        assert not {"pydantic", "pygit2"} & imported, f"{verb} after {after} read the ledger"
        assert warm == cold(repo, verb), f"{verb} after {after}: the warm answer differs"
        repo.git("ledger", verb, "--json")  # and through git's dispatch, after the cold one


def test_status_and_next_after_a_step_read_what_the_step_left(repo: Repo) -> None:
    repo.git("ledger", "status")
    assert register(repo, "V1").code == 0
    assert_at_hand(repo, "register")
    repo.write("src/model.py", "SIZE = 2\n")
    repo.commit_all("feat: V1 bet", "-m", "Ledger-Step: V1")
    measure(repo, "V1", "recent", 10.0, seeds=(1, 2, 3))
    _, imported = read(repo, "next")
    # record reads one version, never the whole ledger: the next reader reads it.
    assert "pydantic" in imported
    repo.git("ledger", "conclude", "V1", "--verdict", "inconclusive", "--next", "go on")
    assert_at_hand(repo, "conclude")
    assert register(repo, "V2").code == 0
    repo.git("ledger", "void", "V2", "--reason", "the bench was wrong")
    assert_at_hand(repo, "void")


def test_a_refused_verb_leaves_the_cache_as_it_was(repo: Repo) -> None:
    assert register(repo, "V1").code == 0
    cache = repo.path / ".git" / "ledger" / "cache" / "status.json"
    before = cache.read_bytes()
    refused = register(repo, "V1")  # the id is taken
    assert refused.code != 0
    assert cache.read_bytes() == before
