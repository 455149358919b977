"""A verb that commits leaves the next reader's answer at hand (ledger.cli.status.warm):
``status`` and ``next`` right after it read their caches, importing neither pydantic
nor pygit2, and say exactly what a cold read of the same commit says."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ledger.core.verify.engine import CACHE_FILE
from ledger.core.verifycache import REPORT_FILE
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
    """``verb --json`` with every derived cache gone (as after an upgrade): the cache
    directory and verify's report and replay state."""
    state = repo.path / ".git" / "ledger"
    shutil.rmtree(state / "cache")
    for name in (REPORT_FILE, CACHE_FILE):
        (state / name).unlink(missing_ok=True)
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


def test_a_verb_never_replays_the_whole_history_to_warm_the_cache(repo: Repo) -> None:
    """With no verify replay on record (after an upgrade: the cache is keyed by the code),
    the warm-up makes the status summary but leaves verify's replay to the next reader
    that needs it: at 10,000 steps it is tens of seconds, not a verb's to pay."""
    assert register(repo, "V1").code == 0  # register checks history itself
    state = repo.path / ".git" / "ledger"
    for made in (CACHE_FILE, REPORT_FILE, "cache/status.json"):
        (state / made).unlink()
    repo.git("ledger", "void", "V1", "--reason", "the bench was wrong")
    assert (state / "cache/status.json").exists()  # the summary: warmed
    assert not (state / CACHE_FILE).exists() and not (state / REPORT_FILE).exists()
    told = read(repo, "next")[0]  # verify's part is made by the reader that needs it
    assert (state / REPORT_FILE).exists()
    assert told == cold(repo, "next")


def test_a_refused_verb_leaves_the_cache_as_it_was(repo: Repo) -> None:
    assert register(repo, "V1").code == 0
    cache = repo.path / ".git" / "ledger" / "cache" / "status.json"
    before = cache.read_bytes()
    refused = register(repo, "V1")  # the id is taken
    assert refused.code != 0
    assert cache.read_bytes() == before


def test_a_commit_landing_while_status_reads_is_not_cached_under_the_earlier_key(
    repo: Repo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another process commits between status reading HEAD (the cache key) and reading
    the ledger (a detached run recording, a verb in the same work tree): what status
    made is the later commit's answer, and a checkout of the earlier commit must not be
    told it."""
    from ledger.cli import status

    assert register(repo, "V1").code == 0
    shutil.rmtree(repo.path / ".git" / "ledger" / "cache")
    real, raced = status._where, []

    def where_then_another_commit(cwd: Path) -> Any:
        at = real(cwd)
        if not raced:
            raced.append(at.ids)
            repo.git("ledger", "void", "V1", "--reason", "a commit in the meantime")
        return at

    monkeypatch.setattr(status, "_where", where_then_another_commit)
    status.status_data(repo.path)
    monkeypatch.setattr(status, "_where", real)  # not undo(): it would undo the sealed env
    assert raced and repo.head() != raced[0][0]
    repo.git("checkout", "-q", "--detach", raced[0][0])  # the registration, V1 open
    told = repo.git("ledger", "next", "--json")
    assert json.loads(told) == cold(repo, "next")
    assert "V1" in json.loads(told)["command"]


def test_ctrl_c_while_the_cache_is_made_keeps_the_verbs_exit(
    repo: Repo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The verb has said it is done when the warm-up starts: an interrupt then stops the
    warm-up, not the verb (no traceback, its exit code stands)."""
    from ledger.cli import status
    from ledger.core.context import open_context

    ctx = open_context(repo.path)
    ctx.state()

    def interrupted(cwd: Path) -> Any:
        raise KeyboardInterrupt

    monkeypatch.setattr(status, "_where", interrupted)
    status.warm([ctx], lambda: None)  # returns: nothing raised


def test_the_campaign_and_batches_loops_transitions_leave_the_answer_at_hand(
    bare_repo: Repo, tmp_path: Path
) -> None:
    """Their transitions load the loop whole (no ``Context.state``): the same process
    makes the next reader's answer (the campaign walk had 126 cold ``next``s right after
    ``candidate record``, the batches walk 149 after ``gate topic``)."""
    from tests.test_campaign_batches import _code, _record, new_batch, new_camp

    camp = new_camp(bare_repo)
    camp.git("ledger", "status")  # verify's replay on record: the warm-up extends it
    assert _record(camp, _code(camp, "base"), "base", "100").returncode == 0
    assert_at_hand(camp, "candidate record --verdict base")
    assert _record(camp, _code(camp, "one"), "rejected", "90", "--reason", "slower").returncode == 0
    assert_at_hand(camp, "candidate record")
    other = tmp_path / "other"
    other.mkdir()
    repo = Repo(other)
    repo.git("init", "-q")
    batch = new_batch(repo)
    batch.git("ledger", "status")
    batch.ok("gate", "topic", "--record", "--fidelity-rate", "0.9", "--mono", "true",
             "--endpoint", "true")  # fmt: skip
    assert_at_hand(batch, "gate topic --record")
