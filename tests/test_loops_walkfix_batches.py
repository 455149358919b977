"""Issue 25's walk, batches loop: what ``next`` proposes after a retune or a revert is what
the command accepts (through ``git ledger``, hooks installed)."""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import Repo, fingerprint
from tests.test_loops_walkfix_versions import gl, next_json, ok

WORDS = {"X": "0.95", "true|false": "true", "TEXT": "the walk states a reason"}


def follow(repo: Repo) -> dict[str, Any]:
    """Run the command ``next`` proposes (its tokens filled); it must pass."""
    nxt = next_json(repo)
    words = [WORDS.get(w, w) for w in shlex.split(nxt["command"])]
    assert words[:2] == ["git", "ledger"], nxt
    ok(repo, *words[2:])
    return nxt


@pytest.fixture
def batch(bare_repo: Repo, tmp_path: Path) -> Repo:
    bare_repo.write("src/app.py", "x = 0\n")
    bare_repo.commit_all("feat(src): the app")
    ok(bare_repo, "init", "--preset", "batches")
    ok(bare_repo, "hooks", "install")
    weights = tmp_path / "weights.json"
    weights.write_text(json.dumps({"style": {"tone": "plain", "length": 3}, "label": "A"}))
    ok(bare_repo, "weights", "init", str(weights), "--run-id", "walk", "--frozen", "label")
    return bare_repo


def test_config_set_refuses_a_threshold_frozen_at_weights_init(batch: Repo) -> None:
    before = fingerprint(batch.path)
    for value in ("0.7", "0.9"):  # laxer, and stricter: the loop judges with 0.8 either way
        done = gl(batch, "config", "set", "batches.fidelity_min", value, "--reason", "retune")
        assert done.returncode == 1, done.stderr
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1, done.stderr
        assert "[config-frozen] batches.fidelity_min was frozen at 0.8" in lines[0]
        assert "batch-0" in lines[0]
        assert fingerprint(batch.path) == before
    assert follow(batch)["action"] == "topic"


def test_config_set_before_weights_init_is_allowed(bare_repo: Repo) -> None:
    ok(bare_repo, "init", "--preset", "batches")
    ok(bare_repo, "config", "set", "batches.fidelity_min", "0.7", "--reason", "before the run")
    assert "fidelity_min = 0.7" in (bare_repo.path / "ledger.toml").read_text()


def test_next_restores_a_threshold_lowered_by_hand_with_a_command_that_passes(
    batch: Repo,
) -> None:
    toml = batch.path / "ledger.toml"
    toml.write_text(toml.read_text().replace("hard_line = 7", "hard_line = 5"))
    # With its reason (tests/test_config_reason.py): the frozen threshold is the rule here.
    batch.commit_all("chore: lower the hard line", "--no-verify", "--trailer", "Ledger-Reason: r")
    refused = gl(
        batch,
        "gate",
        "topic",
        "--record",
        "--fidelity-rate",
        "0.9",
        "--mono",
        "true",
        "--endpoint",
        "true",
    )
    assert refused.returncode == 1 and "hard_line is 5 but 7 was frozen" in refused.stderr
    nxt = follow(batch)
    assert nxt["action"] == "restore-threshold"
    assert nxt["command"] == "git ledger config set batches.hard_line 7 --reason TEXT"
    assert "hard_line = 7" in toml.read_text()
    assert follow(batch)["action"] == "topic"
    assert gl(batch, "verify").returncode == 0


def test_next_after_a_reverted_topic_proposes_a_free_topic_id(batch: Repo) -> None:
    assert "--topic t1 " in follow(batch)["command"]
    first = batch.head()
    assert "--topic t2 " in follow(batch)["command"]
    batch.git("revert", "--no-edit", first)
    # Issue 27: a withdrawn topic is measured again (with a reason) before anything else.
    nxt = follow(batch)
    assert nxt["action"] == "remeasure" and "--topic t1 " in nxt["command"], nxt
    nxt = follow(batch)
    assert "--topic t3 " in nxt["command"], nxt
    # Without --topic, the command takes the same id next proposes.
    ok(
        batch,
        "gate",
        "topic",
        "--record",
        "--fidelity-rate",
        "0.9",
        "--mono",
        "true",
        "--endpoint",
        "true",
    )
    topics = sorted(p.stem for p in (batch.path / "training_log/topics/batch-0").glob("*.json"))
    assert topics == ["t1~1", "t2", "t3", "t4"]
    assert "--topic t5 " in next_json(batch)["command"]
