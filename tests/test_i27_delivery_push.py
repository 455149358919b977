"""Issue 27: the branch ``deliver`` builds is pushed with the hooks on, and nothing else
may end a ledger.

A delivery's last commit is a transition of kind ``deliver`` that takes the ledger's
configuration away: ``verify`` accepts it when it only deletes the ledger's entries and
writes the documents the campaign delivers, and the branch holds no ledger after it.
The ledger's own branch is never ended in place (pre-push and pre-receive refuse a
push that takes the configuration away from a ref that holds a ledger), a forged
delivery that also carries code is a finding, and a ledger brought back on a delivery
branch is one too.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.helpers import Repo, git
from tests.test_i27_campaign_finish import TEMPLATE, _finished, campaign_repo, commit, gl, ok


def _remote(repo: Repo) -> Path:
    """A bare remote with the server's hooks, as ``origin``; main pushed to it."""
    remote = repo.path.parent / "remote.git"
    git(repo.path, "init", "-q", "--bare", str(remote))
    served = gl(Repo(remote), "hooks", "install", "--server")
    assert served.code == 0, served.err
    git(repo.path, "remote", "add", "origin", str(remote))
    git(repo.path, "push", "-q", "origin", "HEAD:refs/heads/main")
    return remote


def _push(repo: Repo, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", "push", "-q", "origin", *args],
        cwd=repo.path,
        capture_output=True,
        text=True,
        check=False,
    )


def _pushed(repo: Repo, *args: str) -> None:
    done = _push(repo, *args)
    assert done.returncode == 0, done.stderr


def _finished_and_pushed(repo: Repo) -> tuple[Path, str]:
    """The remote, and its refs once the finished campaign is pushed."""
    remote = _remote(repo)
    _finished(repo)
    ok(repo, "finish")
    _pushed(repo, "HEAD:refs/heads/main")
    return remote, _refs(remote)


def _delivered(repo: Repo, branch: str = "campaign/deliver") -> None:
    _finished(repo)
    ok(repo, "finish")
    ok(repo, "deliver", "--branch", branch)


def _refs(remote: Path) -> str:
    return git(remote, "for-each-ref", "--format=%(refname) %(objectname)")


@pytest.fixture
def camp_toml(bare_repo: Repo) -> Repo:
    return campaign_repo(bare_repo)


@pytest.mark.parametrize("pyproject", [False, True], ids=["ledger.toml", "pyproject.toml"])
def test_the_delivery_branch_is_pushed_through_pre_push_and_pre_receive(
    bare_repo: Repo, pyproject: bool
) -> None:
    repo = campaign_repo(bare_repo, pyproject=pyproject)
    remote = _remote(repo)
    _delivered(repo)
    # The ledger's branch goes with its delivery: the remote reads the delivery against it.
    pushed = _push(repo, "main", "campaign/deliver")
    assert pushed.returncode == 0, pushed.stderr
    tip = git(repo.path, "rev-parse", "campaign/deliver").strip()
    assert git(remote, "rev-parse", "refs/heads/campaign/deliver").strip() == tip
    files = git(repo.path, "ls-tree", "-r", "--name-only", tip).split()
    assert "src/fast.py" in files and "training_log/NOTES.md" in files
    assert "training_log/owner.json" not in files and "ledger.toml" not in files
    if pyproject:
        # The project's own file stays, without the ledger's tables.
        kept = git(repo.path, "show", f"{tip}:pyproject.toml")
        assert 'name = "kernel"' in kept and "line-length = 100" in kept
        assert "tool.ledger" not in kept
    # The ledger's branch and its delivery record go the same way, and verify is clean.
    _pushed(repo, "HEAD:refs/heads/main")
    assert gl(repo, "verify").code == 0


@pytest.mark.parametrize(
    ("where", "code", "said"),
    [
        # On the ledger's branch: a ledger ends only on a delivery branch of its own.
        ("HEAD:refs/heads/main", False, "delivery branch"),
        # On a new branch, carrying code: a delivery writes only the ledger's documents.
        ("HEAD:refs/heads/evil", True, "src/app.py"),
    ],
    ids=["in-place", "with-code"],
)
def test_a_forged_delivery_is_refused_by_pre_push_and_by_the_remote(
    camp_toml: Repo, where: str, code: bool, said: str
) -> None:
    """A hand commit that says it delivers: pre-push refuses it, and so does the remote
    when the client's hook is skipped; the remote's refs are untouched."""
    repo = camp_toml
    remote, before = _finished_and_pushed(repo)
    git(repo.path, "rm", "-r", "-q", "ledger.toml", "training_log/candidates")
    if code:
        repo.write("src/app.py", "speed = 1000\n")
    commit(repo, "docs(campaign): delivered", "--no-verify", "-m", "Ledger-Transition: deliver")
    for extra in ((), ("--no-verify",)):
        refused = _push(repo, *extra, where)
        assert refused.returncode != 0, extra
        assert "[config-frozen]" in refused.stderr and said in refused.stderr, refused.stderr
        assert _refs(remote) == before


