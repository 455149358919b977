"""The kept index of stepped commits (ledger.presets.versions.stepindex) reads what a
whole walk reads, in the same order, however history moves: commits on top, merges of
branches dated in the past and the future, resets, amends; and ``history_of`` answers
the same with it as without it."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from pathlib import Path

import pytest

from ledger.core.commitinfo import CommitInfo
from ledger.core.store import TRAILER_STEP, TRAILER_TRANSITION, Store
from ledger.presets.versions import stepindex
from tests.helpers import Repo, git


def _walked(store: Store) -> list[stepindex.Row]:
    return [
        (info.id, step, info.trailer(TRAILER_TRANSITION))
        for info in store.walk(None)
        if (step := info.trailer(TRAILER_STEP)) is not None
    ]


class _Walks:
    """Counts the whole walks a store makes."""

    def __init__(self, store: Store) -> None:
        self.count = 0
        self.walk = store.walk
        store.walk = self  # type: ignore[method-assign]

    def __call__(self, rev: str | None = None, first_parent: bool = False) -> Iterator[CommitInfo]:
        self.count += 1
        return self.walk(rev, first_parent)


def _commit(repo: Repo, rng: random.Random, clock: list[int]) -> None:
    # Dates that go back as well as forward: the walk is topological, not by date.
    clock[0] += rng.choice([-7200, -60, 0, 1, 60, 3600])
    step = f"V{rng.randint(1, 9)}"
    kind = rng.choice([None, None, "register", "record", "conclude"])
    trailers = [f"Ledger-Step: {step}"] if rng.random() < 0.8 else []
    if trailers and kind:
        trailers.append(f"Ledger-Transition: {kind}")
    message = "chore: a step\n\n" + "\n".join(trailers) if trailers else "docs: no step"
    date = f"@{clock[0]} +0000"
    git(repo.path, "commit", "-q", "--allow-empty", "-m", message, "--date", date)


@pytest.mark.parametrize("seed", range(4))
def test_the_kept_index_reads_what_a_whole_walk_reads(bare_repo: Repo, seed: int) -> None:
    rng = random.Random(seed)
    repo = bare_repo
    clock = [1767225600]
    _commit(repo, rng, clock)
    store = Store(repo.path)
    reads = {"kept or on top": 0, "whole": 0}
    for _ in range(60):
        move = rng.choice(["on top"] * 5 + ["merge", "reset", "amend", "nothing"])
        if move == "on top":
            for _ in range(rng.randint(1, 3)):
                _commit(repo, rng, clock)
        elif move == "merge":
            base = git(repo.path, "rev-parse", f"HEAD~{rng.randint(0, 3)}", check=False).strip()
            if not base:
                continue
            git(repo.path, "checkout", "-q", "-B", "side", base)
            for _ in range(rng.randint(1, 3)):
                _commit(repo, rng, clock)
            git(repo.path, "checkout", "-q", "main")
            _commit(repo, rng, clock)
            git(repo.path, "merge", "-q", "--no-ff", "--no-edit", "side")
        elif move == "reset":
            git(repo.path, "reset", "-q", "--hard", "HEAD~1", check=False)
        elif move == "amend":
            git(repo.path, "commit", "-q", "--amend", "--allow-empty", "-m", "chore: amended")
        store = Store(repo.path)
        kept = Path(store.ledger_state_dir, "cache", stepindex.FILE).exists()
        walks = _Walks(store)
        got = stepindex.steps(store)
        reads["whole" if walks.count else "kept or on top"] += 1
        if move == "on top" and kept:
            assert not walks.count, "commits on top of the kept tip are read alone"
        assert got == _walked(store), move
    # The probe reads every kind of move (a check that cannot fail is a defect).
    assert reads["kept or on top"] and reads["whole"], reads


def test_a_kept_index_of_another_shape_is_never_believed(bare_repo: Repo) -> None:
    repo = bare_repo
    git(repo.path, "commit", "-q", "--allow-empty", "-m", "c\n\nLedger-Step: V1")
    store = Store(repo.path)
    assert stepindex.steps(store) == _walked(store)
    file = Path(store.ledger_state_dir, "cache", stepindex.FILE)
    record = json.loads(file.read_text())
    record["data"]["rows"] = [["0" * 40, "V9", None]]
    file.write_text(json.dumps(record))  # the same tip: a planted answer is read...
    assert stepindex.steps(store) == [("0" * 40, "V9", None)]
    record["data"]["rows"] = [["0" * 40, 9, None]]
    file.write_text(json.dumps(record))  # ...but never one of another shape
    assert stepindex.steps(store) == _walked(store)
    file.write_text("not json")
    assert stepindex.steps(store) == _walked(store)
