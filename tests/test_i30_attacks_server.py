"""Issue 30, the adversary's pass against a server running the pre-receive hook: a
branch that ever carried a ledger is judged even when its tip and its shared history
say otherwise, and deleting a branch is no way around append-only history."""

from __future__ import annotations

import os
import subprocess

from tests.helpers import Repo, git
from tests.test_i30_server import remote_refs
from tests.test_i30_tamper import published  # noqa: F401 (a fixture)
from tests.test_server import push
from tests.test_tamper import SEED1, hand_commit


def test_an_unrelated_rewrite_without_a_ledger_at_its_tip_is_judged(
    published: Repo,  # noqa: F811
) -> None:
    """The whole history rewritten (a result's value edited where it was recorded), then
    ledger.toml dropped: it shares no commit with main, yet it carried a ledger."""
    env = {**os.environ, "FILTER_BRANCH_SQUELCH_WARNING": "1"}
    published.git("switch", "-q", "-c", "rewritten")
    subprocess.run(
        [
            "git",
            "filter-branch",
            "-f",
            "--tree-filter",
            f'test -f {SEED1} && sed -i \'s/"score": [0-9.]*/"score": 99.0/\' {SEED1} || true',
            "--env-filter",
            "GIT_AUTHOR_DATE='2001-01-01T00:00:00'; export GIT_AUTHOR_DATE",
            "HEAD",
        ],
        cwd=published.path,
        env=env,
        capture_output=True,
        check=True,
    )
    assert "99.0" in (published.path / SEED1).read_text()
    assert published.git("merge-base", "main", "HEAD", check=False).strip() == ""
    published.git("rm", "-q", "ledger.toml")
    hand_commit(published, "chore: no ledger here")
    before = remote_refs(published)
    done = push(published, "HEAD:refs/heads/rewritten")
    assert done.returncode != 0, done.stderr
    assert "[witness]" in done.stderr, done.stderr
    assert remote_refs(published) == before


def test_a_tag_on_a_tampered_commit_is_judged(published: Repo) -> None:  # noqa: F811
    (published.path / SEED1).unlink()
    hand_commit(published, "docs(ledger): tidy", SEED1)
    published.git("tag", "-a", "-m", "release", "v1")
    before = remote_refs(published)
    done = push(published, "refs/tags/v1:refs/tags/v1")
    assert done.returncode != 0 and "[append-only-results]" in done.stderr, done.stderr
    assert remote_refs(published) == before


def test_deleting_the_branch_then_pushing_a_shorter_one_is_refused(
    published: Repo,  # noqa: F811
) -> None:
    """Drop the last result from history: a force-push is refused, so delete the branch
    and push the rewritten one as new (the registration and its witness unchanged)."""
    remote = published.path.parent / "remote.git"
    git(remote, "symbolic-ref", "HEAD", "refs/heads/trunk")  # git guards only its HEAD
    tip = git(remote, "rev-parse", "main").strip()
    done = push(published, ":refs/heads/main")
    assert done.returncode != 0 and "[rewritten-history]" in done.stderr, done.stderr
    assert git(remote, "rev-parse", "main").strip() == tip
    # Another branch that keeps every transition makes the deletion harmless.
    assert push(published, "HEAD:refs/heads/keep").returncode == 0
    again = push(published, ":refs/heads/main")
    assert again.returncode == 0, again.stderr


def test_a_witness_on_a_commit_that_only_claims_to_register_is_refused(
    published: Repo,  # noqa: F811
) -> None:
    """An empty commit whose trailers say "register V2", on a branch of its own, with a
    witness for it: the owner's honest V2 would then read as rewritten."""
    message = "docs: x\n\nLedger-Transition: register\nLedger-Step: V2"
    forged = hand_commit(published, message, allow_empty=True)
    published.git("update-ref", "refs/ledger/witness/V2", forged)
    before = remote_refs(published)
    done = push(published, "HEAD:refs/heads/squat", "refs/ledger/witness/V2:refs/ledger/witness/V2")
    assert done.returncode != 0 and "[witness]" in done.stderr, done.stderr
    assert remote_refs(published) == before


def test_a_witness_pushed_after_its_branch_is_accepted(published: Repo) -> None:  # noqa: F811
    from tests.helpers import register

    published.ok("conclude", "V1", "--verdict", "refuted", "--next", "x", "--override", "t")
    url = published.git("remote", "get-url", "origin").strip()
    published.git("remote", "set-url", "origin", url + ".gone")  # no push at registration
    assert register(published, "V2").code == 0
    published.git("remote", "set-url", "origin", url)
    assert "V2" not in remote_refs(published)
    assert push(published, "HEAD:refs/heads/main").returncode == 0
    done = push(published, "refs/ledger/witness/V2:refs/ledger/witness/V2")
    assert done.returncode == 0, done.stderr
