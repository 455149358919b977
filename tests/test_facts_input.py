"""Issue 47: input that can never replace a fact.

A result file that says one key twice, an entry path that differs from another only
in letter case (one file on macOS and Windows), and a commit too large to judge in
bounded time: each is refused before it becomes history, and found by ``verify``
when the hooks were skipped.
"""

from __future__ import annotations

from pathlib import Path

from tests.helpers import Repo, fingerprint, register
from tests.test_tamper import hand_commit


def test_a_result_with_a_key_twice_is_bad_input_and_nothing_is_written(
    repo: Repo, tmp_path: Path
) -> None:
    assert register(repo, "V1").code == 0
    twice = tmp_path / "twice.json"
    twice.write_text('{"score": 1.0, "score": 9.0}\n')
    before = fingerprint(repo.path)
    done = repo.run("record", "V1", "--gate", "recent", "--seed", "1", str(twice))
    assert done.code == 2, f"{done.code}\n{done.out}\n{done.err}"
    assert len(done.err.strip().splitlines()) == 1, done.err
    assert "duplicate key 'score'" in done.err and "twice.json" in done.err, done.err
    assert fingerprint(repo.path) == before


def test_a_committed_result_with_a_key_twice_is_a_finding(repo: Repo) -> None:
    assert register(repo, "V1").code == 0
    path = "training_log/results/V1/recent/seed-1.json"
    repo.write(path, '{"metrics": {"score": 1.0, "score": 9.0}}\n')
    bad = hand_commit(repo, "V1: a result by hand", path)
    done = repo.run("verify")
    assert done.code == 1, done.out
    assert bad[:10] in done.out and "duplicate key 'score'" in done.out, done.out