def test_a_ledger_brought_back_on_a_delivery_branch_is_refused(camp_toml: Repo) -> None:
    repo = camp_toml
    remote = _remote(repo)
    _delivered(repo)
    _pushed(repo, "main", "campaign/deliver")
    git(repo.path, "checkout", "-q", "campaign/deliver")
    (repo.path / "ledger.toml").write_text(git(repo.path, "show", "main:ledger.toml"))
    commit(repo, "chore: the ledger again", "--no-verify")
    before = _refs(remote)
    refused = _push(repo, "--no-verify", "campaign/deliver")
    assert refused.returncode != 0
    assert "[config-frozen]" in refused.stderr and "holds no ledger" in refused.stderr
    assert _refs(remote) == before


def test_a_reviewers_fix_on_the_delivery_branch_is_committed_and_pushed_with_hooks_on(
    camp_toml: Repo,
) -> None:
    """The delivery branch is code under review: a fix is a plain commit and push, with
    the hooks installed and no --no-verify."""
    repo = camp_toml
    remote = _remote(repo)
    _delivered(repo)
    _pushed(repo, "main", "campaign/deliver")
    git(repo.path, "checkout", "-q", "campaign/deliver")
    # No ledger here, and the error says why: the delivery ended it.
    asked = gl(repo, "status")
    delivery = git(repo.path, "rev-parse", "HEAD").strip()
    assert asked.code == 2 and f"ended with the delivery {delivery[:10]}" in asked.err
    repo.write("src/fast.py", "fast = 2  # review: clearer name\n")
    commit(repo, "fix(src): a reviewer's remark")
    pushed = _push(repo, "campaign/deliver")
    assert pushed.returncode == 0, pushed.stderr
    # A CI job verifies the delivery's pull request: its history up to the delivery is
    # judged by the configuration the delivery took away.
    verified = gl(repo, "verify")
    assert verified.code == 0 and "every history rule holds" in verified.out, verified.err
    tip = git(repo.path, "rev-parse", "HEAD").strip()
    assert git(remote, "rev-parse", "refs/heads/campaign/deliver").strip() == tip
    # A release tag (annotated) of the delivery is pushed like the branch.
    git(repo.path, "tag", "-a", "v1.0", "-m", "release 1.0")
    tagged = _push(repo, "v1.0")
    assert tagged.returncode == 0, tagged.stderr
    assert git(remote, "rev-parse", "v1.0^{commit}").strip() == tip
    # Back on the ledger's branch, the loop is done and verify is clean.
    git(repo.path, "checkout", "-q", "main")
    assert gl(repo, "verify").code == 0
    assert ok(repo, "next", "--json").json()["action"] == "done"


def test_a_branch_ended_by_a_delivery_merged_back_into_the_ledger_is_refused(
    camp_toml: Repo,
) -> None:
    """What a branch carries after its ledger ended was never judged: merged into the
    ledger's branch with the configuration kept, it is a finding, not history."""
    repo = camp_toml
    remote, before = _finished_and_pushed(repo)
    git(repo.path, "checkout", "-q", "-b", "ended")
    git(repo.path, "rm", "-q", "ledger.toml")
    commit(repo, "docs(campaign): delivered", "--no-verify", "-m", "Ledger-Transition: deliver")
    forged = next((repo.path / "training_log/candidates").glob("*.json"))
    repo.write(f"training_log/candidates/{'f' * 12}-e0.json", forged.read_text())
    commit(repo, "docs: one more candidate", "--no-verify")
    git(repo.path, "checkout", "-q", "main")
    git(repo.path, "merge", "-q", "--no-ff", "--no-commit", "ended", check=False)
    git(repo.path, "checkout", "HEAD", "--", "ledger.toml")
    commit(repo, "merge the delivery", "--no-verify")
    refused = _push(repo, "--no-verify", "HEAD:refs/heads/main")
    assert refused.returncode != 0
    assert "[config-frozen]" in refused.stderr and "never judged" in refused.stderr, refused.stderr
    assert _refs(remote) == before
    assert gl(repo, "verify").code == 1


