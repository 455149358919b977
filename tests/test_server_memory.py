"""Issue 47: the server remembers. With its post-receive beside pre-receive, a bare
remote keeps each ledger branch's last accepted tip under ``refs/ledger/server/tips/``,
which no client may push; a ledger branch deleted and pushed again without that tip is
refused, whatever other branch still holds the old transitions."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.helpers import Repo, git, measure
from tests.test_i30_tamper import published  # noqa: F401 (a fixture)
from tests.test_server import push

ROOT = Path(__file__).resolve().parent.parent
TIPS = "refs/ledger/server/tips/"


def remote_of(repo: Repo) -> Path:
    return repo.path.parent / "remote.git"


def memory(remote: Path, branch: str) -> str | None:
    found = git(remote, "for-each-ref", "--format=%(refname) %(objectname)", TIPS)
    held = dict(line.split() for line in found.splitlines())
    return held.get(TIPS + branch)


@pytest.fixture
def served(published: Repo) -> Repo:  # noqa: F811
    """The published loop, its remote running post-receive beside pre-receive, and main
    pushed once more so that the server remembers it."""
    hooks = remote_of(published) / "hooks"
    shutil.copy(ROOT / "hooks" / "post-receive", hooks / "post-receive")
    (hooks / "post-receive").chmod(0o755)
    # git guards only the branch its HEAD names: the attack deletes main.
    git(remote_of(published), "symbolic-ref", "HEAD", "refs/heads/trunk")
    measure(published, "V1", "recent", 10.0, seeds=(4,))
    done = push(published, "HEAD:refs/heads/main")
    assert done.returncode == 0, done.stderr
    return published


def test_a_fast_forward_is_remembered_by_post_receive(served: Repo) -> None:
    remote = remote_of(served)
    assert memory(remote, "main") == git(remote, "rev-parse", "main").strip()
    measure(served, "V1", "recent", 10.0, seeds=(5,))
    done = push(served, "HEAD:refs/heads/main")
    assert done.returncode == 0, done.stderr
    assert memory(remote, "main") == served.head()


def test_deleting_the_ledger_branch_and_pushing_a_rewritten_one_is_refused(
    served: Repo,
) -> None:
    """The real ledger kept under another name, the ledger branch deleted, a history
    without its last result pushed under the old name: what some branch still holds is
    no answer, what this branch last held is."""
    remote = remote_of(served)
    tip = served.head()
    assert push(served, "HEAD:refs/heads/archive").returncode == 0
    deleted = push(served, ":refs/heads/main")
    assert deleted.returncode == 0, deleted.stderr
    assert memory(remote, "main") == tip
    done = push(served, "HEAD~1:refs/heads/main")
    assert done.returncode != 0, done.stderr
    line = next(x for x in done.stderr.splitlines() if "[server-memory]" in x)
    assert "refs/heads/main" in line and tip in line, line
    assert "merge" in line and "restore" in line, line
    assert git(remote, "rev-parse", "--verify", "-q", "main", check=False) == ""
    # Nor does a history without any ledger take the ledger branch's name.
    tree = served.git("mktree", input="").strip()
    bare = served.git("commit-tree", tree, "-m", "chore: a fresh start").strip()
    done = push(served, f"{bare}:refs/heads/main")
    assert done.returncode != 0 and "[server-memory]" in done.stderr, done.stderr
    # Restoring the branch at the remembered tip is the fix, and is accepted.
    again = push(served, "HEAD:refs/heads/main")
    assert again.returncode == 0, again.stderr


def test_a_deleted_ledger_branch_pushed_again_with_its_tip_merged_is_accepted(
    served: Repo,
) -> None:
    tip = served.head()
    assert push(served, "HEAD:refs/heads/archive").returncode == 0
    assert push(served, ":refs/heads/main").returncode == 0
    measure(served, "V1", "recent", 10.0, seeds=(6,))
    done = push(served, "HEAD:refs/heads/main")
    assert done.returncode == 0, done.stderr
    assert memory(remote_of(served), "main") == served.head() != tip


@pytest.mark.parametrize(
    "refspec",
    [
        f"HEAD:{TIPS}main",  # moved
        f":{TIPS}main",  # deleted
        f"HEAD:{TIPS}elsewhere",  # created
        "HEAD:refs/ledger/server/other",
    ],
)
def test_the_servers_memory_is_never_pushed_by_a_client(served: Repo, refspec: str) -> None:
    remote = remote_of(served)
    served.git("commit", "-q", "--allow-empty", "-m", "chore: not a ledger change")
    before = git(remote, "for-each-ref")
    done = subprocess.run(
        ["git", "push", "--no-verify", "--force", "origin", refspec],
        cwd=served.path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode != 0, done.stderr
    assert "[server-memory]" in done.stderr and "refs/ledger/server/" in done.stderr
    assert git(remote, "for-each-ref") == before


def test_a_branch_without_a_ledger_is_not_remembered_and_may_be_deleted(served: Repo) -> None:
    remote = remote_of(served)
    assert memory(remote, "main") is not None, "the ledger's branch is remembered"
    served.git("checkout", "-q", "--orphan", "site")
    served.git("rm", "-q", "-r", "--cached", ".")
    (served.path / "index.html").write_text("<p>hi</p>\n")
    served.git("add", "index.html")
    served.git("commit", "-q", "--no-verify", "-m", "docs: site")
    assert push(served, "HEAD:refs/heads/site").returncode == 0
    assert memory(remote, "site") is None
    done = push(served, ":refs/heads/site")
    assert done.returncode == 0, done.stderr
    assert memory(remote, "site") is None
    # And its name is free again for any history.
    served.git("commit", "-q", "--no-verify", "--amend", "-m", "docs: another site")
    assert push(served, "HEAD:refs/heads/site").returncode == 0


def test_installed_post_receive_remembers_beside_a_foreign_one(
    published: Repo,  # noqa: F811
) -> None:
    """``hooks install --server`` keeps a foreign post-receive as legacy: both read the
    pushed refs, and a legacy failure keeps nothing from being remembered."""
    remote = remote_of(published)
    (remote / "hooks" / "pre-receive").unlink()
    foreign = remote / "hooks" / "post-receive"
    foreign.write_text('#!/bin/sh\ncat > "$GIT_DIR/seen.txt"\nexit 3\n')
    foreign.chmod(0o755)
    installed = subprocess.run(
        ["git", "ledger", "hooks", "install", "--server"],
        cwd=remote,
        capture_output=True,
        text=True,
        check=False,
    )
    assert installed.returncode == 0, installed.stderr
    assert (remote / "hooks" / "post-receive.legacy").exists()
    measure(published, "V1", "recent", 10.0, seeds=(4,))
    done = push(published, "HEAD:refs/heads/main")
    assert done.returncode == 0, done.stderr
    assert "refs/heads/main" in (remote / "seen.txt").read_text()
    assert memory(remote, "main") == published.head()


def test_a_ledger_whose_configuration_does_not_parse_is_still_remembered(
    served: Repo,
) -> None:
    """post-receive alone (a host that runs no pre-receive) remembers a branch whose
    ledger.toml was broken past the hooks: it is a ledger's branch all the same."""
    remote = remote_of(served)
    (remote / "hooks" / "pre-receive").unlink()
    (served.path / "ledger.toml").write_text("[ledger\n")
    served.git("-c", "core.hooksPath=/dev/null", "commit", "-q", "-am", "chore: break it")
    done = push(served, "HEAD:refs/heads/broken")
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    assert memory(remote, "broken") == served.head()
