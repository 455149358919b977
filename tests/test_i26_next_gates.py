"""Issue 26: an agent that follows only `next` measures the whole gate set with the
parent's seeds, and after reverting a refuted version builds on the one before it."""

from __future__ import annotations

import subprocess

from tests.helpers import Repo, register
from tests.scripted import Plan

FILL = {"<BET>": "a bet", "<FALSIFIER>": "no gain", "<NEXT>": "go on"}


def follow(repo: Repo) -> dict[str, object]:
    """Run the command `next` proposes, as an agent would; return the proposal."""
    nxt = repo.ok("next", "--json").json()
    for rel in nxt["edit"]:  # the code of the bet, changed as next asks
        repo.write(rel, f"STEP = {nxt['step']!r}\n")
    command = str(nxt["command"])
    for word, text in FILL.items():
        command = command.replace(word, text)
    done = subprocess.run(
        ["sh", "-c", command], cwd=repo.path, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, f"{command}\n{done.stderr}{done.stdout}"
    return dict(nxt)


def test_next_measures_every_gate_with_the_parents_seeds_and_skips_a_reverted_parent(
    bare_repo: Repo,
) -> None:
    repo = bare_repo
    plan = Plan(repo, ("recent", "crisis"))
    repo.ok("hooks", "install")
    plan.means("V1", recent=10.0, crisis=10.0)
    register(repo, "V1")
    plan.run("V1", "recent")  # seeds 1,2,3,4
    # next measures the other configured gate with the same seeds.
    nxt = follow(repo)
    assert nxt["action"] == "measure-gate"
    assert str(nxt["command"]).endswith("--gate crisis --seeds 1,2,3,4")
    repo.ok("conclude", "V1", "--verdict", "confirmed", "--next", "go on")
    register(repo, "V2", extra=("--parent", "V1", "--noop-gates", "crisis"))
    status = repo.ok("status", "--json").json()
    assert {"id": "V2", "gates": ["recent", "crisis"]} in status["unmeasured"]
    assert "unmeasured: V2 has no results on recent, crisis" in repo.ok("status").out
    repo.write("src/model.py", "WIDTH = 2\n")
    repo.commit_all("feat(model): V2 — wider")
    # The targeted gate with the parent's seeds (not 1,2,3), then the no-op gate: paired.
    plan.means("V2", recent=10.0, crisis=10.0)
    assert str(follow(repo)["command"]).endswith("--gate recent --seeds 1,2,3,4")
    nxt = follow(repo)
    assert nxt["action"] == "measure-gate" and "--noop-gates" in str(nxt["reason"])
    assert str(nxt["command"]).endswith("--gate crisis --seeds 1,2,3,4")
    assert follow(repo)["action"] == "conclude"  # the statistics support 'refuted'
    gates = repo.ok("show", "V2", "--json").json()["evidence"]
    assert {g["gate"]: g["pairing"] for g in gates} == {"recent": "paired", "crisis": "paired"}
    # Refuted: next advises reverting its code; after that the default parent is V1.
    assert repo.ok("show", "V2", "--json").json()["verdict"] == "refuted"
    assert follow(repo)["action"] == "revert-or-build-on"
    registered = repo.ok(
        "register", "--bet", "b", "--gate", "recent", "--files", "src/model.py",
        "--falsifier", "f", "--noop-gates", "crisis",
    ).out  # fmt: skip
    assert "V2 skipped" in registered
    assert repo.ok("show", "V3", "--json").json()["registration"]["parent"] == "V1"
