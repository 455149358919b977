"""Issue 26's Done-when, end to end: a loop shaped like the research document's history,
replayed through `git ledger` with hooks installed and a bare remote.

Three refutations on one window fire the Goodhart tripwire first; the reflection
re-measures the best version at its own code (the recorded code commit is that
version's, not HEAD) and proposes observability deltas, and `verify` and `git push`
pass; a pre-registered no-op gate that moves beyond `noop_tolerance` fires eval-noise
with an agent following only `next` (whose brief is the last conclusion's next steps);
a matrix of three cells all inside noise counts as three bets; the phase is declared
on its three conditions and resumed only on its criterion.
"""

from __future__ import annotations

import json
import re
import shlex

import yaml

from tests.helpers import Repo, ledger, register
from tests.scripted import Plan
from tests.test_i26_next_gates import follow

SECTIONS = (
    "Eval stability",
    "Variance estimate",
    "Subsystem audit",
    "Revert-and-branch option",
    "Untouched dimensions",
)
SPEC = "".join(
    f'[cells.{c}]\nslug = "s{c.lower()}"\nbet = "Cell {c}"\ngate = "recent"\n'
    f'files = ["src/cell{c}.py"]\nfalsifier = "no gain"\nsubsystem = "features"\n\n'
    for c in "ABC"
)


def _reflect(repo: Repo, after: str, deltas: str = "", binding: str | None = None) -> None:
    path = repo.path / f"training_log/REFLECTION_{after}.md"
    _, front, body = path.read_text().split("---\n", 2)
    data = yaml.safe_load(front)
    if binding:
        data["binding_constraint"] = binding
    for title in SECTIONS:
        body = body.replace(f"## {title}\n", f"## {title}\n\nAfter {after} we read {title}.\n")
    body = body.replace(
        "## Observability-gap audit\n",
        f"## Observability-gap audit\n\nWhat {after} could not see.\n{deltas}",
    )
    body = body.replace("## Target audit\n", "## Target audit\n\nTypical: keep as target\n")
    path.write_text(f"---\n{yaml.safe_dump(data, sort_keys=False)}---\n{body}")
    repo.ok("reflect", after, "--commit")


def _shared(repo: Repo) -> None:
    """What a day's work must pass: history verifies, and the pre-push hook lets it out."""
    repo.ok("verify")
    repo.git("push", "-q", "origin", "HEAD:main")


