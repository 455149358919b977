"""Issue 47: input that can never replace a fact.

A result file that says one key twice, an entry path that differs from another only
in letter case (one file on macOS and Windows), and a commit too large to judge in
bounded time: each is refused before it becomes history, and found by ``verify``
when the hooks were skipped.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import Repo, fingerprint, measure, register
from tests.test_tamper import hand_commit, hooked_commit


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


def _many_results(repo: Repo, count: int, first: int = 0) -> list[str]:
    """``count`` result paths staged at once, all one blob: git update-index, not a
    file each, so the commit costs what one file does."""
    blob = repo.git("hash-object", "-w", "--stdin", input='{"score": 1.0}\n').strip()
    paths = [f"training_log/results/V1/recent/seed-{i}.json" for i in range(first, first + count)]
    lines = "".join(f"100644 {blob}\t{p}\n" for p in paths)
    repo.git("update-index", "--add", "--index-info", input=lines)
    return paths


def test_a_commit_over_the_entry_limit_is_a_finding_named_before_any_parse(repo: Repo) -> None:
    from ledger.core.verify.bounds import MAX_WRITTEN_ENTRIES

    assert register(repo, "V1").code == 0
    _many_results(repo, MAX_WRITTEN_ENTRIES + 1)
    repo.git("-c", "core.hooksPath=/dev/null", "commit", "-q", "--no-verify", "-m", "bulk")
    big = repo.head()
    done = repo.run("verify")
    assert done.code == 1, done.out
    lines = [line for line in done.out.splitlines() if "[bounded-commit]" in line]
    assert len(lines) == 1, done.out
    assert big[:10] in lines[0] and f"{MAX_WRITTEN_ENTRIES + 1} ledger entries" in lines[0]
    assert f"limit of {MAX_WRITTEN_ENTRIES}" in lines[0], lines[0]
    # Nothing of it was parsed: no finding per result.
    assert "[append-only-results]" not in done.out and "[unparseable-entry]" not in done.out


def test_an_entry_over_the_byte_limit_is_a_finding_without_reading_it(repo: Repo) -> None:
    from ledger.core.model.documents import MAX_ENTRY_BYTES

    assert register(repo, "V1").code == 0
    path = "training_log/results/V1/recent/seed-1.json"
    repo.write(path, '{"pad": "' + "x" * MAX_ENTRY_BYTES + '"}\n')
    big = hand_commit(repo, "V1: a huge result", path)
    done = repo.run("verify")
    assert done.code == 1, done.out
    assert f"{big[:10]} writes {path} of" in done.out and "[bounded-commit]" in done.out
    assert f"limit of {MAX_ENTRY_BYTES} bytes" in done.out, done.out


def test_the_server_refuses_a_push_over_the_entry_limit_by_its_bounds(tmp_path: Path) -> None:
    from ledger.core.verify.bounds import MAX_WRITTEN_ENTRIES
    from tests.test_server import published_loop, push

    repo = published_loop(tmp_path)
    _many_results(repo, MAX_WRITTEN_ENTRIES + 1, first=100)
    repo.git("-c", "core.hooksPath=/dev/null", "commit", "-q", "--no-verify", "-m", "bulk")
    big = repo.head()
    done = push(repo, "HEAD:refs/heads/main")
    assert done.returncode != 0, done.stderr
    refused = [line for line in done.stderr.splitlines() if "bounded-commit" in line]
    assert len(refused) == 1, done.stderr
    assert big[:10] in refused[0] and f"limit of {MAX_WRITTEN_ENTRIES}" in refused[0]


@pytest.mark.parametrize(
    ("twin", "of"),
    [
        ("training_log/v1.md", "training_log/V1.md"),
        ("training_log/results/v1/recent/seed-1.json", "training_log/results/V1"),
        (
            "training_log/results/V1/recent/Seed-1.json",
            "training_log/results/V1/recent/seed-1.json",
        ),
    ],
    ids=["registration", "results-dir", "result"],
)
def test_a_case_twin_is_refused_by_the_hook_and_found_by_verify(
    repo: Repo, twin: str, of: str
) -> None:
    repo.ok("hooks", "install")
    assert register(repo, "V1").code == 0
    measure(repo, "V1", "recent", 10.0, seeds=(1,))
    original = f"{of}/recent/seed-1.json" if of.endswith("V1") else of
    repo.write(twin, (repo.path / original).read_bytes())
    done = hooked_commit(repo, "docs: a twin", twin)
    assert done.returncode != 0
    assert f"[case-twin] {twin} differs from {of} only in letter case" in done.stderr, done.stderr
    added = hand_commit(repo, "docs: a twin", twin)
    found = repo.run("verify")
    assert found.code == 1, found.out
    lines = [line for line in found.out.splitlines() if "[case-twin]" in line]
    assert len(lines) == 1 and lines[0].startswith(f"{added[:10]} {twin}: "), found.out
    assert f"differs from {of} only in letter case" in lines[0], lines[0]
    # The replay from the root (no cached state: pygit2) finds what the light one did.
    for cache in (repo.path / ".git" / "ledger").glob("verify-*.json"):
        cache.unlink()
    again = repo.run("verify")
    assert [line for line in again.out.splitlines() if "[case-twin]" in line] == lines


def test_a_twin_directory_is_one_finding_not_one_per_later_entry(repo: Repo) -> None:
    assert register(repo, "V1").code == 0
    measure(repo, "V1", "recent", 10.0, seeds=(1,))
    twin = "training_log/results/v1/recent/seed-1.json"
    repo.write(twin, (repo.path / "training_log/results/V1/recent/seed-1.json").read_bytes())
    added = hand_commit(repo, "docs: a twin directory", twin)
    measure(repo, "V1", "recent", 10.0, seeds=(2, 3))
    for replay in ("from its cache", "from the root"):
        if replay == "from the root":
            for cache in (repo.path / ".git" / "ledger").glob("verify-*.json"):
                cache.unlink()
        found = repo.run("verify")
        lines = [line for line in found.out.splitlines() if "[case-twin]" in line]
        assert [line[:10] for line in lines] == [added[:10]], (replay, found.out)
