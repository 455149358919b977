"""Issue 26: a conclusion names, in its text, each non-targeted gate that regressed
beyond noise (it was visible only as a row of the gate table)."""

from __future__ import annotations

from tests.helpers import Repo, register
from tests.scripted import Plan


def test_a_conclusion_names_each_non_targeted_gate_that_regressed(bare_repo: Repo) -> None:
    repo = bare_repo
    plan = Plan(repo, ("recent", "crisis", "calm"))
    repo.ok("hooks", "install")
    plan.means("V1", recent=10.0, crisis=10.0, calm=10.0)
    register(repo, "V1")
    for gate in ("recent", "crisis", "calm"):
        plan.run("V1", gate)
    repo.ok("conclude", "V1", "--verdict", "confirmed", "--next", "go on")
    register(repo, "V2", extra=("--parent", "V1"))
    repo.write("src/model.py", "WIDTH = 2\n")
    repo.commit_all("feat(model): V2 — wider")
    # Better on the target, worse beyond noise on crisis, unchanged on calm.
    plan.means("V2", recent=15.0, crisis=5.0, calm=10.0)
    for gate in ("recent", "crisis", "calm"):
        plan.run("V2", gate)
    done = repo.ok("conclude", "V2", "--verdict", "confirmed", "--next", "go on")
    said = "Regressed beyond noise on a non-targeted gate: 'crisis' (score) Δ=-4."
    assert said in done.out
    evidence = repo.ok("show", "V2", "--json").json()["conclusion"]["evidence"]
    assert said in evidence and "vs V1" in evidence
    assert "'calm'" not in evidence.split("Regressed", 1)[1]  # inside noise: not named
    assert said in (repo.path / "training_log" / "V2.md").read_text()
    assert said in repo.git("log", "-1", "--format=%B")  # the commit says it too


def test_no_regression_sentence_when_the_other_gates_hold(bare_repo: Repo) -> None:
    repo = bare_repo
    plan = Plan(repo, ("recent", "crisis"))
    plan.means("V1", recent=10.0, crisis=10.0)
    register(repo, "V1")
    plan.run("V1", "recent")
    plan.run("V1", "crisis")
    repo.ok("conclude", "V1", "--verdict", "confirmed", "--next", "go on")
    evidence = repo.ok("show", "V1", "--json").json()["conclusion"]["evidence"]
    assert "Regressed" not in evidence
