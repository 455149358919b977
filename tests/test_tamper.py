"""Tamper-evidence from history: each way around the hooks is caught by ``verify``.

Every scenario starts from an honest loop (hooks installed, V1 registered, its
code committed through the hooks, three results recorded), tampers the way an
adversary would (``--no-verify``, ``git revert``, ``rebase``, ``amend``, a
squash merge, a merge that edits), and then checks that ``git ledger verify``
exits 1 naming the rule and the commit, and that ``conclude`` refuses.
Legitimate undos (a whole revert of a record, ``record --replace``,
``config set``, ``void``) are accepted and shown.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.helpers import Repo, Templates, fingerprint, measure, new_ledger, register

V1 = "training_log/V1.md"
SEED1 = "training_log/results/V1/recent/seed-1.json"


def hand_commit(repo: Repo, message: str, *paths: str, allow_empty: bool = False) -> str:
    """A commit that skips every hook (--no-verify still runs prepare-commit-msg)."""
    if paths:
        repo.git("add", "-A", "--", *paths)
    extra = ["--allow-empty"] if allow_empty else []
    repo.git("-c", "core.hooksPath=/dev/null", "commit", "-q", "--no-verify", "-m", message, *extra)
    return repo.head()


def hooked_commit(repo: Repo, message: str, *paths: str) -> subprocess.CompletedProcess[str]:
    repo.git("add", "-A", "--", *paths)
    return subprocess.run(
        ["git", "commit", "-q", "-m", message],
        cwd=repo.path,
        capture_output=True,
        text=True,
        check=False,
    )


def honest_loop(root: Path) -> Repo:
    """An honest loop: V1 registered, its code committed through the hooks, 3 results."""
    repo = new_ledger(root)
    repo.ok("hooks", "install")
    register(repo, "V1").code == 0 or pytest.fail("register failed")
    repo.write("src/model.py", "x = 1\n")
    done = hooked_commit(repo, "feat(model): V1 — the change", "src/model.py")
    assert done.returncode == 0, done.stderr
    assert repo.trailers()["Ledger-Step"] == "V1"
    measure(repo, "V1", "recent", 10.0, seeds=(1, 2, 3))
    assert repo.run("verify").code == 0
    return repo


@pytest.fixture
def loop(templates: Templates, tmp_path: Path) -> Repo:
    return templates.copy("honest-loop", tmp_path, honest_loop)


def registration(repo: Repo, vid: str = "V1") -> str:
    return repo.git(
        "log", "--format=%H", f"--grep=Ledger-Step: {vid}", "--grep=register", "--all-match"
    ).split()[-1]


def assert_caught(repo: Repo, rule: str, commit: str | None) -> None:
    result = repo.run("verify")
    assert result.code == 1, result.out + result.err
    lines = [line for line in result.out.splitlines() if f"[{rule}]" in line]
    assert lines, f"no [{rule}] finding in:\n{result.out}"
    if commit is not None:
        assert any(commit[:10] in line for line in lines), f"{commit[:10]} not named:\n{result.out}"
    data = repo.run("verify", "--json")
    assert data.code == 1 and not data.json()["ok"]


def assert_conclude_refused(repo: Repo, vid: str = "V1") -> None:
    before = fingerprint(repo.path)
    result = repo.run("conclude", vid, "--verdict", "confirmed", "--next", "go on")
    assert result.code == 1, result.out + result.err
    assert fingerprint(repo.path) == before


def edit_json(repo: Repo, path: str, **changes: object) -> None:
    data = json.loads((repo.path / path).read_text())
    data["metrics"].update(changes)
    (repo.path / path).write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")


def edit_text(repo: Repo, path: str, old: str, new: str) -> None:
    text = (repo.path / path).read_text()
    assert old in text, f"{old!r} not in {path}"
    (repo.path / path).write_text(text.replace(old, new, 1))


# --- tamper scenarios: each returns (rule, commit that must be named or None) ----------


def result_edited(repo: Repo) -> tuple[str, str | None]:
    edit_json(repo, SEED1, score=99.0)
    return "append-only-results", hand_commit(repo, "docs(ledger): tidy", SEED1)


def result_edited_with_forged_record_trailers(repo: Repo) -> tuple[str, str | None]:
    edit_json(repo, SEED1, score=99.0)
    message = "docs(ledger): V1 result\n\nLedger-Transition: record\nLedger-Step: V1"
    return "append-only-results", hand_commit(repo, message, SEED1)


def result_deleted(repo: Repo) -> tuple[str, str | None]:
    (repo.path / SEED1).unlink()
    return "append-only-results", hand_commit(repo, "chore: drop an outlier", SEED1)


def result_deleted_by_partial_revert(repo: Repo) -> tuple[str, str | None]:
    # A revert of something else that takes a result with it (the issue's own history).
    repo.write("notes.txt", "x\n")
    hand_commit(repo, "chore: notes", "notes.txt")
    (repo.path / SEED1).unlink()
    (repo.path / "notes.txt").unlink()
    return "append-only-results", hand_commit(repo, "Revert notes", SEED1, "notes.txt")


def result_moved(repo: Repo) -> tuple[str, str | None]:
    repo.git("mv", SEED1, "training_log/results/V1/recent/seed-9.json")
    return "append-only-results", hand_commit(repo, "chore: rename", "training_log")


def result_added_by_hand(repo: Repo) -> tuple[str, str | None]:
    src = (repo.path / SEED1).read_text().replace('"seed": "1"', '"seed": "7"')
    repo.write("training_log/results/V1/recent/seed-7.json", src)
    return "transitions-only", hand_commit(repo, "docs: one more", "training_log")


def result_after_conclusion_by_hand(repo: Repo) -> tuple[str, str | None]:
    repo.ok("conclude", "V1", "--verdict", "inconclusive", "--next", "more", "--override", "t")
    src = (repo.path / SEED1).read_text().replace('"seed": "1"', '"seed": "8"')
    repo.write("training_log/results/V1/recent/seed-8.json", src)
    message = "docs(ledger): V1 result\n\nLedger-Transition: record\nLedger-Step: V1"
    return "append-only-results", hand_commit(repo, message, "training_log")


def registration_reverted_and_id_reused(repo: Repo) -> tuple[str, str | None]:
    repo.git("revert", "--no-edit", registration(repo))
    text = (repo.path / SEED1).read_text()
    assert text  # the old bet's results stay behind
    repo.git("show", f"{registration(repo)}:{V1}")
    old = repo.git("show", f"{registration(repo)}:{V1}")
    repo.write(V1, old.replace("A bet", "A different bet"))
    message = "docs(recent): V1 — register\n\nLedger-Transition: register\nLedger-Step: V1"
    return "ids-never-reused", hand_commit(repo, message, V1)


def registration_amended_in_rebase(repo: Repo) -> tuple[str, str | None]:
    reg = registration(repo)
    env = {
        **os.environ,
        "GIT_SEQUENCE_EDITOR": f"sed -i -e 's/^pick {reg[:7]}/edit {reg[:7]}/'",
    }
    subprocess.run(
        ["git", "rebase", "-q", "-i", f"{reg}^"],
        cwd=repo.path,
        env=env,
        check=True,
        capture_output=True,
    )
    edit_text(repo, V1, "A bet", "A safer bet")
    repo.git("add", V1)
    repo.git("commit", "-q", "--amend", "--no-edit", "--no-verify")
    subprocess.run(
        ["git", "rebase", "--continue"],
        cwd=repo.path,
        env={**env, "GIT_EDITOR": "true"},
        check=True,
        capture_output=True,
    )
    return "witness", registration(repo)


def registration_rewritten_and_witness_moved(repo: Repo) -> tuple[str, str | None]:
    # The rewriter also moves the local witness; the remote's copy still names the original.
    remote = repo.path.parent / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    repo.git("remote", "add", "origin", str(remote))
    repo.ok("sync")
    registration_amended_in_rebase(repo)
    repo.git("update-ref", "refs/ledger/witness/V1", registration(repo))
    repo.git("update-ref", "-d", "refs/remotes/origin/main")  # and hides the branch
    return "witness", registration(repo)


def frozen_part_edited(repo: Repo) -> tuple[str, str | None]:
    edit_text(repo, V1, "falsifier: no gain", "falsifier: anything at all")
    return "frozen-registration", hand_commit(repo, "docs: clarify", V1)


def hypothesis_edited(repo: Repo) -> tuple[str, str | None]:
    text = (repo.path / V1).read_text()
    head, sep, rest = text.partition("## Hypothesis")
    assert sep
    repo.write(V1, head + sep + "\n\nWe expected exactly this all along." + rest)
    return "frozen-registration", hand_commit(repo, "docs: clarify", V1)


def frozen_edit_then_reverted(repo: Repo) -> tuple[str, str | None]:
    edit_text(repo, V1, "A bet", "A better bet")
    edited = hand_commit(repo, "docs: clarify", V1)
    repo.git("revert", "--no-edit", edited)
    return "frozen-registration", edited


def registration_deleted(repo: Repo) -> tuple[str, str | None]:
    (repo.path / V1).unlink()
    return "frozen-registration", hand_commit(repo, "chore: clean up", V1)


def noise_floor_lowered_with_code(repo: Repo) -> tuple[str, str | None]:
    edit_text(repo, "ledger.toml", "noise_floor = 1.0", "noise_floor = 0.01")
    repo.write("src/model.py", "x = 2\n")
    message = "feat(model): V1 — tune\n\nLedger-Step: V1"
    return "config-frozen", hand_commit(repo, message, "ledger.toml", "src/model.py")


def noise_floor_lowered_as_code_commit(repo: Repo) -> tuple[str, str | None]:
    edit_text(repo, "ledger.toml", "noise_floor = 1.0", "noise_floor = 0.01")
    return "config-frozen", hand_commit(repo, "fix: V1 typo\n\nLedger-Step: V1", "ledger.toml")


def sigma_k_changed_with_docs(repo: Repo) -> tuple[str, str | None]:
    edit_text(repo, "ledger.toml", "sigma_k = 2.0", "sigma_k = 0.5")
    repo.write("NOTES.md", "why\n")
    return "config-frozen", hand_commit(repo, "docs: notes", "ledger.toml", "NOTES.md")


def gate_changed_with_code(repo: Repo) -> tuple[str, str | None]:
    edit_text(
        repo, "ledger.toml", "[gates.recent.metrics]", '[gates.recent.metrics]\nextra = "$.x"'
    )
    repo.write("src/model.py", "x = 3\n")
    return "config-frozen", hand_commit(
        repo, "feat: V1 more\n\nLedger-Step: V1", "ledger.toml", "src/model.py"
    )


def conclusion_written_by_hand(repo: Repo) -> tuple[str, str | None]:
    edit_text(repo, V1, "\n---\n", "\nconclusion:\n  verdict: confirmed\n  next: ship it\n---\n")
    return "transitions-only", hand_commit(repo, "docs: V1 done", V1)


def conclusion_edited_after_conclude(repo: Repo) -> tuple[str, str | None]:
    repo.ok("conclude", "V1", "--verdict", "inconclusive", "--next", "more", "--override", "t")
    edit_text(repo, V1, "verdict: inconclusive", "verdict: confirmed")
    return "transitions-only", hand_commit(repo, "docs: fix verdict", V1)


def conclude_transition_reverted(repo: Repo) -> tuple[str, str | None]:
    repo.ok("conclude", "V1", "--verdict", "inconclusive", "--next", "more", "--override", "t")
    repo.git("revert", "--no-edit", "HEAD")
    return "transitions-only", repo.head()


def code_commit_without_trailer(repo: Repo) -> tuple[str, str | None]:
    repo.write("src/other.py", "y = 1\n")
    return "one-bet-per-version", hand_commit(repo, "feat: sneak in", "src/other.py")


def code_commit_for_another_version(repo: Repo) -> tuple[str, str | None]:
    repo.write("src/other.py", "y = 1\n")
    message = "feat: V9 work\n\nLedger-Step: V9"
    return "one-bet-per-version", hand_commit(repo, message, "src/other.py")


def result_with_pathological_nesting(repo: Repo) -> tuple[str, str | None]:
    repo.write(SEED1, "[" * 100000 + "]" * 100000)
    return "unparseable-entry", hand_commit(repo, "docs: x", SEED1)


def new_result_unparseable(repo: Repo) -> tuple[str, str | None]:
    repo.write("training_log/results/V1/recent/seed-5.json", '{"metrics": ' * 50000)
    message = "docs(ledger): V1 result\n\nLedger-Transition: record\nLedger-Step: V1"
    return "unparseable-entry", hand_commit(repo, message, "training_log")


def version_file_unparseable(repo: Repo) -> tuple[str, str | None]:
    repo.write(V1, "---\nid: [V1\n---\n")
    return "unparseable-entry", hand_commit(repo, "docs: x", V1)


def phase_file_by_hand(repo: Repo) -> tuple[str, str | None]:
    repo.write("training_log/CAMPAIGN_STATUS.md", "---\nkind: phase\nstate: active\n---\n")
    return "transitions-only", hand_commit(repo, "docs: phase", "training_log")


def squash_merged_ledger_branch(repo: Repo) -> tuple[str, str | None]:
    # V1 lives on a branch that is squash-merged into a fresh main.
    repo.git("branch", "-m", "work")
    first = repo.git("rev-list", "--max-parents=0", "HEAD").strip()
    repo.git("switch", "-q", "-c", "main", first)
    repo.git("merge", "-q", "--squash", "work")
    return "transitions-only", hand_commit(repo, "feat: V1 (#1)")


def merge_that_edits_a_result(repo: Repo) -> tuple[str, str | None]:
    repo.git("switch", "-q", "-c", "side")
    repo.write("docs/x.md", "x\n")
    hand_commit(repo, "docs: x", "docs")
    repo.git("switch", "-q", "main")
    repo.write("README.md", "y\n")
    hand_commit(repo, "docs: y", "README.md")
    repo.git("merge", "-q", "--no-commit", "--no-ff", "side")
    edit_json(repo, SEED1, score=99.0)
    repo.git("add", SEED1)
    repo.git("commit", "-q", "--no-verify", "--no-edit")
    return "transitions-only", repo.head()


def record_cherry_picked_onto_other_version(repo: Repo) -> tuple[str, str | None]:
    # A result written for V1 is presented under V1 by a hand commit claiming "run".
    src = (repo.path / SEED1).read_text().replace('"seed": "1"', '"seed": "6"')
    repo.write("training_log/results/V1/recent/seed-6.json", src)
    message = "docs(ledger): V1 result\n\nLedger-Transition: conclude\nLedger-Step: V1"
    return "transitions-only", hand_commit(repo, message, "training_log")


SCENARIOS: dict[str, Callable[[Repo], tuple[str, str | None]]] = {
    f.__name__: f
    for f in (
        result_edited,
        result_edited_with_forged_record_trailers,
        result_deleted,
        result_deleted_by_partial_revert,
        result_moved,
        result_added_by_hand,
        result_after_conclusion_by_hand,
        registration_reverted_and_id_reused,
        registration_amended_in_rebase,
        registration_rewritten_and_witness_moved,
        frozen_part_edited,
        hypothesis_edited,
        frozen_edit_then_reverted,
        registration_deleted,
        noise_floor_lowered_with_code,
        noise_floor_lowered_as_code_commit,
        sigma_k_changed_with_docs,
        gate_changed_with_code,
        conclusion_written_by_hand,
        conclusion_edited_after_conclude,
        conclude_transition_reverted,
        code_commit_without_trailer,
        code_commit_for_another_version,
        result_with_pathological_nesting,
        new_result_unparseable,
        version_file_unparseable,
        phase_file_by_hand,
        squash_merged_ledger_branch,
        merge_that_edits_a_result,
        record_cherry_picked_onto_other_version,
    )
}


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_tampering_is_caught_by_verify_and_refused_by_conclude(loop: Repo, name: str) -> None:
    rule, commit = SCENARIOS[name](loop)
    assert_caught(loop, rule, commit)
    assert_conclude_refused(loop)


@pytest.mark.parametrize(
    "name",
    [
        "frozen_part_edited",
        "hypothesis_edited",
        "frozen_edit_then_reverted",
        "registration_deleted",
    ],
)
def test_the_registration_check_is_verifys_frozen_registration_rule(loop: Repo, name: str) -> None:
    """One frozen-registration rule: what show asks of history (``check_registration``)
    is answered by verify's replay, with verify's finding in verify's words."""
    from ledger.core.context import open_context
    from ledger.core.errors import Refused
    from ledger.core.history import check_registration

    ctx = open_context(loop.path)
    assert check_registration(ctx.store, ctx.dir, "V1").commit == registration(loop)
    rule, commit = SCENARIOS[name](loop)
    found = [f for f in loop.run("verify", "--json").json()["findings"] if f["rule"] == rule]
    assert len(found) == 1 and commit is not None and found[0]["commit"] == commit, found
    ctx = open_context(loop.path)
    with pytest.raises(Refused) as refused:
        check_registration(ctx.store, ctx.dir, "V1")
    assert refused.value.rule == rule
    verified = loop.run("verify").out.splitlines()
    assert refused.value.message in verified  # the finding's line, as verify prints it
    assert refused.value.findings == [
        {"rule": rule, "message": found[0]["message"], "fix": found[0]["fix"]}
    ]
