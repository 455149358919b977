"""Kinds of transition that the history rules know: a re-measurement (``run --remeasure``,
``record --remeasure``) is a transition of its own, allowed to add results to a concluded
version in their own slots and nothing else.

The path users hit first: a re-measurement for a reflection was reported by ``verify`` as
``[append-only-results]``, and from then on every push and every ``sync`` was refused.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from ledger.core import caches
from ledger.core.verifycache import RULES_VERSION
from tests.helpers import Repo, Templates, git, register
from tests.scripted import SPLIT, Plan
from tests.test_tamper import hand_commit

REMEASURED = "training_log/results/V1/recent/seed-1-r1000.json"


def hooked_push(repo: Repo) -> subprocess.CompletedProcess[str]:
    """``git push`` with the installed pre-push hook (it runs verify on what is pushed)."""
    return subprocess.run(
        ["git", "push", "-q", "origin", "HEAD:main"],
        cwd=repo.path,
        capture_output=True,
        text=True,
        check=False,
    )


@pytest.fixture
def concluded(templates: Templates, tmp_path: Path) -> Repo:
    """Hooks installed, a bare remote: V1 registered, run on four seeds, concluded, pushed.
    (The copy's gate runs the template's scripted evaluation: its plan is never changed.)"""
    return templates.copy("remeasure-concluded", tmp_path, concluded_v1)


def concluded_v1(root: Path) -> Repo:
    (root / "repo").mkdir()
    git(root / "repo", "init", "-q")
    repo = Repo(root / "repo")
    remote = root / "remote.git"
    git(root, "init", "-q", "--bare", str(remote))
    repo.git("remote", "add", "origin", str(remote))
    plan = Plan(repo, ("recent",))
    plan.data["split"] = {**SPLIT, "42": 0.0}  # a seed the version was not run on
    plan._save()
    repo.ok("hooks", "install")
    assert register(repo, "V1").code == 0
    plan.means("V1", recent=10.0)
    plan.run("V1", "recent")
    repo.ok("conclude", "V1", "--verdict", "confirmed", "--next", "measure the eval noise")
    pushed = hooked_push(repo)
    assert pushed.returncode == 0, pushed.stderr
    return repo


def findings(repo: Repo) -> list[dict[str, str]]:
    result = repo.run("verify", "--json")
    data = result.json()
    assert result.code == (1 if data["findings"] else 0), result.err
    return list(data["findings"])


def test_run_remeasure_on_a_concluded_version_verifies_and_pushes(concluded: Repo) -> None:
    repo = concluded
    repo.ok("run", "V1", "--gate", "recent", "--seeds", "42", "--remeasure", "eval noise")
    assert repo.trailers()["Ledger-Remeasure"] == "eval noise"
    assert repo.trailers()["Ledger-Transition"] == "run"
    done = repo.run("verify")
    assert done.code == 0, done.out + done.err
    pushed = hooked_push(repo)
    assert pushed.returncode == 0, pushed.stderr
    repo.ok("sync")
    # And again with record --remeasure: the next free slot, still clean.
    rerun = repo.path.parent / "rerun.json"
    rerun.write_text('{"score": 10.5}')
    out = repo.ok(
        "record", "V1", "--gate", "recent", "--seed", "1", str(rerun),
        "--remeasure", "seed check", "--json",
    ).json()  # fmt: skip
    assert out["path"] == REMEASURED
    assert repo.run("verify").code == 0
    # A re-measurement whose evaluation fails is recorded as failed, in its own slot too.
    failed = repo.run("run", "V1", "--gate", "recent", "--seeds", "43", "--remeasure", "x")
    assert failed.code == 1 and "seed-43-r1000-failed.json" in failed.out + failed.err
    assert repo.trailers()["Ledger-Transition"] == "run-failed"
    done = repo.run("verify")
    assert done.code == 0, done.out + done.err
    pushed = hooked_push(repo)
    assert pushed.returncode == 0, pushed.stderr
    status = repo.ok("status", "--json").json()
    assert status["history"] == [] and status["problems"] == [], status


def test_a_whole_revert_of_a_remeasurement_is_withdrawn(concluded: Repo) -> None:
    repo = concluded
    repo.ok("run", "V1", "--gate", "recent", "--seeds", "1", "--remeasure", "eval noise")
    repo.git("revert", "--no-edit", "HEAD")
    assert findings(repo) == []
    notes = repo.ok("verify", "--json").json()["notes"]
    assert any(n["kind"] == "withdrawn" and n["path"] == REMEASURED for n in notes), notes


# --- the same kind, tampered with: each is still a finding --------------------------------

REMEASURE = "Ledger-Transition: record\nLedger-Step: V1\nLedger-Remeasure: eval noise"


def _result(repo: Repo, seed: str, replicate: int | None, remeasure: str | None) -> str:
    """A result file of V1 as record writes it, for a seed and slot of the test's choosing."""
    src = json.loads((repo.path / "training_log/results/V1/recent/seed-1.json").read_text())
    src["seed"], src["replicate"] = seed, replicate
    src["provenance"]["remeasure"] = remeasure
    return json.dumps(src, indent=2, sort_keys=True) + "\n"


