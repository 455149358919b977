"""Issue 30: a fresh clone that never fetched the witness refs cannot verify the
registrations (exit 2, naming the fetch command); after the documented fetch the owner's
history verifies clean and a registration rewritten and force-pushed past a host without
the server hook (what GitHub is) is caught."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from tests.helpers import Repo, git, ledger, measure, register
from tests.test_tamper import hooked_commit

SPEC = "+refs/ledger/witness/*:refs/ledger/remotes/origin/witness/*"


def owner(repo: Repo, tmp_path: Path) -> Path:
    """V1 registered, its code and three results, pushed with its witnesses to a bare
    remote that runs no hook."""
    remote = tmp_path / "hosted.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    repo.git("remote", "add", "origin", str(remote))
    repo.ok("hooks", "install")
    assert register(repo, "V1", bet="A wider cache lifts the score").code == 0
    repo.write("src/model.py", "x = 1\n")
    assert hooked_commit(repo, "feat(model): V1 — the change", "src/model.py").returncode == 0
    measure(repo, "V1", "recent", 10.0, seeds=(1, 2, 3))
    repo.git("push", "-q", "--no-verify", "origin", "HEAD:refs/heads/main")
    repo.git("push", "-q", "--no-verify", "origin", "refs/ledger/witness/*:refs/ledger/witness/*")
    return remote


def fresh_clone(tmp_path: Path, remote: Path, name: str) -> Path:
    git(tmp_path, "clone", "-q", str(remote), str(tmp_path / name))
    return tmp_path / name


def documented_fetch(clone: Path, fix: str) -> None:
    """The command verify names, run as a user would paste it."""
    done = subprocess.run(["bash", "-c", fix], cwd=clone, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_a_plain_clone_says_the_witnesses_are_missing(repo: Repo, tmp_path: Path) -> None:
    remote = owner(repo, tmp_path)
    clone = fresh_clone(tmp_path, remote, "ci")
    before = git(clone, "for-each-ref")
    result = ledger(clone, "verify")
    assert result.code == 2, result.out + result.err
    assert "witness" in result.err and "git fetch origin" in result.err, result.err
    assert SPEC in result.err
    assert git(clone, "for-each-ref") == before  # nothing written
    # The owner's own clone, after the documented fetch, verifies clean.
    fix = _fix(result.err)
    documented_fetch(clone, fix)
    assert git(clone, "for-each-ref", "refs/ledger/remotes/origin/witness/").strip()
    again = ledger(clone, "verify")
    assert again.code == 0, again.out + again.err
    assert ledger(clone, "verify").code == 0  # and again, from the saved report


def _fix(err: str) -> str:
    """The command a one-line refusal ends with: '... (<command>)'."""
    assert err.rstrip().endswith(")"), err
    return err[err.index("(git config") + 1 :].rstrip().removesuffix(")")


def test_a_force_pushed_rewritten_registration_is_caught_in_a_fresh_clone(
    repo: Repo, tmp_path: Path
) -> None:
    remote = owner(repo, tmp_path)
    attacker = fresh_clone(tmp_path, remote, "attacker")
    env = {**os.environ, "FILTER_BRANCH_SQUELCH_WARNING": "1"}
    # Every commit's V1.md says the bet was another one: the frozen part is the same in
    # each commit after the (rewritten) registration, so only the witness can tell.
    subprocess.run(
        [
            "git",
            "filter-branch",
            "-f",
            "--tree-filter",
            "test -f training_log/V1.md && sed -i 's/A wider cache/A narrower cache/' "
            "training_log/V1.md || true",
            "HEAD",
        ],
        cwd=attacker,
        env=env,
        capture_output=True,
        check=True,
    )
    assert "A narrower cache" in (attacker / "training_log/V1.md").read_text()
    git(attacker, "push", "-q", "--force", "--no-verify", "origin", "HEAD:refs/heads/main")
    ci = fresh_clone(tmp_path, remote, "ci")
    plain = ledger(ci, "verify")
    assert plain.code == 2, plain.out + plain.err  # never a silent pass
    documented_fetch(ci, _fix(plain.err))
    caught = ledger(ci, "verify")
    assert caught.code == 1, caught.out + caught.err
    assert "[witness]" in caught.out and "V1" in caught.out, caught.out


def test_a_clone_that_asked_for_witnesses_the_remote_lacks_verifies(
    repo: Repo, tmp_path: Path
) -> None:
    """A remote that never received a witness (pushed with plain git push): the refspec in
    the clone's config says they were asked for; nothing more can be checked."""
    remote = tmp_path / "hosted.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    assert register(repo, "V1").code == 0
    repo.git("remote", "add", "origin", str(remote))
    repo.git("push", "-q", "--no-verify", "origin", "HEAD:refs/heads/main")
    clone = fresh_clone(tmp_path, remote, "ci")
    assert ledger(clone, "verify").code == 2
    git(clone, "config", "--add", "remote.origin.fetch", SPEC)
    git(clone, "fetch", "-q", "origin")
    done = ledger(clone, "verify")
    assert done.code == 0, done.out + done.err


def test_a_clone_without_registrations_needs_no_witnesses(repo: Repo, tmp_path: Path) -> None:
    remote = tmp_path / "hosted.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    repo.git("remote", "add", "origin", str(remote))
    repo.git("push", "-q", "--no-verify", "origin", "HEAD:refs/heads/main")
    clone = fresh_clone(tmp_path, remote, "ci")
    done = ledger(clone, "verify")
    assert done.code == 0, done.out + done.err


def test_the_remote_named_is_the_one_git_remote_lists(repo: Repo, tmp_path: Path) -> None:
    """witnesses_absent reads the remotes from git's configuration in one call: the same
    names, in the same (sorted) order, as ``git remote`` (a dotted name, one configured
    by a fetch key alone, ``remote.pushDefault`` that names none), origin when there."""
    from ledger.core.witnessrefs import witnesses_absent

    assert register(repo, "V1").code == 0
    repo.git("update-ref", "-d", "refs/ledger/witness/V1")  # as a plain clone has none
    assert witnesses_absent(repo.path) is None  # no remote: nothing to fetch them from
    repo.git("remote", "add", "up.stream", str(tmp_path / "a.git"))
    repo.git("remote", "add", "Zed", str(tmp_path / "z.git"))
    repo.git("config", "remote.pushDefault", "up.stream")
    repo.git("config", "remote.fetchonly.fetch", "+refs/heads/*:refs/remotes/fetchonly/*")
    repo.git("config", "remote.multi.url", "one\ntwo")  # a value holding a newline
    listed = repo.git("remote").split()
    assert listed == ["Zed", "fetchonly", "multi", "up.stream"], listed
    assert witnesses_absent(repo.path) == "Zed"  # no origin: the first listed
    repo.git("remote", "add", "origin", str(tmp_path / "b.git"))
    assert witnesses_absent(repo.path) == "origin"
    repo.git("config", "--add", "remote.fetchonly.fetch", SPEC.replace("origin", "fetchonly"))
    assert witnesses_absent(repo.path) is None  # one remote asked for them
    repo.git("config", "--unset", "remote.fetchonly.fetch", "witness")
    assert witnesses_absent(repo.path) == "origin"
    repo.git("update-ref", "refs/ledger/remotes/origin/witness/V1", "HEAD")
    assert witnesses_absent(repo.path) is None  # a witness is here
