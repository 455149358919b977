"""Issue 27, batches loop: a batch closes from its recorded topics only, and a recorded topic
result changes only by a re-measurement with a reason (a revert blocks the batch until
then). Driven through ``git ledger`` with hooks installed, as an adversary would."""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import Repo, fingerprint
from tests.test_loops_walkfix_versions import gl, next_json, ok

WORDS = {"X": "0.95", "true|false": "true", "TEXT": "the first run read a stale cache"}
EIGHT = "true,true,true,true,true,true,true,true"


def follow(repo: Repo) -> dict[str, Any]:
    """Run the command ``next`` proposes (its placeholders filled); it must pass."""
    nxt = next_json(repo)
    words = [WORDS.get(w, w) for w in shlex.split(nxt["command"])]
    assert words[:2] == ["git", "ledger"], nxt
    ok(repo, *words[2:])
    return nxt


def topic(repo: Repo, name: str, rate: str = "0.9", *extra: str) -> str:
    return ok(
        repo, "gate", "topic", "--record", "--topic", name, "--fidelity-rate", rate,
        "--mono", "true", "--endpoint", "true", *extra,
    )  # fmt: skip


def head(repo: Repo) -> str:
    return repo.git("rev-parse", "HEAD").strip()


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


def test_gate_batch_record_without_topics_is_refused_and_nothing_converges(batch: Repo) -> None:
    before = fingerprint(batch.path)
    for _ in range(3):
        done = gl(batch, "gate", "batch", "--flags", EIGHT, "--record")
        assert done.returncode == 1, done.stderr
        assert "[topics-missing] batch 0 has 0 of 8 topics recorded" in done.stderr
        assert fingerprint(batch.path) == before
    converged = gl(batch, "gate", "converged", "--record")
    assert converged.returncode == 1
    nxt = next_json(batch)
    assert nxt["action"] == "topic" and "[topics-missing]" in nxt["reason"]


def test_gate_batch_record_reads_its_flags_from_the_topics(batch: Repo) -> None:
    for i in range(1, 8):
        topic(batch, f"t{i}")
    topic(batch, "t8", "0.5")  # fails its gate
    wrong = gl(batch, "gate", "batch", "--flags", EIGHT, "--record")
    assert wrong.returncode == 2 and "disagree with the recorded topics" in wrong.stderr
    nxt = follow(batch)
    assert nxt["command"] == "git ledger gate batch --record"
    gate = json.loads((batch.path / "training_log/gates/batch-0.json").read_text())
    assert gate["inputs"]["flags"] == [True] * 7 + [False] and gate["ratio"] == 0.875
    assert gl(batch, "verify").returncode == 0


def test_a_recorded_topic_changes_only_by_a_remeasurement_with_a_reason(batch: Repo) -> None:
    topic(batch, "t1", "0.5")
    before = fingerprint(batch.path)
    again = gl(
        batch, "gate", "topic", "--record", "--topic", "t1", "--fidelity-rate", "0.95",
        "--mono", "true", "--endpoint", "true",
    )  # fmt: skip
    assert again.returncode == 2 and "--remeasure" in again.stderr
    bare = gl(
        batch, "gate", "topic", "--record", "--remeasure", "--topic", "t1",
        "--fidelity-rate", "0.95", "--mono", "true", "--endpoint", "true",
    )  # fmt: skip
    assert bare.returncode == 2 and "--reason" in bare.stderr
    assert fingerprint(batch.path) == before
    topic(batch, "t1", "0.95", "--remeasure", "--reason", "the grader was misconfigured")
    first = json.loads((batch.path / "training_log/topics/batch-0/t1.json").read_text())
    second = json.loads((batch.path / "training_log/topics/batch-0/t1~1.json").read_text())
    assert first["pass"] is False and second["pass"] is True
    assert second["remeasure"]["reason"] == "the grader was misconfigured"
    assert second["remeasure"]["previous"]["pass"] is False
    trailer = batch.git("log", "-1", "--format=%(trailers:key=Ledger-Transition,valueonly)")
    assert trailer.strip() == "topic-remeasure"
    for i in range(2, 9):
        topic(batch, f"t{i}")
    ok(batch, "gate", "batch", "--record")
    gate = json.loads((batch.path / "training_log/gates/batch-0.json").read_text())
    assert gate["inputs"]["flags"] == [True] * 8
    assert gl(batch, "verify").returncode == 0


def test_a_reverted_topic_blocks_the_batch_and_next_until_it_is_measured_again(
    batch: Repo,
) -> None:
    for i in range(1, 8):
        topic(batch, f"t{i}")
    assert "--topic t8" in next_json(batch)["command"]  # status has seen this ledger tree
    topic(batch, "t8", "0.5")  # a failing topic ...
    batch.git("revert", "--no-edit", head(batch))  # ... withdrawn by a revert: the same tree
    assert next_json(batch)["action"] == "remeasure", "status answered from the earlier tree"
    before = fingerprint(batch.path)
    closing = gl(batch, "gate", "batch", "--record")
    assert closing.returncode == 1 and "[topic-withdrawn] topic t8 of batch 0" in closing.stderr
    # ... and re-recorded as a pass without a word: refused.
    plain = gl(
        batch, "gate", "topic", "--record", "--topic", "t8", "--fidelity-rate", "0.95",
        "--mono", "true", "--endpoint", "true",
    )  # fmt: skip
    assert plain.returncode == 1 and "[topic-withdrawn]" in plain.stderr
    assert fingerprint(batch.path) == before
    nxt = follow(batch)
    assert nxt["action"] == "remeasure" and "--topic t8" in nxt["command"]
    entry = json.loads((batch.path / "training_log/topics/batch-0/t8~1.json").read_text())
    assert entry["remeasure"]["reason"] == WORDS["TEXT"]
    assert entry["remeasure"]["previous"] is None  # the withdrawn result is in history
    assert follow(batch)["action"] == "close-batch"
    assert gl(batch, "verify").returncode == 0
