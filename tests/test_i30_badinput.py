"""Issue 30: bad input never crashes. A collaborator's deeply nested entry is a finding
that blocks no unrelated commit; NaN and infinities in numeric options are exit 2 with
nothing written; a partial (blobless) clone is exit 2 with the reason, never a KeyError."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.helpers import Repo, fingerprint, measure, register
from tests.test_tamper import hand_commit, hooked_commit

DEEP = 3000


@pytest.mark.parametrize(
    "front",
    [
        "x: " + "[" * DEEP + "]" * DEEP,
        "x:\n" + "- " * DEEP + "x",
        "x: " + "{a: " * DEEP + "1" + "}" * DEEP,
    ],
    ids=["flow-lists", "block-lists", "flow-maps"],
)
def test_a_deeply_nested_entry_is_a_finding_that_blocks_no_unrelated_commit(
    repo: Repo, front: str
) -> None:
    repo.ok("hooks", "install")
    assert register(repo, "V1").code == 0
    measure(repo, "V1", "recent", 10.0, seeds=(1, 2))
    repo.write("training_log/V7.md", f"---\nid: V7\nkind: version\n{front}\n---\n# V7\n")
    bad = hand_commit(repo, "docs: a collaborator's entry", "training_log/V7.md")
    for verb in ("status", "next", "log", "show V1", "report"):
        done = repo.run(*verb.split())
        assert done.code in (0, 1), f"{verb}: {done.code}\n{done.err[-2000:]}"
        assert "Traceback" not in done.err and "internal error" not in done.err
    result = repo.run("verify")
    assert result.code == 1 and "[unparseable-entry]" in result.out, result.out
    assert bad[:10] in result.out and "nested deeper" in result.out
    repo.write("src/model.py", "x = 2\n")
    done = hooked_commit(repo, "feat(model): V1 — unrelated code", "src/model.py")
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("value", ["nan", "NaN", "inf", "-inf", "1e400", "-1e999"])
def test_non_finite_numeric_options_are_bad_input(repo: Repo, tmp_path: Path, value: str) -> None:
    assert register(repo, "V1").code == 0
    good = tmp_path / "good.json"
    good.write_text(json.dumps({"score": 1.0}))
    before = fingerprint(repo.path)
    for args in (
        ["record", "V1", "--gate", "recent", "--seed", "1", "--wall-time", value, str(good)],
        [
            *("register", "V9", "--bet", "b", "--gate", "recent", "--files", "a.py"),
            *("--falsifier", "f", "--effect", value),
        ],
    ):
        done = repo.run(*args)
        assert done.code == 2, f"{args}: {done.code}\n{done.err}"
        assert len(done.err.strip().splitlines()) == 1 and "finite" in done.err, done.err
        assert fingerprint(repo.path) == before


def test_a_blobless_clone_is_exit_2_with_the_reason(repo: Repo, tmp_path: Path) -> None:
    assert register(repo, "V1").code == 0
    measure(repo, "V1", "recent", 10.0, seeds=(1, 2, 3))
    repo.ok("conclude", "V1", "--verdict", "refuted", "--next", "x", "--override", "t")
    repo.git("config", "uploadpack.allowFilter", "true")
    clone = tmp_path / "blobless"
    subprocess.run(
        ["git", "clone", "-q", "--filter=blob:none", f"file://{repo.path}", str(clone)],
        check=True,
    )
    away = tmp_path / "away"
    shutil.move(repo.path, away)  # the promisor is gone: nothing is fetched on demand
    partial = Repo(clone)
    before = fingerprint(clone)
    done = partial.run("verify")
    assert done.code == 2, done.out + done.err
    assert "--filter" in done.err and "missing" in done.err, done.err
    assert len(done.err.strip().splitlines()) == 1
    for verb in ("status", "next", "show V1"):
        other = partial.run(*verb.split())
        assert other.code in (0, 1, 2) and "internal error" not in other.err, other.err
    assert fingerprint(clone) == before
    shutil.move(away, repo.path)
    subprocess.run(
        ["git", "fetch", "-q", "--refetch", "--no-filter", "origin"], cwd=clone, check=True
    )
    # A plain clone has no witnesses: verify names the fetch (issue 30), then verifies.
    assert partial.run("verify").code == 2
    spec = "+refs/ledger/witness/*:refs/ledger/remotes/origin/witness/*"
    partial.git("config", "--add", "remote.origin.fetch", spec)
    partial.git("fetch", "-q", "origin")
    assert partial.run("verify").code == 0


def test_a_huge_next_over_mcp_is_refused_before_the_entry_is_written(
    repo: Repo, tmp_path: Path
) -> None:
    from tests.test_mcp import Agent, drive

    assert register(repo, "V1").code == 0
    measure(repo, "V1", "recent", 10.0, seeds=(1, 2, 3))
    before = fingerprint(repo.path)

    async def steps(client: Agent) -> None:
        error = await client.error(
            "conclude", step_id="V1", verdict="refuted", next="x" * (600 << 10), override="t"
        )
        assert error["exit_code"] == 2, error
        assert "limit" in error["message"], error

    drive(repo, tmp_path, steps)
    assert fingerprint(repo.path) == before
    assert "V1" in repo.ok("status").out
