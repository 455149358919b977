"""``git ledger log``: one order for ``log`` and ``log -n``, parents after children, reverts named.

The tests' clock is fixed, so every commit here is in the same second: the
order cannot come from commit times.
"""

from __future__ import annotations

from pathlib import Path

from tests.helpers import Repo, measure, register
from tests.writer import write_notes


def _rows(repo: Repo, *args: str) -> list[dict[str, str]]:
    rows: list[dict[str, str]] = repo.ok("log", "--json", *args).json()
    return rows


def _parents(repo: Repo) -> dict[str, list[str]]:
    out = repo.git("rev-list", "--parents", "HEAD")
    return {line.split()[0]: line.split()[1:] for line in out.splitlines()}


def _ancestors(parents: dict[str, list[str]], commit: str) -> set[str]:
    seen: set[str] = set()
    stack = list(parents[commit])
    while stack:
        c = stack.pop()
        if c not in seen:
            seen.add(c)
            stack += parents[c]
    return seen


def _assert_prefixes_and_topology(repo: Repo) -> None:
    full = _rows(repo)
    commits = [r["commit"] for r in full]
    assert len(commits) == len(set(commits)), "no row twice"
    for n in sorted({1, 2, len(full) // 2, len(full) - 1, len(full), len(full) + 1} - {0}):
        assert _rows(repo, "-n", str(n)) == full[:n], f"log -n {n} is not the first {n} of log"
    parents = _parents(repo)
    for i, commit in enumerate(commits):
        above = set(commits[:i])
        assert not (_ancestors(parents, commit) & above), f"{commit[:10]} shown after its parent"
    text = repo.ok("log", "-n", "3").out.splitlines()
    assert len(text) == 4 and all(
        r["commit"][:10] in t for r, t in zip(full[:3], text[1:], strict=True)
    )


def test_log_n_is_the_head_of_log_with_same_second_commits(repo: Repo) -> None:
    assert register(repo, "V1").code == 0
    measure(repo, "V1", "recent", 10.0)
    repo.ok("conclude", "V1", "--verdict", "confirmed", "--next", "continue")
    kinds = [r["kind"] for r in _rows(repo)]
    assert kinds == ["conclude", "record", "record", "record", "record", "register", "init"]
    _assert_prefixes_and_topology(repo)
    assert [r["kind"] for r in _rows(repo, "-n", "2", "--step", "V1")] == ["conclude", "record"]


def test_log_order_through_merges_keeps_children_first(repo: Repo) -> None:
    from ledger.core.store import Store

    store = Store(repo.path)
    write_notes(store, 2, "base")
    repo.git("switch", "-q", "-c", "side")
    write_notes(store, 4, "side")
    repo.git("switch", "-q", "main")
    write_notes(store, 1, "main")
    repo.git("merge", "-q", "--no-edit", "--no-ff", "side")
    write_notes(store, 2, "after")
    repo.git("switch", "-q", "-c", "side2", "HEAD~1")
    write_notes(store, 3, "side2")
    repo.git("switch", "-q", "main")
    repo.git("merge", "-q", "--no-edit", "--no-ff", "side2")
    _assert_prefixes_and_topology(repo)


def test_a_revert_of_a_transition_shows_as_a_revert_naming_it(repo: Repo, tmp_path: Path) -> None:
    assert register(repo, "V1").code == 0
    measure(repo, "V1", "recent", 10.0, seeds=(1, 2))
    undone = repo.head()
    repo.git("revert", "--no-edit", "HEAD")
    rows = _rows(repo)
    assert rows[0]["kind"] == "revert" and rows[0]["step"] == "V1"
    assert rows[0]["reverts"] == undone and rows[0]["commit"] == repo.head()
    assert rows[1]["commit"] == undone and rows[1]["kind"] == "record"
    subjects = [r["subject"] for r in rows]
    assert len(subjects) == len(set(subjects)), "no second identical row"
    assert f"(undoes {undone[:10]})" in repo.ok("log", "-n", "1").out
    # A revert that carries the transition's own trailers is still a revert.
    repo.git("revert", "--no-edit", "HEAD~2")
    message = repo.git("log", "-1", "--format=%B").rstrip("\n")
    repo.git(
        "commit",
        "-q",
        "--amend",
        "-m",
        message + "\n\nLedger-Transition: record\nLedger-Step: V1\n",
    )
    top = _rows(repo, "-n", "1")[0]
    assert top["kind"] == "revert" and top["reverts"] == repo.git("rev-parse", "HEAD~3").strip()
    _assert_prefixes_and_topology(repo)
