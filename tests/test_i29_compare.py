"""Issue 29: ``git ledger compare``, versions side by side (parameters against every
metric of a gate), read from ``[params] files`` at each version's code commit."""

from __future__ import annotations

import json
from pathlib import Path

from tests.helpers import Repo, register

CONFIG = """\
[gates.recent]
metric = "score"
noise_floor = 0.5
[gates.recent.metrics]
score = "$.score"
acc = "$.acc"

[params]
files = ["params.yaml", "conf/*.json"]
"""


def _loop(repo: Repo, lrs: list[float], *, results_params: bool = False) -> None:
    """One version per learning rate: register, commit its params.yaml, three seeds, conclude."""
    for i, lr in enumerate(lrs, start=1):
        vid = f"V{i}"
        assert register(repo, vid, bet=f"learning rate {lr}").code == 0
        repo.write("params.yaml", f"model:\n  lr: {lr}\n  depth: 3\nname: forest\n")
        repo.write("conf/train.json", json.dumps({"batch": 32}))
        repo.write("src/model.py", f"VERSION = {i}\n")
        repo.commit_all(f"feat: learning rate {lr}")
        for seed in (1, 2, 3):
            data: dict[str, object] = {
                "score": 10.0 * i + seed,
                "acc": 0.5 + 0.01 * i + 0.001 * seed,
            }
            if results_params:
                data["params"] = {"optimizer": "adam" if i == 2 else "sgd"}
            src = repo.path.parent / f"{vid}-{seed}.json"
            src.write_text(json.dumps(data))
            repo.ok("record", vid, "--gate", "recent", "--seed", str(seed), str(src))
        repo.ok("conclude", vid, "--verdict", "confirmed", "--next", "go on")


def _ledger(bare_repo: Repo) -> Repo:
    bare_repo.write("ledger.toml", CONFIG)
    bare_repo.ok("init")
    bare_repo.ok("hooks", "install")
    return bare_repo


def test_compare_json_shows_the_one_param_that_differs_against_every_metric(
    bare_repo: Repo,
) -> None:
    repo = _ledger(bare_repo)
    _loop(repo, [0.1, 0.2, 0.3])
    data = repo.ok("compare", "--json").json()
    assert data["gate"] == "recent"
    # depth, name and conf/train.json's batch are the same everywhere: not shown.
    assert data["params"] == ["model.lr"]
    assert [r["id"] for r in data["rows"]] == ["V1", "V2", "V3"]
    assert [r["params"] for r in data["rows"]] == [
        {"model.lr": 0.1},
        {"model.lr": 0.2},
        {"model.lr": 0.3},
    ]
    assert data["metrics"] == ["score", "acc"]  # the primary metric first, then every other
    for i, row in enumerate(data["rows"], start=1):
        assert set(row["metrics"]) == {"score", "acc"}
        score, acc = row["metrics"]["score"], row["metrics"]["acc"]
        assert score["n"] == 3 and acc["n"] == 3
        assert abs(score["mean"] - (10.0 * i + 2)) < 1e-9
        assert abs(score["sd"] - 1.0) < 1e-9
        assert abs(acc["sd"] - 0.001) < 1e-9
        lo, hi = score["ci95"]
        assert lo < score["mean"] < hi
        assert row["status"] == "confirmed"
    second = data["rows"][1]["metrics"]["score"]
    assert abs(second["delta"] - 10.0) < 1e-9
    assert second["test"] == "paired over 3 shared seeds"
    assert data["rows"][0]["metrics"]["score"]["delta"] is None  # V1 has no parent


def test_compare_md_is_a_github_table(bare_repo: Repo) -> None:
    repo = _ledger(bare_repo)
    _loop(repo, [0.1, 0.2, 0.3])
    out = repo.ok("compare", "--md").out
    lines = [ln for ln in out.splitlines() if ln.startswith("|")]
    header = [c.strip() for c in lines[0].strip("|").split("|")]
    assert header[:3] == ["version", "status", "model.lr"]
    assert "score mean ± sd (n)" in header and "acc Δ vs parent" in header
    assert set(lines[1].replace("|", "")) == {"-"} and lines[1].count("|") == len(header) + 1
    rows = [[c.strip() for c in ln.strip("|").split("|")] for ln in lines[2:]]
    assert [(r[0], r[2]) for r in rows] == [("V1", "0.1"), ("V2", "0.2"), ("V3", "0.3")]
    assert all(len(r) == len(header) for r in rows)
    assert "(n=3)" in rows[0][3] and "±" in rows[0][3]
    assert rows[1][header.index("score Δ vs parent")] == "+10.00 (paired)"


def test_compare_takes_params_from_results_and_filters_and_sorts(bare_repo: Repo) -> None:
    repo = _ledger(bare_repo)
    _loop(repo, [0.1, 0.1, 0.1], results_params=True)
    data = repo.ok("compare", "--json").json()
    # params.yaml is the same at every code commit; the results' own params differ.
    assert data["params"] == ["optimizer"]
    assert [r["params"]["optimizer"] for r in data["rows"]] == ["sgd", "adam", "sgd"]
    best_first = repo.ok("compare", "--json", "--sort", "score").json()
    assert [r["id"] for r in best_first["rows"]] == ["V3", "V2", "V1"]
    assert register(repo, "V4", bet="a bet set up wrong").code == 0
    repo.ok("void", "V4", "--reason", "the evaluation set leaked")
    voided = repo.ok("compare", "--json", "--verdict", "void").json()
    assert [(r["id"], r["status"]) for r in voided["rows"]] == [("V4", "void")]
    confirmed = repo.ok("compare", "--json", "--verdict", "confirmed").json()
    assert [r["id"] for r in confirmed["rows"]] == ["V1", "V2", "V3"]
    bad = repo.run("compare", "--sort", "nonesuch")
    assert bad.code == 2 and "no such column" in bad.err and "Traceback" not in bad.err


def test_compare_branch_shows_only_the_branch_versions(bare_repo: Repo) -> None:
    repo = _ledger(bare_repo)
    repo.git("branch", "-M", "main")
    _loop(repo, [0.1])
    repo.git("switch", "-q", "-c", "feature")
    assert register(repo, "V2", bet="learning rate 0.5").code == 0
    data = repo.ok("compare", "--json", "--branch", "feature").json()
    assert [r["id"] for r in data["rows"]] == ["V2"]
    assert data["rows"][0]["status"] == "open"


def test_params_config_is_validated(bare_repo: Repo) -> None:
    bare_repo.write("ledger.toml", CONFIG.replace('"conf/*.json"', '"../outside.yaml"'))
    bad = bare_repo.run("init")
    assert bad.code == 2, bad.err
    assert "params.files" in bad.err and "Traceback" not in bad.err
    assert not (Path(bare_repo.path) / "training_log").exists()
