"""`run` (PIDs, logs, failures, determinism) and the matrix of cells in worktrees."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers import Repo, ledger, register

ROOT = Path(__file__).resolve().parent.parent
CONFIG = """\
[ledger]
dir = "training_log"

[gates.recent]
metric = "score"
noise_floor = 0.5
command = ["{python}", "eval.py", "--seed", "{{seed}}", "--out", "{{out}}", "--noise", "0.6"]
[gates.recent.metrics]
score = "$.score"
loss = {{path = "$.loss", direction = "lower"}}

[gates.noisy]
metric = "score"
noise_floor = 0.5
command = ["{python}", "eval.py", "--seed", "{{seed}}", "--out", "{{out}}", "--unseeded"]
[gates.noisy.metrics]
score = "$.score"

[gates.broken]
metric = "score"
noise_floor = 0.5
command = ["{python}", "-c", "import sys; print('boom: out of memory'); sys.exit(3)", "{{out}}"]
[gates.broken.metrics]
score = "$.score"

[gates.slow]
metric = "score"
noise_floor = 0.5
command = ["{python}", "-c", "import time; time.sleep(60)", "{{out}}", "{{seed}}"]
[gates.slow.metrics]
score = "$.score"
"""


@pytest.fixture
def evalrepo(bare_repo: Repo) -> Repo:
    shutil.copy(ROOT / "templates/demo/eval.py", bare_repo.path / "eval.py")
    bare_repo.write("params.json", json.dumps({"lr": 0.1, "width": 32, "dropout": 0.3}))
    bare_repo.write("ledger.toml", CONFIG.format(python=sys.executable))
    bare_repo.commit_all("chore: evaluation")
    bare_repo.ok("init")
    return bare_repo


def test_run_records_each_seed_with_provenance(evalrepo: Repo) -> None:
    register(evalrepo, "V1", gate="recent")
    result = evalrepo.ok(
        "run", "V1", "--gate", "recent", "--seeds", "1,2,3,4", "--jobs", "2", "--json"
    )
    runs = result.json()["runs"]
    assert [r["failed"] for r in runs] == [False] * 4
    for seed in "1234":
        stored = json.loads(
            (evalrepo.path / f"training_log/results/V1/recent/seed-{seed}.json").read_text()
        )
        prov = stored["provenance"]
        assert prov["code_commit"] and len(prov["source_sha256"]) == 64
        assert prov["conditions"]["noise"] == "0.6"
        assert "eval.py" in prov["conditions"]["command"]
        assert prov["wall_time_s"] > 0
        assert set(stored["metrics"]) == {"score", "loss"}
    assert evalrepo.git("status", "--porcelain") == ""
    assert not list((evalrepo.path / ".git/ledger/runs").glob("*.json"))


def test_failing_run_is_recorded_as_failed_with_its_log_tail(evalrepo: Repo) -> None:
    register(evalrepo, "V1", gate="broken")
    result = evalrepo.run("run", "V1", "--gate", "broken", "--seeds", "1")
    assert result.code == 1
    assert "FAILED" in result.out and "exit code 3" in result.out
    stored = json.loads(
        (evalrepo.path / "training_log/results/V1/broken/seed-1-failed.json").read_text()
    )
    assert stored["status"] == "failed" and stored["exit_code"] == 3
    assert "boom: out of memory" in stored["log_tail"]
    assert stored["metrics"] == {}
    shown = evalrepo.ok("show", "V1", "--json").json()
    assert shown["evidence"][0]["n"] == 0  # a failed run never counts as a result
    assert evalrepo.ok("status", "--json").json()["runs"]["failed"]


def test_killing_the_ledger_mid_run_leaves_pids_that_doctor_reports(evalrepo: Repo) -> None:
    register(evalrepo, "V1", gate="slow")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "ledger",
            "run",
            "V1",
            "--gate",
            "slow",
            "--seeds",
            "1,2",
            "--jobs",
            "2",
        ],
        cwd=evalrepo.path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    runs = evalrepo.path / ".git/ledger/runs"
    for _ in range(300):
        if len(list(runs.glob("run-*.json"))) == 2:
            break
        time.sleep(0.05)
    records = [json.loads(p.read_text()) for p in runs.glob("run-*.json")]
    assert len(records) == 2
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    try:
        doctor = evalrepo.run("doctor", "--json")
        assert doctor.code == 1
        problems = " ".join(doctor.json()["problems"])
        for record in records:
            assert f"pid {record['pid']}" in problems
        assert "time.sleep(60)" in problems
        status = evalrepo.ok("status", "--json").json()
        assert len(status["runs"]["running"]) == 2
        stopped = evalrepo.run("doctor", "--fix", "--stop-runs")
        assert "stopped ledger run" in stopped.out
    finally:
        for record in records:
            with contextlib.suppress(ProcessLookupError):
                os.kill(record["pid"], signal.SIGKILL)


def test_replicates_print_determinism_pass_and_fail(evalrepo: Repo) -> None:
    register(evalrepo, "V1", gate="recent")
    passed = evalrepo.run("run", "V1", "--gate", "recent", "--seeds", "1", "--replicates", "2")
    assert passed.code == 0, passed.err
    assert "DETERMINISM: PASS" in passed.out
    failed = evalrepo.run("run", "V1", "--gate", "noisy", "--seeds", "1", "--replicates", "2")
    assert failed.code == 1
    assert "DETERMINISM: FAIL" in failed.out
    assert "score spread" in failed.out and "first divergent field $.evals[0]" in failed.out
    assert "(0x1." in failed.out  # floats also as IEEE-754 hex
    # Stored with the results, and shown by show.
    stored = {d["gate"]: d for d in evalrepo.ok("show", "V1", "--json").json()["determinism"]}
    assert stored["recent"]["pass"] is True and stored["noisy"]["pass"] is False
    assert stored["noisy"]["seeds"][0]["first_divergence"].startswith("$.evals[0]")
    assert "score" in stored["noisy"]["seeds"][0]["spread"]
    assert "DETERMINISM (noisy): FAIL" in evalrepo.ok("show", "V1").out
    report = evalrepo.ok("report", "--format", "md").out
    assert "### DETERMINISM" in report and "**V1** `noisy`: FAIL" in report


def test_fields_diff_names_the_first_divergent_field(tmp_path: Path) -> None:
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps({"x": {"y": [1.0, 2.5]}, "z": 1}))
    b.write_text(json.dumps({"x": {"y": [1.0, 2.75]}, "z": 1}))
    result = ledger(tmp_path, "fields-diff", str(a), str(b))
    assert result.code == 1
    assert "$.x.y[1]: 2.5 (0x1.4000000000000p+1) != 2.75" in result.out
    assert ledger(tmp_path, "fields-diff", str(a), str(a)).code == 0


def _establish_baseline(repo: Repo) -> None:
    register(repo, "V1", gate="recent")
    repo.ok("run", "V1", "--gate", "recent", "--seeds", "1,2,3,4")
    repo.ok("conclude", "V1", "--verdict", "confirmed", "--next", "matrix")


SPEC = """\
[cells.A]
slug = "carry"
bet = "Higher learning rate"
gate = "recent"
files = ["params.json"]
falsifier = "score not above V1"
[cells.B]
slug = "width"
bet = "Wider network"
gate = "recent"
files = ["params.json"]
falsifier = "score not above V1"
[cells.C]
slug = "dropout"
bet = "Less dropout"
gate = "recent"
files = ["params.json"]
falsifier = "score not above V1"
"""


def _work_in_cell(worktree: Path, cell: str, params: dict[str, float]) -> None:
    (worktree / "params.json").write_text(json.dumps(params))
    subprocess.run(["git", "add", "params.json"], cwd=worktree, check=True)
    subprocess.run(
        ["git", "commit", "-q", "-m", f"feat(params): V2.{cell} — tune"], cwd=worktree, check=True
    )
    done = ledger(worktree, "run", f"V2.{cell}", "--gate", "recent", "--seeds", "1,2,3,4")
    assert done.code == 0, done.err + done.out


def test_three_cell_matrix_from_registration_to_clean(evalrepo: Repo, tmp_path: Path) -> None:
    evalrepo.ok("hooks", "install")
    _establish_baseline(evalrepo)
    spec = tmp_path / "cells.toml"
    spec.write_text(SPEC)
    made = evalrepo.ok("matrix", "new", "V2", "--spec", str(spec), "--json").json()
    registration = made["commit"]
    assert evalrepo.trailers()["Ledger-Transition"] == "matrix-register"
    trees = {c["cell"]: Path(c["worktree"]) for c in made["cells"]}
    assert sorted(trees) == ["V2.A", "V2.B", "V2.C"]
    assert len(evalrepo.git("worktree", "list").splitlines()) == 4
    assert evalrepo.git("status", "--porcelain") == ""  # .ledger/ is excluded

    _work_in_cell(trees["V2.A"], "A", {"lr": 0.3, "width": 32, "dropout": 0.3})
    _work_in_cell(trees["V2.B"], "B", {"lr": 0.1, "width": 34, "dropout": 0.3})
    _work_in_cell(trees["V2.C"], "C", {"lr": 0.1, "width": 32, "dropout": 0.29})
    # The cells' code commits carry their cell id (prepare-commit-msg in a worktree).
    assert (
        "Ledger-Step: V2.A"
        in subprocess.run(
            ["git", "log", "-3", "--format=%B"], cwd=trees["V2.A"], capture_output=True, text=True
        ).stdout
    )
    # One registration commit before any cell commit.
    for branch in ("ledger/V2.A-carry", "ledger/V2.B-width", "ledger/V2.C-dropout"):
        first = evalrepo.git("rev-list", "--reverse", f"{registration}..{branch}").split()[0]
        assert evalrepo.git("merge-base", "--is-ancestor", registration, first, check=False) == ""

    status = evalrepo.ok("matrix", "status", "V2", "--json").json()
    cells = {c["cell"]: c for c in status["cells"]}
    assert "Holm" in status["rule"] and "2.5" in status["rule"]
    assert cells["V2.A"]["k"] >= 2.5 and cells["V2.A"]["adjusted_threshold"] > 0
    assert cells["V2.A"]["pass"] is True
    assert cells["V2.C"]["pass"] is False

    refused = evalrepo.run("matrix", "conclude", "V2", "--winner", "C")
    assert refused.code == 1 and "adjusted threshold" in refused.err
    evalrepo.ok("matrix", "conclude", "V2", "--winner", "A")
    assert json.loads((evalrepo.path / "params.json").read_text())["lr"] == 0.3
    merged = evalrepo.git("log", "--format=%s", "-3")
    assert "merge cell A" in merged and "cell B" not in merged
    for cell in "ABC":  # every cell's results stay on record
        assert (evalrepo.path / f"training_log/results/V2.{cell}/recent/seed-1.json").exists()
    again = evalrepo.run("matrix", "conclude", "V2", "--winner", "B")
    assert again.code == 1 and "already concluded" in again.err

    evalrepo.ok("matrix", "clean", "V2")
    assert len(evalrepo.git("worktree", "list").splitlines()) == 1
    assert not any(p.exists() for p in trees.values())
    archived = evalrepo.git("for-each-ref", "--format=%(refname)", "refs/ledger/archive/")
    assert len(archived.split()) == 3
