"""The server side: a bare repository with hooks/pre-receive (or hooks/update) installed
refuses a push of each tampered history and accepts honest ones; ``sync`` refuses
rewritten history and reports a hook's refusal as exit 1."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.helpers import Repo, Templates, git, measure, new_ledger, register
from tests.test_tamper import SCENARIOS, hand_commit, hooked_commit

ROOT = Path(__file__).resolve().parent.parent
# One or more scenarios per invariant, rewrites (force-pushes) included.
SERVER_SCENARIOS = [
    "result_edited",
    "result_deleted",
    "result_added_by_hand",
    "registration_reverted_and_id_reused",
    "registration_amended_in_rebase",
    "frozen_edit_then_reverted",
    "noise_floor_lowered_with_code",
    "conclusion_written_by_hand",
    "code_commit_without_trailer",
    "new_result_unparseable",
    "squash_merged_ledger_branch",
    "merge_that_edits_a_result",
]


def server(tmp_path: Path, hook: str = "pre-receive") -> Path:
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    (remote / "hooks").mkdir(exist_ok=True)
    shutil.copy(ROOT / "hooks" / hook, remote / "hooks" / hook)
    (remote / "hooks" / hook).chmod(0o755)
    return remote


def push(repo: Repo, *refs: str, force: bool = False) -> subprocess.CompletedProcess[str]:
    # --no-verify: the local pre-push hook would refuse first; the server must refuse too.
    args = ["git", "push", "--no-verify", "origin", *refs] + (["--force"] if force else [])
    return subprocess.run(args, cwd=repo.path, capture_output=True, text=True, check=False)


def published_loop(root: Path) -> Repo:
    """An honest loop pushed (branch and witnesses) to a server running pre-receive."""
    repo = new_ledger(root)
    remote = server(root)
    repo.git("remote", "add", "origin", str(remote))
    repo.ok("hooks", "install")
    assert register(repo, "V1").code == 0
    repo.write("src/model.py", "x = 1\n")
    assert hooked_commit(repo, "feat(model): V1 — the change", "src/model.py").returncode == 0
    measure(repo, "V1", "recent", 10.0, seeds=(1, 2, 3))
    done = push(repo, "HEAD:refs/heads/main", "refs/ledger/witness/*:refs/ledger/witness/*")
    assert done.returncode == 0, done.stderr
    return repo


@pytest.fixture
def published(templates: Templates, tmp_path: Path) -> Repo:
    return templates.copy("published-loop", tmp_path, published_loop)


@pytest.mark.parametrize("name", SERVER_SCENARIOS)
def test_pre_receive_refuses_each_tampered_history(published: Repo, name: str) -> None:
    rule, _commit = SCENARIOS[name](published)
    remote_tip = git(published.path.parent / "remote.git", "rev-parse", "main").strip()
    done = push(published, "HEAD:refs/heads/main", force=True)
    assert done.returncode != 0, done.stderr
    assert "git-ledger pre-receive refused" in done.stderr
    assert f"[{rule}]" in done.stderr or "[rewritten-history]" in done.stderr, done.stderr
    after = git(published.path.parent / "remote.git", "rev-parse", "main").strip()
    assert after == remote_tip


def test_pre_receive_accepts_honest_pushes(published: Repo, tmp_path: Path) -> None:
    new = tmp_path / "again.json"
    new.write_text(json.dumps({"score": 10.5}))
    published.ok("record", "V1", "--gate", "recent", "--seed", "1", str(new), "--replace", "rerun")
    record = published.git(
        "log", "-1", "--format=%H", "--", "training_log/results/V1/recent/seed-2.json"
    )
    published.git("revert", "--no-edit", record.strip())
    published.ok("config", "set", "stats.sigma_k", "2.5", "--reason", "stricter")
    published.ok("conclude", "V1", "--verdict", "inconclusive", "--next", "x", "--override", "t")
    assert register(published).code == 0
    done = push(published, "HEAD:refs/heads/main", "refs/ledger/witness/*:refs/ledger/witness/*")
    assert done.returncode == 0, done.stderr
    # A branch without a ledger, and a new branch, pass as well.
    published.git("switch", "-q", "-c", "feature")
    published.write("docs/a.md", "a\n")
    hand_commit(published, "docs: a", "docs")
    assert push(published, "feature").returncode == 0


def test_pre_receive_refuses_moving_a_witness(published: Repo) -> None:
    published.git("update-ref", "refs/ledger/witness/V1", "HEAD")
    done = push(published, "+refs/ledger/witness/V1:refs/ledger/witness/V1")
    assert done.returncode != 0 and "never moved" in done.stderr


def test_update_hook_variant_refuses_a_tampered_push(repo: Repo, tmp_path: Path) -> None:
    remote = server(tmp_path, "update")
    repo.git("remote", "add", "origin", str(remote))
    assert register(repo, "V1").code == 0
    measure(repo, "V1", "recent", 10.0, seeds=(1, 2))
    assert push(repo, "HEAD:refs/heads/main").returncode == 0
    SCENARIOS["result_edited"](repo)
    done = push(repo, "HEAD:refs/heads/main")
    assert done.returncode != 0 and "git-ledger update refused" in done.stderr


# --- sync ------------------------------------------------------------------------------


def clone(remote: Path, path: Path) -> Repo:
    subprocess.run(["git", "clone", "-q", str(remote), str(path)], check=True)
    other = Repo(path)
    other.ok("doctor", "--fix")
    return other


def test_sync_refuses_a_force_pushed_remote_and_keeps_the_victims_ids(
    repo: Repo, tmp_path: Path
) -> None:
    remote = tmp_path / "plain.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    repo.git("remote", "add", "origin", str(remote))
    assert register(repo, "V1").code == 0
    measure(repo, "V1", "recent", 10.0, seeds=(1, 2))
    repo.ok("conclude", "V1", "--verdict", "inconclusive", "--next", "x", "--override", "t")
    repo.ok("sync")
    attacker = clone(remote, tmp_path / "attacker")
    attacker.git("reset", "-q", "--hard", "HEAD~4")
    attacker.write("src/x.py", "x\n")
    hand_commit(attacker, "feat: history rewritten", "src")
    attacker.git("push", "-q", "--force", "--no-verify", "origin", "HEAD:main")
    head = repo.head()
    result = repo.run("sync")
    assert result.code == 1 and "rewritten" in result.err, result.err
    assert repo.head() == head and (repo.path / "training_log/V1.md").exists()
    assert repo.run("sync").code == 1  # and it stays refused


def test_sync_refuses_history_that_does_not_verify(repo: Repo, tmp_path: Path) -> None:
    remote = tmp_path / "plain.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    repo.git("remote", "add", "origin", str(remote))
    assert register(repo, "V1").code == 0
    measure(repo, "V1", "recent", 10.0, seeds=(1, 2))
    repo.ok("sync")
    other = clone(remote, tmp_path / "other")
    SCENARIOS["result_edited"](other)
    other.git("push", "-q", "--no-verify", "origin", "HEAD:main")
    head = repo.head()
    result = repo.run("sync")
    assert result.code == 1 and "append-only-results" in result.err
    assert repo.head() == head


def test_sync_reports_a_server_hook_refusal_as_exit_1(published: Repo) -> None:
    SCENARIOS["result_edited"](published)
    result = published.run("sync")
    assert result.code == 1, result.err
    assert "refused" in result.err and "append-only-results" in result.err


def test_sync_pushes_witnesses_and_a_rewrite_is_caught_against_the_remote_copy(
    repo: Repo, tmp_path: Path
) -> None:
    remote = tmp_path / "plain.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    repo.git("remote", "add", "origin", str(remote))
    assert register(repo, "V1").code == 0
    repo.ok("sync")
    assert "refs/ledger/witness/V1" in git(remote, "for-each-ref", "refs/ledger")
    other = clone(remote, tmp_path / "other")
    other.ok("sync")
    assert "refs/ledger/witness/V1" in other.git("for-each-ref", "refs/ledger/witness")


def test_matrix_winner_passes_pre_push_and_sync(repo: Repo, tmp_path: Path) -> None:
    remote = tmp_path / "plain.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    repo.git("remote", "add", "origin", str(remote))
    repo.ok("hooks", "install")
    spec = tmp_path / "cells.toml"
    spec.write_text(
        '[cells.A]\nslug = "a"\nbet = "Cell A helps"\ngate = "recent"\n'
        'files = ["src/a.py"]\nfalsifier = "no gain"\n'
        '[cells.B]\nslug = "b"\nbet = "Cell B helps"\ngate = "recent"\n'
        'files = ["src/b.py"]\nfalsifier = "no gain"\n'
    )
    made = repo.run("matrix", "new", "V1", "--spec", str(spec), "--json")
    assert made.code == 0, made.err
    cells = made.json()["cells"]
    for cell in cells:
        work = Repo(Path(cell["worktree"]))
        letter = cell["cell"].split(".")[-1].lower()
        work.write(f"src/{letter}.py", "x = 1\n")
        done = hooked_commit(work, f"feat(x): {cell['cell']} — code", f"src/{letter}.py")
        assert done.returncode == 0, done.stderr
        measure(work, cell["cell"], "recent", 10.0 + len(letter), seeds=(1, 2, 3))
    mid = made.json()["id"]
    result = repo.run("matrix", "conclude", mid, "--winner", "A", "--override", "test")
    assert result.code == 0, result.err
    assert repo.run("verify").code == 0
    done = subprocess.run(
        ["git", "push", "origin", "HEAD:refs/heads/main"],
        cwd=repo.path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert repo.run("sync").code == 0