def test_the_documents_history_through_git_ledger_with_hooks_and_a_remote(
    bare_repo: Repo,
) -> None:
    repo = bare_repo
    remote = repo.path.parent / "remote.git"
    repo.git("init", "-q", "--bare", str(remote))
    plan = Plan(repo, ("recent", "crisis"), "[triggers]\nnoop_tolerance = 1.0\n")
    repo.git("remote", "add", "origin", str(remote))
    repo.ok("hooks", "install")

    # V1: the first bet, measured on the whole gate set by following next.
    register(repo, "V1")
    plan.means("V1", recent=10.0, crisis=10.0)
    assert [follow(repo)["action"] for _ in range(3)] == ["measure", "measure-gate", "conclude"]
    v1_code = {
        json.loads(f.read_text())["provenance"]["code_commit"]
        for f in (repo.path / "training_log/results/V1").rglob("*.json")
    }

    # V2-V4: three refutations on one window; the Goodhart tripwire fires first.
    for vid in ("V2", "V3", "V4"):
        register(repo, vid, extra=("--parent", "V1"))
        repo.write("src/model.py", f"STEP = {vid!r}\n")
        repo.commit_all(f"feat(model): {vid} — the bet")
        plan.means(vid, recent=10.0, crisis=10.0)
        plan.run(vid, "recent")
        plan.run(vid, "crisis")
        repo.ok("conclude", vid, "--verdict", "refuted", "--next", "instrument the window")
    fired = [f["rule"] for f in repo.run("triggers", "--json").json()]
    assert fired[0] == "goodhart-tripwire"
    assert repo.ok("next", "--json").json()["action"] == "reflect"

    # The reflection re-measures the best at its own code, then lifts the block.
    repo.ok("reflect", "V4")
    skeleton = (repo.path / "training_log/REFLECTION_V4.md").read_text()
    command = re.search(r"git ledger run V1 --gate recent --seeds \S+ --remeasure '[^']+'",
                        skeleton)  # fmt: skip
    assert command is not None
    done = repo.ok(*shlex.split(command.group(0))[2:], "--json")
    recorded = json.loads((repo.path / done.json()["runs"][0]["recorded"]).read_text())
    assert recorded["provenance"]["code_commit"] in v1_code
    assert repo.head() not in v1_code
    _reflect(
        repo,
        "V4",
        "- what: per-window fills in the results; where: scripts/eval.py; effort: S; ship-now\n"
        "- what: regime labels per window; where: src/regime.py; effort: M; queue\n",
    )
    _shared(repo)
    assert "OBS-V4-2 [M] regime labels per window" in repo.ok("status").out

    # V5: a no-op gate that moves beyond tolerance, driven only by next.
    assert repo.ok("next", "--json").json()["brief"] == "instrument the window"
    shipped = register(repo, "V5", extra=("--parent", "V1", "--noop-gates", "crisis",
                                           "--cites", "REFLECTION_V4"))  # fmt: skip
    assert shipped.code == 0 and "OBS-V4-1" in shipped.out
    plan.means("V5", recent=10.0, crisis=7.0)
    actions = [str(follow(repo)["action"]) for _ in range(4)]
    assert actions == ["commit-code", "measure", "measure-gate", "conclude"]
    noise = [f for f in repo.run("triggers", "--json").json() if f["rule"] == "eval-noise"]
    assert noise and noise[0]["evidence"]["gate"] == "crisis"
    evidence = repo.ok("show", "V5", "--json").json()["conclusion"]["evidence"]
    assert "Regressed beyond noise on a non-targeted gate: 'crisis'" in evidence
    reflect = follow(repo)
    assert reflect["action"] == "reflect"
    _reflect(repo, "V5")
    _shared(repo)

    # V6: a matrix of three cells, all inside noise, counts as three bets.
    spec = repo.path.parent / "cells.toml"
    spec.write_text(SPEC)
    repo.ok("matrix", "new", "V6", "--spec", str(spec), "--cites", "REFLECTION_V5")
    for cell in "ABC":
        plan.means(f"V6.{cell}", recent=10.0, crisis=10.0)
        tree = next((repo.path / ".ledger/worktrees").glob(f"v6-{cell.lower()}-*"))
        (tree / f"src/cell{cell}.py").write_text("UNUSED = 1\n")
        Repo(tree).commit_all(f"feat(features): V6.{cell} — a cell")
        ran = ledger(tree, "run", f"V6.{cell}", "--gate", "recent", "--seeds", "1,2,3,4")
        assert ran.code == 0, ran.err
    repo.ok("matrix", "conclude", "V6", "--none")
    assert repo.ok("show", "V6.B", "--json").json()["registration"]["subsystem"] == "features"
    fired = repo.run("triggers", "--json")
    assert fired.code == 1
    cells = {"V6.A", "V6.B", "V6.C"}
    counted = [f for f in fired.json() if cells <= set(f["evidence"].get("versions", []))]
    assert counted, fired.out  # each cell a bet of its own, as if run one after another
    after = str(follow(repo)["step"]).removeprefix("REFLECTION_")
    _reflect(repo, after, binding="instrument")
    _shared(repo)

    # The phase: declared on its three conditions, resumed only on its criterion.
    repo.ok("phase", "declare", "--reason", "the window is the limit",
            "--resume-criterion", "independent windows >= 10")  # fmt: skip
    status = (repo.path / "training_log/CAMPAIGN_STATUS.md").read_text()
    conditions = yaml.safe_load(status.split("---\n", 2)[1])["conditions"]
    assert len(conditions) == 3 and all(v.startswith("held: ") for v in conditions.values())
    blocked = register(repo, "V7")
    assert blocked.code == 1
    wrong = repo.run("phase", "resume", "--criterion", "a hunch", "--evidence", "it felt right")
    assert wrong.code == 1 and "independent windows >= 10" in wrong.err
    repo.ok("phase", "resume", "--criterion", "1", "--evidence", "independent windows now 12")
    assert repo.ok("status", "--json").json()["phase"] == "active"
    _shared(repo)
