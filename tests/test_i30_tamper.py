"""Issue 30: a transition is checked against what its verb could have written, and a merge
loses nothing. Each attack is committed past the hooks with typed trailers; ``verify``
exits 1 naming the rule and the commit, and a server running the pre-receive hook refuses
the push."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.helpers import Repo, Templates, git, measure, register
from tests.test_server import published_loop, push
from tests.test_tamper import SEED1, V1, assert_caught, hand_commit, hooked_commit


@pytest.fixture
def published(templates: Templates, tmp_path: Path) -> Repo:
    """An honest loop (V1 registered, its code, three results) pushed to a server."""
    return templates.copy("published-loop", tmp_path, published_loop)


def publish(repo: Repo) -> None:
    done = push(repo, "HEAD:refs/heads/main", "refs/ledger/witness/*:refs/ledger/witness/*")
    assert done.returncode == 0, done.stderr


def refused(repo: Repo, rule: str, commit: str | None) -> None:
    assert_caught(repo, rule, commit)
    remote = repo.path.parent / "remote.git"
    before = git(remote, "rev-parse", "main").strip()
    done = push(repo, "HEAD:refs/heads/main", force=True)
    assert done.returncode != 0, done.stderr
    assert f"[{rule}]" in done.stderr, done.stderr
    assert git(remote, "rev-parse", "main").strip() == before


def conclude_refuted(repo: Repo) -> None:
    repo.ok("conclude", "V1", "--verdict", "refuted", "--next", "try another", "--override", "t")


def test_a_hand_flipped_verdict_with_conclude_trailers_is_a_finding(published: Repo) -> None:
    conclude_refuted(published)
    publish(published)
    text = (published.path / V1).read_text()
    flipped = text.replace("verdict: refuted", "verdict: confirmed").replace(
        "**Verdict: refuted**", "**Verdict: confirmed**"
    )
    assert flipped != text
    published.write(V1, flipped)
    message = "docs(recent): V1 log entry\n\nLedger-Transition: conclude\nLedger-Step: V1"
    commit = hand_commit(published, message, V1)
    refused(published, "transitions-only", commit)
    assert "second conclusion" in published.run("verify").out


def test_a_conclusion_removed_reopens_nothing(published: Repo) -> None:
    conclude_refuted(published)
    publish(published)
    old = published.git("show", f"HEAD~1:{V1}")
    published.write(V1, old)
    message = "docs(recent): V1 again\n\nLedger-Transition: conclude\nLedger-Step: V1"
    commit = hand_commit(published, message, V1)
    refused(published, "transitions-only", commit)


def test_a_rename_that_deletes_a_result_is_a_finding(published: Repo) -> None:
    (published.path / SEED1).unlink()
    message = "docs(ledger): rename V1 to V1a\n\nLedger-Transition: rename\nLedger-Step: V1a"
    commit = hand_commit(published, message, SEED1)
    refused(published, "append-only-results", commit)


def test_a_merge_that_drops_a_result_both_sides_hold_is_a_finding(published: Repo) -> None:
    published.git("switch", "-q", "-c", "side")
    published.write("docs/side.md", "side\n")
    hand_commit(published, "docs: side", "docs")
    published.git("switch", "-q", "main")
    published.write("docs/main.md", "main\n")
    hand_commit(published, "docs: main", "docs")
    published.git("merge", "-q", "--no-ff", "--no-commit", "side")
    published.git("rm", "-q", SEED1)
    published.git("-c", "core.hooksPath=/dev/null", "commit", "-q", "--no-verify", "-m", "merge")
    refused(published, "transitions-only", published.head())


def test_a_merge_that_takes_the_open_side_of_a_concluded_version_is_a_finding(
    published: Repo,
) -> None:
    published.git("switch", "-q", "-c", "side")
    published.write("docs/side.md", "side\n")
    hand_commit(published, "docs: side", "docs")
    published.git("switch", "-q", "main")
    conclude_refuted(published)
    publish(published)
    published.git("merge", "-q", "--no-ff", "--no-commit", "side")
    published.git("checkout", "side", "--", V1, "training_log/README.md")
    published.git("-c", "core.hooksPath=/dev/null", "commit", "-q", "--no-verify", "-m", "merge")
    merge = published.head()
    refused(published, "transitions-only", merge)
    assert "never reopens" in published.run("verify").out


def test_an_honest_merge_of_a_concluded_version_verifies(published: Repo) -> None:
    published.git("switch", "-q", "-c", "side")
    published.write("docs/side.md", "side\n")
    hand_commit(published, "docs: side", "docs")
    published.git("switch", "-q", "main")
    conclude_refuted(published)
    published.git("merge", "-q", "--no-ff", "-m", "merge side", "side")
    assert published.run("verify").code == 0
    publish(published)


def test_sync_rename_still_verifies(repo: Repo, tmp_path: Path) -> None:
    """The honest rename (sync, V1 registered on two machines) moves results and passes."""
    remote = tmp_path / "plain.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    repo.git("remote", "add", "origin", str(remote))
    repo.ok("sync")
    other = tmp_path / "other"
    subprocess.run(["git", "clone", "-q", str(remote), str(other)], check=True)
    them = Repo(other)
    assert register(them, "V1", bet="theirs").code == 0
    them.ok("sync")
    assert register(repo, "V1", bet="ours").code == 0
    measure(repo, "V1", "recent", 10.0, seeds=(1, 2))
    repo.ok("sync")
    assert (repo.path / "training_log/results/V1a").is_dir()
    assert repo.run("verify").code == 0, repo.run("verify").out


def test_a_hand_written_first_conclusion_the_numbers_contradict_is_a_finding(
    published: Repo,
) -> None:
    published.ok("conclude", "V1", "--verdict", "confirmed", "--next", "more")
    assert register(published, "V2").code == 0
    published.write("src/model.py", "x = 2\n")
    assert hooked_commit(published, "feat(model): V2 — worse", "src/model.py").returncode == 0
    measure(published, "V2", "recent", 5.0, seeds=(1, 2, 3))
    publish(published)
    published.ok("conclude", "V2", "--verdict", "refuted", "--next", "back off")
    honest = (published.path / "training_log/V2.md").read_text()
    readme = (published.path / "training_log/README.md").read_text()
    published.git("reset", "-q", "--hard", "HEAD~1")
    forged = honest.replace("verdict: refuted", "verdict: confirmed").replace(
        "**Verdict: refuted**", "**Verdict: confirmed**"
    )
    published.write("training_log/V2.md", forged)
    published.write("training_log/README.md", readme.replace("refuted", "confirmed"))
    message = "docs(recent): V2 log entry\n\nLedger-Transition: conclude\nLedger-Step: V2"
    commit = hand_commit(published, message, "training_log")
    refused(published, "transitions-only", commit)
    assert "could have written" in published.run("verify").out


def test_a_rename_that_only_deletes_a_registration_is_a_finding(published: Repo) -> None:
    (published.path / V1).unlink()
    message = "docs(ledger): rename V1 to V1a\n\nLedger-Transition: rename\nLedger-Step: V1a"
    commit = hand_commit(published, message, V1)
    refused(published, "frozen-registration", commit)


def test_a_rename_that_adds_a_result_from_nowhere_is_a_finding(published: Repo) -> None:
    src = (published.path / SEED1).read_text().replace('"seed": "1"', '"seed": "8"')
    path = "training_log/results/V1/recent/seed-8.json"
    published.write(path, src)
    message = "docs(ledger): rename V0 to V1\n\nLedger-Transition: rename\nLedger-Step: V1"
    commit = hand_commit(published, message, path)
    refused(published, "transitions-only", commit)
