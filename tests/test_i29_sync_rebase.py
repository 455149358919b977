"""Issue 29: ``sync`` of ledger-only commits on both sides adds no merge commit per round
when a rebase of the ledger commits is clean: five machines that each record one seed
and sync leave a linear history that verifies (it used to be one merge per round)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.helpers import Figure, Repo, git, ledger, register
from tests.test_tamper import hooked_commit


def test_five_seeds_synced_from_five_clones_add_no_merge_commit(
    repo: Repo, tmp_path: Path, figure: Figure
) -> None:
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    repo.git("remote", "add", "origin", str(remote))
    repo.ok("hooks", "install")
    assert register(repo, "V1").code == 0
    repo.write("src/model.py", "x = 1\n")
    assert hooked_commit(repo, "feat(model): V1 — the change", "src/model.py").returncode == 0
    repo.ok("sync")
    clones = []
    for seed in range(1, 6):  # every machine starts from the same published tip
        clone = tmp_path / f"machine-{seed}"
        git(tmp_path, "clone", "-q", str(remote), str(clone))
        clones.append((seed, clone))
    for seed, clone in clones:
        result = tmp_path / f"seed-{seed}.json"
        result.write_text(json.dumps({"score": 10.0 + seed / 10}))
        recorded = ledger(
            clone, "record", "V1", "--gate", "recent", "--seed", str(seed), str(result)
        )
        assert recorded.code == 0, recorded.err
        synced = ledger(clone, "sync")
        assert synced.code == 0, synced.err
    merges = int(git(remote, "rev-list", "--merges", "--count", "main").strip())
    figure(f"sync: five seeds from five clones -> {merges} merge commit(s) on the remote")
    assert merges == 0
    last = clones[-1][1]
    git(last, "pull", "-q", "--ff-only")
    shown = ledger(last, "show", "V1", "--json")
    assert shown.code == 0, shown.err
    assert sorted(
        p.name for p in (last / "training_log/results/V1/recent").glob("seed-*.json")
    ) == [f"seed-{s}.json" for s in range(1, 6)]
    verified = ledger(last, "verify")
    assert verified.code == 0, verified.out + verified.err
