"""Issue 26, end to end through `git ledger` with hooks and a bare remote: the Goodhart
tripwire first, the best re-measured at its own code, an eval-noise flag reached by an
agent that follows only `next`, and `verify` and `git push` passing throughout."""

from __future__ import annotations

import json
import re
import shlex

from tests.helpers import Repo, register
from tests.scripted import Plan
from tests.test_i26_next_gates import follow

SECTIONS = (
    "Eval stability",
    "Variance estimate",
    "Subsystem audit",
    "Revert-and-branch option",
    "Untouched dimensions",
    "Observability-gap audit",
)


def _code(repo: Repo, vid: str) -> None:
    repo.write("src/model.py", f"STEP = {vid!r}\n")
    repo.commit_all(f"feat(model): {vid} — the bet")


def test_the_documents_loop_goodhart_remeasure_at_own_code_and_eval_noise(
    bare_repo: Repo,
) -> None:
    repo = bare_repo
    remote = repo.path.parent / "remote.git"
    repo.git("init", "-q", "--bare", str(remote))
    plan = Plan(repo, ("recent", "crisis"), "[triggers]\nnoop_tolerance = 1.0\n")
    repo.git("remote", "add", "origin", str(remote))
    repo.ok("hooks", "install")
    register(repo, "V1")
    plan.means("V1", recent=10.0, crisis=10.0)
    for _ in range(3):  # measure recent, then crisis (next), then conclude
        follow(repo)
    assert repo.ok("show", "V1", "--json").json()["verdict"] == "confirmed"
    v1_code = {
        json.loads(f.read_text())["provenance"]["code_commit"]
        for f in (repo.path / "training_log/results/V1").rglob("*.json")
    }
    # Three refutations on one window: the Goodhart tripwire fires first.
    for vid in ("V2", "V3", "V4"):
        register(repo, vid, extra=("--parent", "V1"))
        _code(repo, vid)
        plan.means(vid, recent=10.0, crisis=10.0)
        plan.run(vid, "recent")
        plan.run(vid, "crisis")
        repo.ok("conclude", vid, "--verdict", "refuted", "--next", "go on")
    fired = [f["rule"] for f in repo.run("triggers", "--json").json()]
    assert fired[0] == "goodhart-tripwire"
    # The reflection names the re-measurement of the best at its own code; it runs there.
    repo.ok("reflect", "V4")
    path = repo.path / "training_log/REFLECTION_V4.md"
    command = re.search(r"git ledger run V1 --gate recent --seeds \S+ --remeasure '[^']+'",
                        path.read_text())  # fmt: skip
    assert command is not None
    done = repo.ok(*shlex.split(command.group(0))[2:], "--json")
    recorded = json.loads((repo.path / done.json()["runs"][0]["recorded"]).read_text())
    assert recorded["provenance"]["code_commit"] in v1_code
    assert repo.head() not in v1_code
    text = path.read_text()
    for title in SECTIONS:
        text = text.replace(f"## {title}\n", f"## {title}\n\nWe checked {title.lower()}.\n")
    text = text.replace("## Target audit\n", "## Target audit\n\nTypical: keep as target\n")
    path.write_text(text)
    repo.ok("reflect", "V4", "--commit")
    repo.ok("verify")
    repo.git("push", "-q", "origin", "HEAD:main")
    # A no-op gate that moves beyond tolerance, with an agent following only next.
    register(repo, "V5", extra=("--parent", "V1", "--noop-gates", "crisis",
                                "--cites", "REFLECTION_V4"))  # fmt: skip
    plan.means("V5", recent=10.0, crisis=13.0)
    actions = [str(follow(repo)["action"]) for _ in range(4)]
    assert actions == ["commit-code", "measure", "measure-gate", "conclude"]
    noise = [f for f in repo.run("triggers", "--json").json() if f["rule"] == "eval-noise"]
    assert noise and noise[0]["evidence"]["gate"] == "crisis"
    assert repo.ok("next", "--json").json()["action"] == "reflect"
    repo.ok("verify")
    repo.git("push", "-q", "origin", "HEAD:main")