@pytest.mark.parametrize("move", ["edits-the-project", "ledger-toml-back"])
def test_a_pyproject_delivery_takes_only_the_ledgers_tables_away(
    bare_repo: Repo, move: str
) -> None:
    """With the ledger in pyproject.toml, a delivery keeps the rest of the file as it was,
    and a ledger.toml on the ended branch brings a ledger back: both are findings."""
    repo = campaign_repo(bare_repo, pyproject=True)
    remote = _remote(repo)
    _delivered(repo)
    _pushed(repo, "main")  # the ledger the delivery is read against
    git(repo.path, "checkout", "-q", "campaign/deliver")
    before = _refs(remote)
    if move == "edits-the-project":
        # The delivery redone by hand, with a dependency slipped into the project's table.
        git(repo.path, "reset", "-q", "--soft", "HEAD~1")
        text = (repo.path / "pyproject.toml").read_text()
        text = text.replace('version = "1.0"\n', 'version = "1.0"\ndependencies = ["evil"]\n')
        (repo.path / "pyproject.toml").write_text(text)
        commit(repo, "docs(campaign): delivered", "--no-verify", "-m", "Ledger-Transition: deliver")
        said = "pyproject.toml beyond its ledger tables"
    else:
        (repo.path / "ledger.toml").write_text(
            '[ledger]\ndir = "log2"\npreset = "campaign"\n', encoding="utf-8"
        )
        commit(repo, "chore: a ledger again", "--no-verify")
        said = "holds no ledger"
    refused = _push(repo, "--no-verify", "HEAD:refs/heads/campaign/deliver")
    assert refused.returncode != 0
    assert "[config-frozen]" in refused.stderr and said in refused.stderr, refused.stderr
    assert _refs(remote) == before


def test_a_ledger_toml_added_beside_a_pyproject_ledger_is_a_finding(bare_repo: Repo) -> None:
    """ledger.toml is read before pyproject.toml: one added beside a pyproject.toml that
    holds the ledger would judge history by another configuration (or not at all)."""
    repo = campaign_repo(bare_repo, pyproject=True)
    remote = _remote(repo)
    before = _refs(remote)
    repo.write("ledger.toml", '[ledger]\ndir = "log2"\npreset = "campaign"\n')
    commit(repo, "chore: a ledger of its own", "--no-verify")
    for extra in ((), ("--no-verify",)):
        refused = _push(repo, *extra, "HEAD:refs/heads/main")
        assert refused.returncode != 0, extra
        assert "[config-frozen]" in refused.stderr and "in place of pyproject" in refused.stderr
        assert _refs(remote) == before
    assert gl(repo, "verify").code == 1


def test_a_delivery_branch_name_that_reads_as_another_ref_is_bad_input(camp_toml: Repo) -> None:
    repo = camp_toml
    _remote(repo)
    _finished(repo)
    ok(repo, "finish")
    refs = git(repo.path, "for-each-ref")
    for name in ("HEAD", "refs/heads/main", "origin/main", "../x"):
        refused = gl(repo, "deliver", "--branch", name)
        assert refused.code == 2, (name, refused.err)
        assert len(refused.err.strip().splitlines()) == 1 and "Traceback" not in refused.err
    assert git(repo.path, "for-each-ref") == refs
    assert "ledger-deliver" not in git(repo.path, "worktree", "list")
    # A remote named like the default branch's first part: next proposes a name that
    # reads as no remote-tracking ref, and deliver takes it.
    git(repo.path, "remote", "add", "campaign", str(repo.path.parent / "remote.git"))
    git(repo.path, "push", "-q", "--no-verify", "campaign", "HEAD:refs/heads/deliver")
    git(repo.path, "fetch", "-q", "campaign")
    refused = gl(repo, "deliver", "--branch", "campaign/deliver")
    assert refused.code == 2 and "remote-tracking" in refused.err, refused.err
    command = ok(repo, "next", "--json").json()["command"]
    assert command == "git ledger deliver --branch campaign/deliver-2", command
    ok(repo, *command.split()[2:])


