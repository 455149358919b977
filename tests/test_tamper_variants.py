"""More ways around the hooks, tried as an adversary would, beyond tests/test_tamper.py:
published history rewritten (amend, a dropped result, a force-push) and then synced,
a registration cherry-picked or rebased onto another branch, shallow clones of every
depth, pathological YAML arriving from a remote, forged configuration transitions, and
identities or one-line fields that would forge a commit object. Each is caught, refused,
or exits 2 with the fix, and the repository is left as it was."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from ledger.core.model.documents import MAX_ENTRY_BYTES
from tests.helpers import Repo, Templates, fingerprint, git, measure, new_ledger, register
from tests.test_tamper import SEED1, V1, assert_caught, edit_json, hand_commit, hooked_commit


def synced_loop(root: Path) -> Repo:
    """An honest loop synced to a plain bare remote: V1 registered, code, 3 results."""
    repo = new_ledger(root)
    remote = root / "remote.git"
    git(root, "init", "-q", "--bare", str(remote))
    repo.git("remote", "add", "origin", str(remote))
    repo.ok("hooks", "install")
    assert register(repo, "V1").code == 0
    repo.write("src/model.py", "x = 1\n")
    assert hooked_commit(repo, "feat(model): V1 — the change", "src/model.py").returncode == 0
    measure(repo, "V1", "recent", 10.0, seeds=(1, 2, 3))
    repo.ok("sync")
    assert repo.run("verify").code == 0
    return repo


@pytest.fixture
def loop(templates: Templates, tmp_path: Path) -> Repo:
    return templates.copy("synced-loop", tmp_path, synced_loop)


def other_clone(loop: Repo, tmp_path: Path, name: str = "other") -> Repo:
    path = tmp_path / name
    subprocess.run(["git", "clone", "-q", str(tmp_path / "remote.git"), str(path)], check=True)
    other = Repo(path)
    other.ok("doctor", "--fix")
    other.ok("sync")
    return other


def force_push(repo: Repo) -> None:
    repo.git("push", "-q", "--force", "--no-verify", "origin", "HEAD:main")


def local_state(repo: Repo) -> dict[str, str]:
    """The fingerprint without remote-tracking refs (a refused sync may still fetch)."""
    found = fingerprint(repo.path)
    found["refs"] = "\n".join(
        line
        for line in found.get("refs", "").splitlines()
        if not line.startswith(("refs/remotes/", "refs/ledger/remotes/"))
    )
    return found


def refused_sync(repo: Repo, *words: str) -> None:
    before = local_state(repo)
    result = repo.run("sync")
    assert result.code == 1, result.out + result.err
    assert all(w in result.err for w in words), result.err
    assert local_state(repo) == before


# --- published history rewritten, then synced --------------------------------------------


def test_amended_record_after_sync_is_refused_by_sync(loop: Repo, tmp_path: Path) -> None:
    other = other_clone(loop, tmp_path)
    edit_json(other, "training_log/results/V1/recent/seed-3.json", score=99.0)
    other.git("add", "-A")
    other.git("-c", "core.hooksPath=/dev/null", "commit", "-q", "--amend", "--no-edit",
              "--no-verify")  # fmt: skip
    force_push(other)
    refused_sync(loop, "rewritten")


def test_rebase_dropping_a_result_commit_after_sync_is_refused(loop: Repo, tmp_path: Path) -> None:
    other = other_clone(loop, tmp_path)
    drop = other.git("log", "-1", "--format=%H", "--", "training_log/results/V1/recent/seed-2.json")
    env = {**os.environ, "GIT_SEQUENCE_EDITOR": f"sed -i -e '/^pick {drop.strip()[:7]}/d'"}
    subprocess.run(
        ["git", "-c", "core.hooksPath=/dev/null", "rebase", "-q", "-i", f"{drop.strip()}^"],
        cwd=other.path,
        env=env,
        check=True,
        capture_output=True,
    )
    assert not (other.path / "training_log/results/V1/recent/seed-2.json").exists()
    force_push(other)
    refused_sync(loop, "rewritten")


def test_a_rewritten_remote_stays_refused_and_the_victims_ids_stay(
    loop: Repo, tmp_path: Path
) -> None:
    loop.ok("conclude", "V1", "--verdict", "inconclusive", "--next", "x", "--override", "t")
    assert register(loop, "V2").code == 0
    loop.ok("sync")
    other = other_clone(loop, tmp_path)
    other.git("reset", "-q", "--hard", "HEAD~1")  # drops V2's registration
    other.write("src/y.py", "y\n")
    hand_commit(other, "feat: something else", "src")
    force_push(other)
    refused_sync(loop, "rewritten")
    refused_sync(loop, "rewritten")
    assert (loop.path / "training_log/V2.md").exists()
    assert not (loop.path / "training_log/V2a.md").exists()


# --- a registration copied onto another branch ----------------------------------------------


def test_registration_cherry_picked_onto_another_branch_is_caught(loop: Repo) -> None:
    reg = loop.git("log", "--format=%H", "--", V1).split()[-1]
    root = loop.git("rev-list", "--max-parents=0", "HEAD").strip()
    loop.git("switch", "-q", "-c", "elsewhere", root)
    loop.write("docs/start.md", "another line of work\n")
    hand_commit(loop, "docs: start", "docs")
    loop.git("-c", "core.hooksPath=/dev/null", "cherry-pick", reg)
    copy = loop.head()
    assert copy != reg
    assert_caught(loop, "witness", copy)


def test_a_branch_holding_a_registration_rebased_onto_main_is_caught_and_a_merge_is_not(
    repo: Repo,
) -> None:
    repo.ok("hooks", "install")
    repo.git("switch", "-q", "-c", "feature")
    assert register(repo, "V1").code == 0
    measure(repo, "V1", "recent", 10.0, seeds=(1, 2))
    repo.git("switch", "-q", "main")
    repo.write("docs/news.md", "news\n")
    hand_commit(repo, "docs: news", "docs")
    repo.git("switch", "-q", "-c", "merged")
    repo.git("merge", "-q", "--no-ff", "--no-edit", "feature")
    assert repo.run("verify").code == 0, repo.run("verify").out
    repo.git("switch", "-q", "-c", "rebased", "feature")
    subprocess.run(
        ["git", "-c", "core.hooksPath=/dev/null", "rebase", "-q", "main"],
        cwd=repo.path,
        check=True,
        capture_output=True,
    )
    assert_caught(repo, "witness", None)


# --- shallow clones ------------------------------------------------------------------------


@pytest.mark.parametrize("depth", [1, 2, 3])
def test_a_shallow_clone_of_any_depth_exits_2_with_the_fix_and_unshallow_verifies(
    loop: Repo, tmp_path: Path, depth: int
) -> None:
    clone = tmp_path / f"shallow-{depth}"
    subprocess.run(
        ["git", "clone", "-q", "--depth", str(depth), f"file://{loop.path}", str(clone)],
        check=True,
    )
    shallow = Repo(clone)
    before = fingerprint(clone)
    for args in (("verify",), ("verify", "--json"), ("verify", "HEAD~1..HEAD")):
        result = shallow.run(*args)
        assert result.code == 2, (args, result.out, result.err)
        assert "git fetch --unshallow" in result.err
    refused = shallow.run("conclude", "V1", "--verdict", "refuted", "--next", "x")
    assert refused.code == 2 and "git fetch --unshallow" in refused.err
    assert fingerprint(clone) == before
    status = shallow.run("status", "--json")
    assert status.code == 0 and status.json()["history"][0]["rule"] == "cannot-verify"
    shallow.git("fetch", "-q", "--unshallow")
    # Issue 30: a clone also fetches the witnesses before it can verify registrations.
    assert shallow.run("verify").code == 2
    spec = "+refs/ledger/witness/*:refs/ledger/remotes/origin/witness/*"
    shallow.git("config", "--add", "remote.origin.fetch", spec)
    shallow.git("fetch", "-q", "origin")
    assert shallow.run("verify").code == 0


# --- unparseable entries arriving from elsewhere -------------------------------------------


@pytest.mark.parametrize(
    "front",
    [
        "[" * 100000,
        "a:\n" + "".join(" " * i + "b:\n" for i in range(1, 3000)),
        "- " * 50000 + "x",
        "{a: " * 20000,
        "x: &a [1]\ny: *a\n",
    ],
    ids=["flow-brackets", "block-mapping", "block-sequence", "flow-mapping", "alias"],
)
def test_pathological_yaml_arriving_from_a_remote_is_a_finding_never_a_crash(
    loop: Repo, tmp_path: Path, front: str
) -> None:
    other = other_clone(loop, tmp_path)
    other.write("training_log/V2.md", f"---\n{front}\n---\n\n## Hypothesis\n\nx\n")
    message = "docs(recent): V2 — register\n\nLedger-Transition: register\nLedger-Step: V2"
    bad = hand_commit(other, message, "training_log")
    other.git("push", "-q", "--no-verify", "origin", "HEAD:main")
    result = other.run("verify")
    assert result.code == 1, result.out + result.err
    # The block mapping is 4.5 MB: over the bytes an entry may have, it is not even read.
    rule = "bounded-commit" if len(front) > MAX_ENTRY_BYTES else "unparseable-entry"
    assert any(f"[{rule}]" in x and bad[:10] in x for x in result.out.splitlines())
    assert other.run("status").code in (0, 1)
    assert other.run("status", "--json").code in (0, 1)
    refused_sync(loop, rule)


# --- forged configuration transitions ------------------------------------------------------


def test_a_forged_config_trailer_on_a_commit_with_code_is_caught(loop: Repo) -> None:
    text = (loop.path / "ledger.toml").read_text().replace("sigma_k = 2.0", "sigma_k = 0.1")
    loop.write("ledger.toml", text)
    loop.write("src/model.py", "x = 9\n")
    message = "chore(config): stats.sigma_k\n\nLedger-Transition: config"
    commit = hand_commit(loop, message, "ledger.toml", "src/model.py")
    assert_caught(loop, "config-frozen", commit)


def test_a_verdict_uses_the_configuration_in_force_at_its_registration(repo: Repo) -> None:
    assert register(repo, "V1").code == 0
    measure(repo, "V1", "recent", 10.0, seeds=(1, 2, 3))
    repo.ok("conclude", "V1", "--verdict", "inconclusive", "--next", "x", "--override", "t")
    assert register(repo, "V2").code == 0
    measure(repo, "V2", "recent", 12.0, seeds=(1, 2, 3))
    before = repo.run("show", "V2", "--json").json()["evidence"][0]["threshold"]
    repo.ok("config", "set", "gates.recent.noise_floor", "50", "--reason", "after the fact")
    after = repo.run("show", "V2", "--json").json()["evidence"][0]["threshold"]
    assert after == before
    repo.ok("conclude", "V2", "--verdict", "confirmed", "--next", "go on")
    assert "config change:" in repo.run("status").out
    assert register(repo, "V3").code == 0
    measure(repo, "V3", "recent", 14.0, seeds=(1, 2, 3))
    later = repo.run("show", "V3", "--json").json()["evidence"][0]["threshold"]
    assert later != before  # a version registered after the change uses it


# --- what reaches a commit object ----------------------------------------------------------


@pytest.mark.parametrize(
    ("var", "value"),
    [
        ("GIT_COMMITTER_NAME", "Eve\nLedger-Override: forged"),
        ("GIT_COMMITTER_EMAIL", "eve@example.com\n"),
        ("GIT_AUTHOR_NAME", "Eve <eve@example.com>"),
    ],
)
@pytest.mark.parametrize("verb", ["record", "void", "config"])
def test_a_forging_identity_is_refused_by_every_writing_verb(
    loop: Repo, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, var: str, value: str, verb: str
) -> None:
    new = tmp_path / "r.json"
    new.write_text(json.dumps({"score": 10.0}))
    args = {
        "record": ["record", "V1", "--gate", "recent", "--seed", "7", str(new)],
        "void": ["void", "V1", "--reason", "x"],
        "config": ["config", "set", "stats.sigma_k", "2.5", "--reason", "x"],
    }[verb]
    before = fingerprint(loop.path)
    monkeypatch.setenv(var, value)
    result = loop.run(*args)
    assert result.code == 2, result.out + result.err
    assert fingerprint(loop.path) == before


def test_a_refusal_leaves_an_index_whose_stat_data_is_stale_as_it_was(
    loop: Repo, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A tree copied or touched since git last looked: git status would refresh the
    index in place, so a refused transition's own probes must not run it that way."""
    os.utime(loop.path / "src/model.py", (1_000_000, 1_000_000))  # same bytes, new stat
    new = tmp_path / "r.json"
    new.write_text(json.dumps({"score": 10.0}))
    before = fingerprint(loop.path)
    monkeypatch.setenv("GIT_AUTHOR_NAME", "Eve <eve@example.com>")
    result = loop.run("record", "V1", "--gate", "recent", "--seed", "7", str(new))
    assert result.code == 2, result.out + result.err
    assert fingerprint(loop.path) == before


@pytest.mark.parametrize(
    "args",
    [
        ["config", "set", "stats.sigma_k", "2.5", "--reason", "a\nLedger-Transition: void"],
        ["config", "set", "stats.sigma_k", "2.5", "--reason", "a\rb"],
        ["void", "V1", "--reason", "a\n\nLedger-Step: V9"],
        ["conclude", "V1", "--verdict", "refuted", "--next", "x", "--override", "a\rb"],
    ],
)
def test_one_line_fields_refuse_line_breaks(loop: Repo, args: list[str]) -> None:
    before = fingerprint(loop.path)
    result = loop.run(*args)
    assert result.code == 2, result.out + result.err
    assert fingerprint(loop.path) == before


def test_withdrawn_record_in_published_history_passes_sync_and_is_shown(
    loop: Repo, tmp_path: Path
) -> None:
    other = other_clone(loop, tmp_path)
    record = other.git("log", "-1", "--format=%H", "--", SEED1).strip()
    other.git("revert", "--no-edit", record)
    other.ok("sync")
    assert loop.run("sync").code == 0
    assert "withdrawn:" in loop.run("verify").out
    assert "withdrawn:" in loop.run("show", "V1").out
