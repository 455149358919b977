"""Issue 26: a re-measurement runs at the version's own code, never at HEAD."""

from __future__ import annotations

import json
import sys

from tests.helpers import Repo, register

# The gate's evaluation lives in the repository: what it measures is the code checked out.
EVAL = """\
import json, sys
seed, out = sys.argv[1], sys.argv[2]
width = int(open("src/model.py").read().split("=")[1])
json.dump({"score": 10.0 * width + int(seed) * 0.01}, open(out, "w"))
"""


def _setup(repo: Repo) -> None:
    command = json.dumps([sys.executable, "eval.py", "{seed}", "{out}"])
    repo.write(
        "ledger.toml",
        '[ledger]\ndir = "training_log"\n\n[gates.recent]\nmetric = "score"\n'
        f'noise_floor = 0.5\ncommand = {command}\n[gates.recent.metrics]\nscore = "$.score"\n',
    )
    repo.write("eval.py", EVAL)
    repo.write("src/model.py", "WIDTH = 1\n")
    repo.commit_all("chore: evaluation")
    repo.ok("init")
    repo.ok("hooks", "install")


def test_remeasure_runs_at_the_versions_own_code_and_verify_and_push_pass(
    bare_repo: Repo,
) -> None:
    repo = bare_repo
    remote = repo.path.parent / "remote.git"
    repo.git("init", "-q", "--bare", str(remote))
    _setup(repo)
    repo.git("remote", "add", "origin", str(remote))
    register(repo, "V1")
    repo.ok("run", "V1", "--gate", "recent", "--seeds", "1,2,3,42")
    repo.ok("conclude", "V1", "--verdict", "confirmed", "--next", "go on")
    v1_code = json.loads((repo.path / "training_log/results/V1/recent/seed-42.json").read_text())[
        "provenance"
    ]["code_commit"]
    # V2 changes the code: HEAD now measures 20, V1's own code 10.
    register(repo, "V2", extra=("--parent", "V1"))
    repo.write("src/model.py", "WIDTH = 2\n")
    repo.commit_all("feat(model): V2 wider")
    repo.ok("run", "V2", "--gate", "recent", "--seeds", "1,2,3,42")
    repo.ok("conclude", "V2", "--verdict", "confirmed", "--next", "go on")
    head = repo.head()
    repo.git("status")
    before = (repo.path / "src/model.py").read_text()
    out = repo.ok(
        "run", "V1", "--gate", "recent", "--seeds", "42", "--remeasure", "eval noise", "--json"
    ).json()
    recorded = out["runs"][0]["recorded"]
    data = json.loads((repo.path / recorded).read_text())
    # Measured at V1's code (width 1), not at HEAD's (width 2); its provenance says so.
    assert data["metrics"]["score"] == 10.42
    assert data["provenance"]["code_commit"] == v1_code != head
    assert data["provenance"]["remeasure"] == "eval noise"
    # The user's work tree was never touched, and no worktree is left behind.
    assert (repo.path / "src/model.py").read_text() == before
    assert len(repo.git("worktree", "list").splitlines()) == 1
    repo.ok("verify")
    repo.git("push", "-q", "origin", "HEAD:main")
    # The reflection skeleton names the one command that does this for the best version.
    repo.ok("reflect", "V2")
    text = (repo.path / "training_log/REFLECTION_V2.md").read_text()
    assert "git ledger run V2 --gate recent --seeds 42 --remeasure" in text