def remeasure_edits_a_result(repo: Repo) -> tuple[str, str]:
    path = "training_log/results/V1/recent/seed-2.json"
    data = json.loads((repo.path / path).read_text())
    data["metrics"]["score"] = 99.0
    repo.write(path, json.dumps(data, indent=2, sort_keys=True) + "\n")
    return "append-only-results", hand_commit(repo, f"docs(ledger): V1 re-run\n\n{REMEASURE}", path)


def remeasure_deletes_a_result(repo: Repo) -> tuple[str, str]:
    path = "training_log/results/V1/recent/seed-2.json"
    (repo.path / path).unlink()
    return "append-only-results", hand_commit(repo, f"docs(ledger): V1 re-run\n\n{REMEASURE}", path)


def remeasure_adds_where_the_verdict_reads(repo: Repo) -> tuple[str, str]:
    path = "training_log/results/V1/recent/seed-7.json"
    repo.write(path, _result(repo, "7", None, "eval noise"))
    return "append-only-results", hand_commit(repo, f"docs(ledger): V1 re-run\n\n{REMEASURE}", path)


def remeasure_slot_without_its_reason(repo: Repo) -> tuple[str, str]:
    # The right slot, but a result the verdict would read (no provenance.remeasure).
    path = REMEASURED
    repo.write(path, _result(repo, "1", 1000, None))
    return "append-only-results", hand_commit(repo, f"docs(ledger): V1 re-run\n\n{REMEASURE}", path)


def remeasure_of_another_version(repo: Repo) -> tuple[str, str]:
    assert register(repo, "V2").code == 0
    path = "training_log/results/V2/recent/seed-1-r1000.json"
    text = _result(repo, "1", 1000, "eval noise").replace('"version": "V1"', '"version": "V2"')
    repo.write(path, text)
    return "transitions-only", hand_commit(repo, f"docs(ledger): V1 re-run\n\n{REMEASURE}", path)


TAMPERED = {
    f.__name__: f
    for f in (
        remeasure_edits_a_result,
        remeasure_deletes_a_result,
        remeasure_adds_where_the_verdict_reads,
        remeasure_slot_without_its_reason,
        remeasure_of_another_version,
    )
}


@pytest.mark.parametrize("name", sorted(TAMPERED))
def test_a_tampered_remeasurement_is_still_a_finding(concluded: Repo, name: str) -> None:
    rule, commit = TAMPERED[name](concluded)
    found = [f for f in findings(concluded) if f["rule"] == rule and f["commit"] == commit]
    assert found, (rule, commit[:10], concluded.run("verify").out)
    assert hooked_push(concluded).returncode != 0


def test_a_remeasurement_of_an_open_version_is_a_finding(bare_repo: Repo) -> None:
    repo = bare_repo
    plan = Plan(repo, ("recent",))
    repo.ok("hooks", "install")
    assert register(repo, "V1").code == 0
    plan.means("V1", recent=10.0)
    plan.run("V1", "recent")
    # The CLI refuses it before anything runs ...
    refused = repo.run("run", "V1", "--gate", "recent", "--seeds", "1", "--remeasure", "x")
    assert refused.code == 2 and "open" in refused.err
    # ... and history still catches one written around it: its verdict would read it.
    repo.write(REMEASURED, _result(repo, "1", 1000, "eval noise"))
    commit = hand_commit(repo, f"docs(ledger): V1 re-run\n\n{REMEASURE}", REMEASURED)
    found = [f for f in findings(repo) if f["commit"] == commit]
    assert [f["rule"] for f in found] == ["transitions-only"], found
    assert "open" in found[0]["message"]
    assert repo.run("conclude", "V1", "--verdict", "confirmed", "--next", "x").code == 1


def test_a_report_or_cache_saved_by_older_rules_is_never_read(concluded: Repo) -> None:
    """A repository stuck before this rule (its verify-report.json saved with the
    re-measurement as a finding) verifies clean at once: the saved report and the replay's
    cache of older rules are not read."""
    repo = concluded
    repo.ok("run", "V1", "--gate", "recent", "--seeds", "1", "--remeasure", "eval noise")
    assert repo.run("verify").code == 0
    state = repo.path / ".git/ledger"
    report = json.loads((state / "verify-report.json").read_text())
    stale = {"commit": repo.head(), "path": REMEASURED, "rule": "append-only-results",
             "message": "a result of V1 recorded after its conclusion could not have informed it",
             "fix": "register a new version to measure again", "step": "V1"}  # fmt: skip
    report["key"] = caches.key("verify-report", str(RULES_VERSION - 1), repo.head())
    report["data"]["findings"] = [stale]
    (state / "verify-report.json").write_text(json.dumps(report))
    cache = json.loads((state / "verify-cache.json").read_text())
    old_rules = str(RULES_VERSION - 1)
    cache["key"] = caches.key("verify-cache.json", old_rules)  # another rules' key
    cache["data"]["marks"][repo.head()] = {"f": [[REMEASURED, *list(stale.values())[2:]]], "n": []}
    (state / "verify-cache.json").write_text(json.dumps(cache))
    done = repo.run("verify")
    assert done.code == 0, done.out
    status = repo.ok("status", "--json").json()
    assert status["history"] == [] and status["problems"] == [], status
