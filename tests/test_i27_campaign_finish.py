"""Issue 27, campaign: ``finish``, ``deliver`` and ``next`` hold against a wrong move.

Each test drives the loop through ``git ledger`` (git's dispatch) with hooks
installed, makes one wrong move (a hand edit with ``--no-verify``, an unrecorded
code commit, a changed benchmark script, a promoted head built on a rejected
change) and checks that finish, deliver and next refuse, naming the rule.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.helpers import Repo, Run, Templates, fresh, git

TEMPLATE = Path(__file__).resolve().parent.parent / "templates/ledger-campaign.toml"
MEASURE = (
    "--measure",
    "accel_mem_gb=N/A: no accelerator",
    "--measure",
    "peak_cpu_gb=1.5",
    "--measure",
    "correctness=0",
)


def gl(repo: Repo, *args: str) -> Run:
    proc = subprocess.run(
        ["git", "ledger", *args], cwd=repo.path, capture_output=True, text=True, check=False
    )
    return Run(proc.returncode, proc.stdout, proc.stderr)


def ok(repo: Repo, *args: str) -> Run:
    done = gl(repo, *args)
    assert done.code == 0, f"git ledger {' '.join(args)} -> {done.code}\n{done.err}{done.out}"
    return done


def commit(repo: Repo, message: str, *extra: str) -> str:
    git(repo.path, "add", "-A")
    done = subprocess.run(
        ["git", "commit", "-q", "-m", message, *extra],
        cwd=repo.path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return repo.head()


def record(repo: Repo, sha: str, verdict: str, speed: str, *extra: str) -> Run:
    return gl(
        repo, "candidate", "record", "--commit", sha, "--verdict", verdict,
        "--measure", f"speed={speed}", *MEASURE, *extra,
    )  # fmt: skip


def code(repo: Repo, name: str) -> str:
    repo.write(f"src/{name}.py", f"{name} = 1\n")
    return commit(repo, f"perf(src): {name}")


def campaign_repo(repo: Repo, pyproject: bool = False) -> Repo:
    """A campaign ledger (in ledger.toml, or pyproject.toml's [tool.ledger] beside the
    project's own tables) with hooks, a base commit and the contract."""
    config = (
        TEMPLATE.read_text().replace("${dir}", "training_log")
        + 'scope = ["src/**"]\nbenchmark_script = "bench.py"\n'
        + 'required_records = ["NOTES.md"]\n'
    )
    if pyproject:
        config = config.replace("[ledger]", "[tool.ledger.ledger]")
        config = config.replace("[campaign]", "[tool.ledger.campaign]")
        config = '[project]\nname = "kernel"\nversion = "1.0"\n\n' + config
        (repo.path / "pyproject.toml").write_text(config + "\n[tool.ruff]\nline-length = 100\n")
    else:
        (repo.path / "ledger.toml").write_text(config)
    ok(repo, "init")
    ok(repo, "hooks", "install")
    repo.write("src/app.py", "speed = 1\n")
    repo.write("bench.py", "print(1)\n")
    commit(repo, "feat(src): the base")
    repo.write("training_log/contract.md", "# Contract\n\nSpeed of src/ on bench.py.\n")
    ok(repo, "contract")
    return repo


@pytest.fixture
def camp(bare_repo: Repo, templates: Templates) -> Repo:
    """:func:`campaign_repo`, made once per session and copied."""
    return templates.over("campaign-hooks", bare_repo, lambda p: campaign_repo(fresh(p)))


def _finished(repo: Repo, close: bool = True) -> dict[str, str]:
    """An honest loop up to a closed report: base, a promotion, a mistake, the notes."""
    base = git(repo.path, "log", "-1", "--format=%H", "--grep=the base").strip()
    assert record(repo, base, "base", "100").code == 0
    ok(repo, "arm")
    fast = code(repo, "fast")
    assert record(repo, fast, "promoted", "130", "--reason", "fused loop").code == 0
    ok(repo, "mistake", "add", "timed the warm-up", "--caught-by", "review",
       "--should-have-caught", "the contract")  # fmt: skip
    repo.write("training_log/NOTES.md", "# Notes\n\nWhat we learned.\n")
    commit(repo, "docs(campaign): notes")
    if close:
        ok(repo, "close", "--summary", "fast promoted")
    return {"base": base, "fast": fast}


def _rules(done: Run) -> list[str]:
    return [str(i["rule"]) for i in done.json()["outstanding"]]


def test_an_honest_campaign_delivers_the_mistakes_log_and_required_records(camp: Repo) -> None:
    _finished(camp)
    ok(camp, "finish")
    ok(camp, "deliver", "--branch", "campaign/out")
    files = git(camp.path, "ls-tree", "-r", "--name-only", "campaign/out").split()
    assert "training_log/mistakes.md" in files, files
    assert "training_log/NOTES.md" in files, files
    assert "src/fast.py" in files
    mistakes = git(camp.path, "show", "campaign/out:training_log/mistakes.md")
    assert "timed the warm-up" in mistakes


def test_a_rejection_flipped_to_promoted_by_hand_is_never_finished(camp: Repo) -> None:
    seen = _finished(camp)
    slow = code(camp, "slow")
    assert record(camp, slow, "rejected", "80", "--reason", "slower").code == 0
    path = next((camp.path / "training_log/candidates").glob(f"{slow[:12]}-*.json"))
    entry = json.loads(path.read_text())
    entry["verdict"] = "promoted"
    path.write_text(json.dumps(entry, indent=2, sort_keys=True) + "\n")
    commit(camp, "docs(campaign): fix a verdict", "--no-verify")
    done = gl(camp, "finish", "--json")
    assert done.code == 1
    assert "history" in _rules(done), done.out
    deliver = gl(camp, "deliver", "--branch", "campaign/out")
    assert deliver.code == 1 and "[history]" in deliver.err, deliver.err
    nxt = ok(camp, "next", "--json").json()
    assert nxt["action"] != "deliver" and "verify" in nxt["reason"], nxt
    assert seen["fast"]


def test_an_unrecorded_code_commit_keeps_finish_open_and_next_records_it(camp: Repo) -> None:
    _finished(camp)
    sneaky = code(camp, "sneaky")
    done = gl(camp, "finish", "--json")
    assert done.code == 1 and _rules(done) == ["unrecorded-commit"], done.out
    assert sneaky[:10] in done.json()["outstanding"][0]["message"]
    nxt = ok(camp, "next", "--json").json()
    assert nxt["action"] == "candidate" and f"--commit {sneaky[:12]}" in nxt["command"], nxt
    assert record(camp, sneaky, "rejected", "90", "--reason", "no gain").code == 0
    ok(camp, "close", "--summary", "fast promoted")
    ok(camp, "finish")


def test_a_revert_of_a_rejected_candidate_needs_no_record(camp: Repo) -> None:
    _finished(camp)
    bad = code(camp, "bad")
    assert record(camp, bad, "rejected", "90", "--reason", "slower").code == 0
    git(camp.path, "revert", "--no-edit", bad)
    ok(camp, "close", "--summary", "fast promoted")
    ok(camp, "finish")


def test_a_benchmark_change_without_adjust_is_refused_everywhere(camp: Repo) -> None:
    _finished(camp)
    camp.write("bench.py", "print(2)  # a kinder timer\n")
    commit(camp, "perf(bench): kinder timer")
    done = gl(camp, "finish", "--json")
    assert done.code == 1 and "benchmark-changed" in _rules(done), done.out
    nxt = ok(camp, "next", "--json").json()
    assert nxt["action"] == "benchmark-adjust" and "[benchmark-changed]" in nxt["reason"], nxt
    faster = code(camp, "faster")
    refused = record(camp, faster, "promoted", "150", "--reason", "x")
    assert refused.code == 1 and "[benchmark-changed]" in refused.err, refused.err
    ok(camp, "benchmark", "adjust", "--reason", "kinder timer")
    assert ok(camp, "next", "--json").json()["action"] == "record-base"


def test_a_head_built_on_a_rejected_change_is_never_kept(camp: Repo) -> None:
    seen = _finished(camp, close=False)
    bad = code(camp, "bad")
    assert record(camp, bad, "rejected", "90", "--reason", "slower").code == 0
    # next reverts the rejected change before the next candidate is committed ...
    nxt = ok(camp, "next", "--json").json()
    assert nxt["action"] == "revert-rejected" and bad[:10] in nxt["reason"], nxt
    assert nxt["command"] == f"git revert --no-edit {bad}", nxt
    # ... and a candidate built on top of it anyway (fast + bad + faster is not what the
    # delivery would hold: fast + faster) can only be rejected.
    faster = code(camp, "faster")
    nxt = ok(camp, "next", "--json").json()
    assert f"--commit {faster[:12]} --verdict rejected " in nxt["command"], nxt
    assert "only 'rejected'" in nxt["reason"], nxt
    before = git(camp.path, "rev-parse", "HEAD")
    for verdict in ("promoted", "held"):
        refused = record(camp, faster, verdict, "160", "--reason", "tiling")
        assert refused.code == 1 and "[measured-with]" in refused.err, refused.err
        assert bad[:10] in refused.err
    assert git(camp.path, "rev-parse", "HEAD") == before
    assert record(camp, faster, "rejected", "160", "--reason", "built on bad").code == 0
    # Reverted, both are left out visibly; a change on top is measured without them.
    git(camp.path, "revert", "--no-edit", faster, bad)
    fastest = code(camp, "fastest")
    assert record(camp, fastest, "promoted", "170", "--reason", "tiling").code == 0
    ok(camp, "close", "--summary", "fastest promoted")
    ok(camp, "finish")
    ok(camp, "deliver", "--branch", "campaign/out")
    files = git(camp.path, "ls-tree", "-r", "--name-only", "campaign/out").split()
    assert "src/fastest.py" in files and "src/bad.py" not in files, files
    assert seen["fast"]


def test_an_unrecorded_commit_under_a_candidate_is_recorded_first(camp: Repo) -> None:
    _finished(camp)
    first = code(camp, "first")  # the loop died before recording it
    second = code(camp, "second")
    nxt = ok(camp, "next", "--json").json()
    assert f"--commit {first[:12]}" in nxt["command"], nxt  # the oldest first
    refused = record(camp, second, "promoted", "150", "--reason", "x")
    assert refused.code == 1 and "[measured-with]" in refused.err and first[:10] in refused.err
    assert record(camp, first, "promoted", "140", "--reason", "unrolled").code == 0
    assert record(camp, second, "promoted", "150", "--reason", "tiled").code == 0


def test_deliver_compares_the_delivered_tree_with_the_head(camp: Repo) -> None:
    """A promoted commit reverted under a later head: the rule reads commits, deliver
    compares the trees it built and refuses before the branch exists."""
    seen = _finished(camp)
    git(camp.path, "revert", "--no-edit", seen["fast"])
    faster = code(camp, "faster")
    assert record(camp, faster, "promoted", "160", "--reason", "tiling").code == 0
    ok(camp, "close", "--summary", "faster promoted")
    ok(camp, "finish")
    deliver = gl(camp, "deliver", "--branch", "campaign/out")
    assert deliver.code == 1 and "[delivered-tree]" in deliver.err, deliver.err
    assert "src/fast.py" in deliver.err
    assert git(camp.path, "branch", "--list", "campaign/out").strip() == ""
