"""Invariant 5 for the campaign and batches loops: each preset declares its history rules
(``Preset.history_rules``) and ``git ledger verify`` holds every entry to them.

Honest loops verify (tests/test_loops_e2e.py ends each loop with ``verify``); here each
way of editing a loop's entries by hand is caught, naming the rule, the commit and the
path, and a whole ``git revert`` of a transition is shown as withdrawn.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from ledger.core.loops import NAMES, by_name
from tests.helpers import Repo, Templates, git
from tests.test_campaign_batches import _code, _record, close_batch, new_batch, new_camp
from tests.test_tamper import hand_commit

Tamper = Callable[[Repo], tuple[str, str]]


def rewrite_json(repo: Repo, path: str, key: str, value: object) -> None:
    data = json.loads((repo.path / path).read_text())
    data[key] = value
    (repo.path / path).write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")


def first(repo: Repo, pattern: str) -> str:
    found = sorted((repo.path / "training_log").glob(pattern))
    assert found, pattern
    return str(found[0].relative_to(repo.path))


# --- campaign -------------------------------------------------------------------------


def _repo(root: Path) -> Repo:
    (root / "repo").mkdir()
    git(root / "repo", "init", "-q")
    return Repo(root / "repo")


@pytest.fixture
def campaign(templates: Templates, tmp_path: Path) -> Repo:
    return templates.copy("campaign-history", tmp_path, campaign_history)


def campaign_history(root: Path) -> Repo:
    """A campaign with a base, an armed owner, a promoted and a rejected candidate."""
    camp = new_camp(_repo(root))
    assert _record(camp, _code(camp, "base"), "base").returncode == 0
    camp.ok("arm")
    assert (
        _record(camp, _code(camp, "fast"), "promoted", "130", "--reason", "fused").returncode == 0
    )
    assert _record(camp, _code(camp, "bad"), "rejected", "90", "--reason", "slower").returncode == 0
    camp.ok("mistake", "add", "Timed the cold start", "--caught-by", "review",
            "--should-have-caught", "warm-up check")  # fmt: skip
    result = camp.run("verify")
    assert result.code == 0, result.out
    return camp


def candidate_verdict_edited(repo: Repo) -> tuple[str, str]:
    path = first(repo, "candidates/*.json")
    rewrite_json(repo, path, "verdict", "promoted")
    return path, hand_commit(repo, "docs(campaign): tidy", path)


def candidate_edited_under_a_forged_trailer(repo: Repo) -> tuple[str, str]:
    path = first(repo, "candidates/*.json")
    rewrite_json(repo, path, "reason", "it was always faster")
    message = "docs(campaign): candidate\n\nLedger-Transition: candidate"
    return path, hand_commit(repo, message, path)


def candidate_deleted(repo: Repo) -> tuple[str, str]:
    path = sorted((repo.path / "training_log/candidates").glob("*.json"))[-1]
    path.unlink()
    rel = str(path.relative_to(repo.path))
    return rel, hand_commit(repo, "chore: drop a rejected try", rel)


def candidate_added_by_hand(repo: Repo) -> tuple[str, str]:
    src = repo.path / first(repo, "candidates/*.json")
    rel = "training_log/candidates/9999.json"
    repo.write(rel, src.read_text())
    return rel, hand_commit(repo, "docs(campaign): one more", rel)


def contract_edited(repo: Repo) -> tuple[str, str]:
    rel = "training_log/contract.md"
    repo.write(rel, "# Contract\n\nAnything goes.\n")
    return rel, hand_commit(repo, "docs(campaign): loosen", rel)


def owner_edited(repo: Repo) -> tuple[str, str]:
    rel = "training_log/owner.json"
    rewrite_json(repo, rel, "owner", "mallory")
    return rel, hand_commit(repo, "chore: take over", rel)


def view_edited(repo: Repo) -> tuple[str, str]:
    rel = "training_log/benchmark.csv"
    repo.write(rel, (repo.path / rel).read_text().replace("rejected", "promoted"))
    return rel, hand_commit(repo, "docs(campaign): fix the table", rel)


def mistake_deleted(repo: Repo) -> tuple[str, str]:
    path = first(repo, "mistakes/*.json")
    (repo.path / path).unlink()
    return path, hand_commit(repo, "chore: forget it", path)


CAMPAIGN: dict[str, Tamper] = {
    f.__name__: f
    for f in (
        candidate_verdict_edited,
        candidate_edited_under_a_forged_trailer,
        candidate_deleted,
        candidate_added_by_hand,
        contract_edited,
        owner_edited,
        view_edited,
        mistake_deleted,
    )
}


@pytest.mark.parametrize("name", sorted(CAMPAIGN))
def test_campaign_entries_change_only_through_their_transitions(campaign: Repo, name: str) -> None:
    path, commit = CAMPAIGN[name](campaign)
    result = campaign.run("verify")
    assert result.code == 1, result.out + result.err
    line = next((x for x in result.out.splitlines() if "[transitions-only]" in x), "")
    assert commit[:10] in line and path in line, result.out


def test_a_whole_revert_of_a_candidate_is_withdrawn_not_a_finding(campaign: Repo) -> None:
    last = campaign.git("log", "-1", "--format=%H", "--grep=Ledger-Transition: candidate")
    campaign.git("revert", "--no-edit", last.strip())
    result = campaign.run("verify", "--json")
    assert result.code == 0, result.out
    assert any(n["kind"] == "withdrawn" for n in result.json()["notes"])


# --- batches --------------------------------------------------------------------------


@pytest.fixture
def batches(templates: Templates, tmp_path: Path) -> Repo:
    return templates.copy("batches-history", tmp_path, batches_history)


def batches_history(root: Path) -> Repo:
    """Weights initialised, batch 0 closed, one revision, batch 1 closed, weights copied."""
    batch = new_batch(_repo(root))
    close_batch(batch, "true,true,true,true,true,true,true,false")
    batch.ok("weights", "revise", "--target", "style", "--key", "tone", "--new", "warm",
             "--reason", "reviews")  # fmt: skip
    close_batch(batch, "true,true,true,true,true,true,true,true")
    batch.ok("weights", "copy")
    result = batch.run("verify")
    assert result.code == 0, result.out
    return batch


def weights_edited(repo: Repo) -> tuple[str, str]:
    rel = "training_log/weights/batch-1.json"
    rewrite_json(repo, rel, "frozen_label", "B")
    return rel, hand_commit(repo, "chore: weights", rel)


def weights_edited_under_a_forged_trailer(repo: Repo) -> tuple[str, str]:
    rel = "training_log/weights/batch-0.json"
    rewrite_json(repo, rel, "frozen_label", "B")
    message = "chore(batches): weights\n\nLedger-Transition: weights-revise"
    return rel, hand_commit(repo, message, rel)


def meta_edited(repo: Repo) -> tuple[str, str]:
    rel = first(repo, "weights/meta.json")
    rewrite_json(repo, rel, "frozen", [])
    return rel, hand_commit(repo, "chore: unfreeze", rel)


def gate_record_edited(repo: Repo) -> tuple[str, str]:
    rel = first(repo, "gates/batch-*.json")
    data = json.loads((repo.path / rel).read_text())
    data["note"] = "all passed"
    (repo.path / rel).write_text(json.dumps(data))
    return rel, hand_commit(repo, "chore: gate", rel)


def revision_deleted(repo: Repo) -> tuple[str, str]:
    rel = first(repo, "revisions/batch-*.json")
    (repo.path / rel).unlink()
    return rel, hand_commit(repo, "chore: drop", rel)


def revision_log_edited(repo: Repo) -> tuple[str, str]:
    rel = "training_log/revision_log.jsonl"
    repo.write(rel, (repo.path / rel).read_text().replace("warm", "hot"))
    return rel, hand_commit(repo, "docs: log", rel)


BATCHES: dict[str, Tamper] = {
    f.__name__: f
    for f in (
        weights_edited,
        weights_edited_under_a_forged_trailer,
        meta_edited,
        gate_record_edited,
        revision_deleted,
        revision_log_edited,
    )
}


@pytest.mark.parametrize("name", sorted(BATCHES))
def test_batches_entries_change_only_through_their_transitions(batches: Repo, name: str) -> None:
    path, commit = BATCHES[name](batches)
    result = batches.run("verify")
    assert result.code == 1, result.out + result.err
    line = next((x for x in result.out.splitlines() if "[transitions-only]" in x), "")
    assert commit[:10] in line and path in line, result.out


def test_every_preset_declares_history_rules_that_verify_enforces() -> None:
    for name in NAMES:
        rules = by_name(name).history_rules()
        assert rules, name
        for rule in rules:
            assert {"paths", "changed_by", "rule"} <= set(rule), (name, rule)
            assert rule.get("mode", "append") == "append" or "mode" not in rule
    appended = {r["paths"] for n in ("campaign", "batches") for r in by_name(n).history_rules()
                if r.get("mode") == "append"}  # fmt: skip
    assert {"candidates/*.json", "weights/batch-*.json", "topics/**"} <= appended