def test_a_delivery_squash_merged_into_a_product_branch_is_pushed_and_its_branch_deleted(
    bare_repo: Repo,
) -> None:
    """The campaign runs on a branch of its own; the product's main never holds a ledger.
    The delivery is squash-merged into main and pushed, then its branch is deleted: an
    honest day, with the hooks on and the server's hooks on the remote."""
    repo = bare_repo
    repo.write("README.md", "# the product\n")
    commit(repo, "docs: the product")
    remote = repo.path.parent / "remote.git"
    git(repo.path, "init", "-q", "--bare", str(remote))
    assert gl(Repo(remote), "hooks", "install", "--server").code == 0
    git(repo.path, "remote", "add", "origin", str(remote))
    git(repo.path, "push", "-q", "origin", "main")
    git(repo.path, "checkout", "-q", "-b", "perf")
    campaign_repo(repo)
    _delivered(repo)
    for ref in ("perf", "campaign/deliver"):
        pushed = _push(repo, ref)
        assert pushed.returncode == 0, pushed.stderr
    git(repo.path, "checkout", "-q", "main")
    git(repo.path, "merge", "-q", "--squash", "campaign/deliver")
    commit(repo, "perf: the campaign's delivery")
    assert "training_log/latest-report.md" in git(repo.path, "ls-files")
    pushed = _push(repo, "main")
    assert pushed.returncode == 0, pushed.stderr
    deleted = _push(repo, "--delete", "campaign/deliver")
    assert deleted.returncode == 0, deleted.stderr
    assert "campaign/deliver" not in _refs(remote)


@pytest.mark.parametrize("names_its_ledger", [True, False], ids=["names-main", "names-none"])
def test_a_delivery_made_by_hand_is_read_against_the_ledger_it_names(
    camp_toml: Repo, names_its_ledger: bool
) -> None:
    """A delivery commit that only deletes the ledger and writes the documents, on a
    branch that brought back code the campaign never kept, with a report of its own:
    verify reads it against the finished ledger it names, or refuses one naming none."""
    repo = camp_toml
    remote, before = _finished_and_pushed(repo)
    ledger = repo.head()
    git(repo.path, "checkout", "-q", "-b", "fake")
    repo.write("src/slow.py", "slow = 900\n")
    commit(repo, "perf(src): the real win", "--no-verify")
    git(repo.path, "rm", "-r", "-q", "ledger.toml", "training_log/candidates")
    repo.write("training_log/latest-report.md", "# Campaign report\n\nslow: 900\nstatus: closed\n")
    trailers = "Ledger-Transition: deliver" + (
        f"\nLedger-Delivered-From: {ledger}" if names_its_ledger else ""
    )
    commit(repo, "docs(campaign): delivered", "--no-verify", "-m", trailers)
    refused = _push(repo, "--no-verify", "fake")
    assert refused.returncode != 0
    assert "[delivered-tree]" in refused.stderr, refused.stderr
    said = ("latest-report.md differ", "src/slow.py") if names_its_ledger else ("names no",)
    assert all(s in refused.stderr for s in said), refused.stderr
    assert _refs(remote) == before


def test_a_base_recorded_before_init_is_delivered(bare_repo: Repo) -> None:
    """The base is the project as it was before the ledger came: the .gitattributes lines
    init writes for the ledger's views are not code the delivery lacks."""
    repo = bare_repo
    repo.write("src/app.py", "speed = 1\n")
    repo.write("bench.py", "print(1)\n")
    commit(repo, "feat(src): the base")
    (repo.path / "ledger.toml").write_text(
        TEMPLATE.read_text().replace("${dir}", "training_log")
        + 'scope = ["src/**"]\nbenchmark_script = "bench.py"\nrequired_records = ["NOTES.md"]\n'
    )
    ok(repo, "init")
    ok(repo, "hooks", "install")
    assert "merge=ledger-views" in (repo.path / ".gitattributes").read_text()
    repo.write("training_log/contract.md", "# Contract\n\nSpeed of src/ on bench.py.\n")
    ok(repo, "contract")
    _remote(repo)
    _delivered(repo)
    _pushed(repo, "main", "campaign/deliver")


def test_a_delivery_pushed_before_its_ledger_is_refused_then_pushed_with_it(
    camp_toml: Repo,
) -> None:
    """The remote reads a delivery against the ledger commit it names: pushed alone, it
    says to push the ledger's branch with it, and then it passes (nothing stale kept)."""
    repo = camp_toml
    remote = _remote(repo)
    _delivered(repo)
    alone = _push(repo, "--no-verify", "campaign/deliver")
    assert alone.returncode != 0
    assert "push the ledger's branch with its delivery" in alone.stderr, alone.stderr
    assert "Traceback" not in alone.stderr
    _pushed(repo, "main", "campaign/deliver")
    assert "refs/heads/campaign/deliver" in _refs(remote)
