"""Issue 30: the anchors come from history. The server hook judges history as written
(no refs/replace/* stand-ins), refuses a witness for an id no pushed branch registers,
and keeps judging a branch whose new tip drops its ledger."""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.helpers import Repo, git
from tests.test_i30_tamper import published  # noqa: F401 (a fixture)
from tests.test_server import push
from tests.test_tamper import SEED1, edit_json, hand_commit


def remote_refs(repo: Repo) -> str:
    return git(repo.path.parent / "remote.git", "for-each-ref")


def test_a_replace_ref_cannot_hide_a_tampered_commit(published: Repo) -> None:  # noqa: F811
    honest_parent = published.head()
    edit_json(published, SEED1, score=99.0)
    tampered = hand_commit(published, "docs(ledger): tidy", SEED1)
    tree = published.git("rev-parse", f"{honest_parent}^{{tree}}").strip()
    stand_in = published.git(
        "commit-tree", tree, "-p", honest_parent, "-m", "docs(ledger): tidy"
    ).strip()
    published.git("replace", tampered, stand_in)
    before = remote_refs(published)
    done = push(published, "HEAD:refs/heads/main", "refs/replace/*:refs/replace/*")
    assert done.returncode != 0 and "[replace-refs]" in done.stderr, done.stderr
    assert remote_refs(published) == before
    # Even with the replace ref in place locally, verify reads history as written.
    result = published.run("verify")
    assert result.code == 1 and "[append-only-results]" in result.out, result.out
    # And without the replace ref pushed, the tampered commit is judged as it is.
    done = push(published, "HEAD:refs/heads/main")
    assert done.returncode != 0 and "[append-only-results]" in done.stderr, done.stderr


def test_a_witness_for_an_id_nobody_registered_is_refused(published: Repo) -> None:  # noqa: F811
    published.git("update-ref", "refs/ledger/witness/V3", "HEAD")
    before = remote_refs(published)
    done = push(published, "refs/ledger/witness/V3:refs/ledger/witness/V3")
    assert done.returncode != 0 and "[witness]" in done.stderr, done.stderr
    assert "V3" in done.stderr and remote_refs(published) == before


def test_a_force_push_of_a_tip_without_ledger_is_still_judged(published: Repo) -> None:  # noqa: F811
    published.git("switch", "-q", "--orphan", "bare")
    for child in published.path.iterdir():
        if child.name != ".git":
            shutil.rmtree(child) if child.is_dir() else child.unlink()
    published.write("README.md", "nothing here\n")
    hand_commit(published, "docs: start over", "README.md")
    before = remote_refs(published)
    done = push(published, "HEAD:refs/heads/main", force=True)
    assert done.returncode != 0 and "[rewritten-history]" in done.stderr, done.stderr
    assert remote_refs(published) == before


def test_honest_witnesses_are_still_accepted(published: Repo, tmp_path: Path) -> None:  # noqa: F811
    from tests.helpers import register

    published.ok("conclude", "V1", "--verdict", "refuted", "--next", "x", "--override", "t")
    assert register(published, "V2").code == 0
    done = push(published, "HEAD:refs/heads/main", "refs/ledger/witness/*:refs/ledger/witness/*")
    assert done.returncode == 0, done.stderr


def test_a_new_branch_that_drops_the_ledger_is_still_judged(published: Repo) -> None:  # noqa: F811
    published.git("switch", "-q", "-c", "cleanup")
    published.git("rm", "-q", "-r", "training_log", "ledger.toml")
    hand_commit(published, "chore: tidy up")
    before = remote_refs(published)
    done = push(published, "cleanup")
    assert done.returncode != 0, done.stderr
    assert "[frozen-registration]" in done.stderr or "[append-only-results]" in done.stderr
    assert remote_refs(published) == before
