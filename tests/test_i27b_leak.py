"""Issue 27, batches loop: the leak audit matches stems and parts of compounds, uses the
committed vocabulary frozen at ``weights init`` (a change is a transition with a reason),
says loudly when it is empty; ``--new null`` is refused unless asked for. Through
``git ledger`` with hooks installed."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.helpers import Repo, Templates, fingerprint, git
from tests.test_i27b_batches import topic
from tests.test_loops_walkfix_versions import gl, ok

VOCAB = "training_log/forbidden.txt"


def start(repo: Repo, tmp_path: Path, words: str) -> None:
    repo.write("src/app.py", "x = 0\n")
    repo.commit_all("feat(src): the app")
    ok(repo, "init", "--preset", "batches")
    ok(repo, "hooks", "install")
    if words:
        (repo.path / VOCAB).write_text(words)
        repo.git("commit", "-qam", "chore(batches): the forbidden vocabulary")
    weights = tmp_path / "weights.json"
    weights.write_text(json.dumps({"style": {"tone": "plain"}}))
    ok(repo, "weights", "init", str(weights), "--run-id", "walk")


def close(repo: Repo) -> None:
    for i in range(1, 9):
        topic(repo, f"t{i}")
    ok(repo, "gate", "batch", "--record")


def revise(repo: Repo, new: str, *extra: str) -> subprocess.CompletedProcess[str]:
    return gl(
        repo, "weights", "revise", "--target", "style", "--key", "tone", "--new", new,
        "--reason", "reviews", *extra,
    )  # fmt: skip


def closed_batch(root: Path) -> Repo:
    """Batch 0 of a batches ledger with a vocabulary, closed, hooks installed."""
    (root / "repo").mkdir()
    git(root / "repo", "init", "-q")
    repo = Repo(root / "repo")
    start(repo, root, "checklist\nanswer key\n")
    close(repo)
    return repo


@pytest.fixture
def batch(templates: Templates, tmp_path: Path) -> Repo:
    return templates.copy("leak-closed-batch", tmp_path, closed_batch)


@pytest.mark.parametrize(
    "text",
    [
        "be checklist-driven",
        "fill the quality_checklist",
        "re-checklisted answers",
        "a qualityChecklist first",
        "compare with the answer-keys",
    ],
)
def test_the_leak_audit_matches_stems_and_parts_of_compounds(batch: Repo, text: str) -> None:
    before = fingerprint(batch.path)
    done = revise(batch, text)
    assert done.returncode == 1 and "[leak-audit]" in done.stderr
    assert fingerprint(batch.path) == before


def test_the_vocabulary_is_frozen_at_weights_init_and_changed_by_a_transition(
    batch: Repo,
) -> None:
    (batch.path / VOCAB).write_text("# emptied\n")
    batch.git("commit", "-qam", "chore(batches): empty the vocabulary")
    frozen = revise(batch, "keep a checklist")
    assert frozen.returncode == 1 and "checklist" in frozen.stderr
    changed = gl(batch, "weights", "vocabulary", "--reason", "the grader changed")
    assert changed.returncode == 0, changed.stderr
    assert "[leak-audit]" in changed.stderr and "is empty" in changed.stderr
    body = batch.git("log", "-1", "--format=%B")
    assert "the grader changed" in body and "Ledger-Transition: vocabulary" in body
    meta = json.loads((batch.path / "training_log/weights/meta.json").read_text())
    assert meta["vocabulary"] == []
    done = revise(batch, "keep a checklist")
    assert done.returncode == 0 and "is empty" in done.stderr
    assert gl(batch, "verify").returncode == 0


def test_an_empty_vocabulary_is_said_loudly(bare_repo: Repo, tmp_path: Path) -> None:
    bare_repo.write("src/app.py", "x = 0\n")
    bare_repo.commit_all("feat(src): the app")
    ok(bare_repo, "init", "--preset", "batches")
    weights = tmp_path / "weights.json"
    weights.write_text(json.dumps({"style": {"tone": "plain"}}))
    done = gl(bare_repo, "weights", "init", str(weights))
    assert done.returncode == 0
    assert "[leak-audit] the forbidden vocabulary training_log/forbidden.txt is empty" in (
        done.stderr
    )


def test_an_uncommitted_vocabulary_is_not_frozen(bare_repo: Repo, tmp_path: Path) -> None:
    bare_repo.write("src/app.py", "x = 0\n")
    bare_repo.commit_all("feat(src): the app")
    ok(bare_repo, "init", "--preset", "batches")
    (bare_repo.path / VOCAB).write_text("checklist\n")  # not committed
    weights = tmp_path / "weights.json"
    weights.write_text(json.dumps({"style": {"tone": "plain"}}))
    done = gl(bare_repo, "weights", "init", str(weights))
    assert done.returncode == 2 and "uncommitted" in done.stderr


def test_new_null_is_refused_unless_asked_for(batch: Repo) -> None:
    before = fingerprint(batch.path)
    done = revise(batch, "null")
    assert done.returncode == 2 and "--allow-null" in done.stderr
    assert fingerprint(batch.path) == before
    assert revise(batch, "null", "--allow-null").returncode == 0
    weights = json.loads((batch.path / "training_log/weights/batch-1.json").read_text())
    assert weights["style"]["tone"] is None
