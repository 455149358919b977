"""The campaign and batches presets, through the CLI on real repositories."""

from __future__ import annotations

import csv
import io
import json
import signal
import subprocess
import sys

import pytest

from tests.helpers import Repo, Templates, fresh, git

MEASURES = (
    "--speed",
    "100",
    "--accel-mem-gb",
    "N/A: no accelerator here",
    "--peak-cpu-gb",
    "1.5",
    "--correctness",
    "0.0001",
)


def new_camp(repo: Repo) -> Repo:
    """A campaign ledger with its contract committed."""
    repo.ok("init", "--preset", "campaign")
    repo.write(
        "training_log/contract.md", "# Contract\n\nWe measure speed. Only src/ may change.\n"
    )
    repo.ok("contract")
    return repo


@pytest.fixture
def camp(bare_repo: Repo, templates: Templates) -> Repo:
    """:func:`new_camp`, made once per session and copied."""
    return templates.over("campaign-contract", bare_repo, lambda p: new_camp(fresh(p)))


def _code(repo: Repo, name: str) -> str:
    repo.write(f"src/{name}.py", f"# {name}\n")
    return repo.commit_all(f"perf(src): {name}", "--no-verify")


def _record(
    repo: Repo, sha: str, verdict: str, speed: str = "100", *extra: str
) -> subprocess.CompletedProcess[str]:
    args = [
        "candidate",
        "record",
        "--commit",
        sha,
        "--verdict",
        verdict,
        "--speed",
        speed,
        "--accel-mem-gb",
        "N/A: no accelerator here",
        "--peak-cpu-gb",
        "1.5",
        "--correctness",
        "0.0001",
        *extra,
    ]
    r = repo.run(*args)
    return subprocess.CompletedProcess(args, r.code, r.out, r.err)


def _views_agree(repo: Repo) -> None:
    entries = sorted(
        (json.loads(p.read_text()) for p in (repo.path / "training_log/candidates").glob("*.json")),
        key=lambda e: e["seq"],
    )
    jsonl = [
        json.loads(line)
        for line in (repo.path / "training_log/records/candidates.jsonl").read_text().splitlines()
    ]
    rows = [
        r
        for r in csv.DictReader(io.StringIO((repo.path / "training_log/benchmark.csv").read_text()))
        if r["verdict"] != "adjustment"
    ]
    jsonl = [j for j in jsonl if j["kind"] == "candidate"]
    assert [e["commit"] for e in entries] == [j["commit"] for j in jsonl]
    assert [e["commit"][:12] for e in entries] == [r["commit"] for r in rows]
    assert (
        [e["verdict"] for e in entries]
        == [r["verdict"] for r in rows]
        == [j["verdict"] for j in jsonl]
    )


def test_candidates_refuse_missing_reason_and_empty_measurement(camp: Repo) -> None:
    base = _code(camp, "base")
    no_reason = camp.run(
        "candidate", "record", "--commit", base, "--verdict", "rejected", *MEASURES
    )
    assert no_reason.code == 2 and "needs --reason" in no_reason.err
    empty = camp.run(
        "candidate",
        "record",
        "--commit",
        base,
        "--verdict",
        "base",
        "--speed",
        "",
        "--accel-mem-gb",
        "1",
        "--peak-cpu-gb",
        "1",
        "--correctness",
        "0",
    )
    assert empty.code == 2 and "'speed' is missing" in empty.err
    bare_na = camp.run(
        "candidate",
        "record",
        "--commit",
        base,
        "--verdict",
        "base",
        "--speed",
        "N/A:",
        "--accel-mem-gb",
        "1",
        "--peak-cpu-gb",
        "1",
        "--correctness",
        "0",
    )
    assert bare_na.code == 2 and "without a reason" in bare_na.err
    assert _record(camp, base, "base").returncode == 0
    second = _record(camp, _code(camp, "other"), "base")
    assert second.returncode == 2 and "already recorded" in second.stderr


def test_finish_lists_outstanding_items_until_resolved(camp: Repo) -> None:
    early = camp.run("arm")
    assert early.code == 1 and "no base" in early.err
    out = camp.run("finish", "--json")
    assert out.code == 1
    rules = sorted(i["rule"] for i in out.json()["outstanding"])
    assert rules == ["base", "report"]
    base = _code(camp, "base")
    assert _record(camp, base, "base").returncode == 0
    camp.ok("arm")
    fast = _code(camp, "fast")
    slow_promo = _record(camp, fast, "promoted", "50", "--reason", "x")
    assert slow_promo.returncode == 1 and "promotion-evidence" in slow_promo.stderr
    no_reason = _record(camp, fast, "promoted", "130")
    assert no_reason.returncode == 2 and "--reason" in no_reason.stderr
    assert _record(camp, fast, "promoted", "130", "--reason", "fused kernel").returncode == 0
    bad = _code(camp, "bad")
    assert _record(camp, bad, "rejected", "90", "--reason", "slower").returncode == 0
    _views_agree(camp)
    out = camp.run("finish", "--json")
    assert [i["rule"] for i in out.json()["outstanding"]] == ["report"]
    camp.write("training_log/latest-report.md", "# Report\n\nPromoted fast.\n\nstatus: closed\n")
    camp.commit_all("docs(campaign): report", "--no-verify")
    done = camp.run("finish")
    assert done.code == 0, done.out
    owner = json.loads((camp.path / "training_log/owner.json").read_text())
    assert owner["armed"] is False

    camp.ok("benchmark", "adjust", "--reason", "warm-up excluded from timing")
    stale = camp.run("finish", "--json")
    assert stale.code == 1
    assert sorted(i["rule"] for i in stale.json()["outstanding"]) == [
        "base",
        "report-adjustments",
        "stale-numbers",
    ]
    assert _record(camp, base, "base").returncode == 0
    assert camp.run("finish").code == 1
    assert _record(camp, fast, "held", "131", "--reason", "re-measured").returncode == 0
    assert [i["rule"] for i in camp.run("finish", "--json").json()["outstanding"]] == [
        "report-adjustments"
    ]
    camp.ok("close", "--summary", "fast promoted, re-measured after the adjustment")
    assert camp.run("finish").code == 0
    rows = list(csv.DictReader(io.StringIO((camp.path / "training_log/benchmark.csv").read_text())))
    assert [r["invalidated"] for r in rows] == ["true", "true", "true", "false", "false", "false"]
    assert [r["verdict"] for r in rows][3] == "adjustment"
    _views_agree(camp)

    camp.ok("deliver", "--branch", "campaign/out")
    delivered = camp.git("log", "--format=%s", "campaign/out")
    assert "perf(src): fast" in delivered and "perf(src): bad" not in delivered


def test_hooks_refuse_a_hand_edit_of_the_views_and_a_widened_tolerance(camp: Repo) -> None:
    camp.ok("hooks", "install")
    assert _record(camp, _code(camp, "base"), "base").returncode == 0
    jsonl = camp.path / "training_log/records/candidates.jsonl"
    jsonl.write_text(jsonl.read_text().replace('"base"', '"promoted"'))
    camp.git("add", "-A")
    edit = subprocess.run(
        ["git", "commit", "-q", "-m", "docs(campaign): tweak"],
        cwd=camp.path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert edit.returncode == 1 and "views-drift" in edit.stderr
    camp.git("checkout", "HEAD", "--", "training_log/records/candidates.jsonl")
    toml = camp.path / "ledger.toml"
    toml.write_text(
        toml.read_text().replace("correctness_tolerance = 1e-3", "correctness_tolerance = 1e-1")
    )
    camp.git("add", "ledger.toml")
    widen = subprocess.run(
        ["git", "commit", "-q", "-m", "chore: tolerance"],
        cwd=camp.path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert widen.returncode == 1 and "tolerance-frozen" in widen.stderr


def test_mistakes_log(camp: Repo) -> None:
    camp.ok(
        "mistake",
        "add",
        "Timed the cold start",
        "--caught-by",
        "review",
        "--should-have-caught",
        "the benchmark's warm-up check",
    )
    text = (camp.path / "training_log/mistakes.md").read_text()
    assert "Timed the cold start" in text and "warm-up check" in text


def new_batch(repo: Repo) -> Repo:
    """A batches ledger with its vocabulary and initial weights committed."""
    repo.ok("init", "--preset", "batches")
    repo.write("training_log/forbidden.txt", "answer key\ngold label\n")
    repo.commit_all("chore: vocabulary", "--no-verify")
    weights = repo.path.parent / "w.json"
    weights.write_text(json.dumps({"style": {"tone": "plain", "length": 3}, "frozen_label": "A"}))
    repo.ok("weights", "init", str(weights), "--frozen", "frozen_label")
    return repo


@pytest.fixture
def batch(bare_repo: Repo) -> Repo:
    return new_batch(bare_repo)


def close_batch(repo: Repo, flags: str) -> None:
    """Record one topic per flag (a pass or a fail of its gate), then close the batch from
    them: ``gate batch --record`` reads its flags from the recorded topics only."""
    for value in flags.split(","):
        rate = "0.9" if value.strip().lower() in ("1", "true") else "0.1"
        repo.ok(
            "gate", "topic", "--record", "--fidelity-rate", rate, "--mono", "true",
            "--endpoint", "true",
        )  # fmt: skip
    repo.ok("gate", "batch", "--flags", flags, "--record")


def test_one_revision_per_closed_batch_and_frozen_targets(batch: Repo) -> None:
    early = batch.run(
        "weights", "revise", "--target", "style", "--key", "tone", "--new", "warm", "--reason", "x"
    )
    assert early.code == 1 and "not closed" in early.err
    close_batch(batch, "true,true,true,true,true,true,true,false")
    frozen = batch.run(
        "weights", "revise", "--target", "frozen_label", "--key", "x", "--new", "B", "--reason", "x"
    )
    assert frozen.code == 1 and "frozen" in frozen.err
    leak = batch.run(
        "weights",
        "revise",
        "--target",
        "style",
        "--key",
        "tone",
        "--new",
        "use the Gold Label",
        "--reason",
        "x",
    )
    assert leak.code == 1 and "gold label" in leak.err
    batch.ok(
        "weights",
        "revise",
        "--target",
        "style",
        "--key",
        "tone",
        "--new",
        "warm",
        "--reason",
        "reviews",
    )
    again = batch.run(
        "weights", "revise", "--target", "style", "--key", "length", "--new", "4", "--reason", "x"
    )
    assert again.code == 1 and "already revised" in again.err
    log = (batch.path / "training_log/revision_log.jsonl").read_text().splitlines()
    assert [json.loads(line)["new"] for line in log] == ["warm"]
    close_batch(batch, "true,true,true,true,true,true,true,true")
    batch.ok("weights", "copy")
    one = (batch.path / "training_log/weights/batch-1.json").read_bytes()
    two = (batch.path / "training_log/weights/batch-2.json").read_bytes()
    assert one == two


@pytest.mark.parametrize(
    "recent, code", [("0.875,0.875,0.75", 1), ("0.875,0.9,1.0", 0), ("0.875,1.0", 1)]
)
def test_gate_converged(batch: Repo, recent: str, code: int) -> None:
    result = batch.run("gate", "converged", "--recent", recent, "--json")
    assert result.code == code
    assert result.json()["thresholds"] == {"batch_ratio_min": 0.875, "converge_k": 3}


def test_gate_topic_and_batch_arithmetic(batch: Repo) -> None:
    assert (
        batch.run(
            "gate", "topic", "--fidelity-rate", "0.8", "--mono", "true", "--endpoint", "true"
        ).code
        == 0
    )
    assert (
        batch.run(
            "gate", "topic", "--fidelity-rate", "0.79", "--mono", "true", "--endpoint", "true"
        ).code
        == 1
    )
    assert (
        batch.run(
            "gate", "topic", "--fidelity-rate", "0.9", "--mono", "false", "--endpoint", "true"
        ).code
        == 1
    )
    seven = batch.run("gate", "batch", "--flags", "1,1,1,1,1,1,1,0", "--json")
    assert seven.code == 0 and seven.json()["ratio"] == 0.875
    assert batch.run("gate", "batch", "--flags", "1,1,1,1,1,1,0,0").code == 1


def test_resume_after_killing_the_loop_mid_batch(batch: Repo) -> None:
    for ratio_flags in ("1,1,1,1,1,1,1,1", "1,1,1,1,1,1,1,0"):
        batch.ok("trace", "emit", "batch-start")
        close_batch(batch, ratio_flags)
        batch.ok("weights", "copy")
    # The loop: emits events, then dies mid-batch (SIGKILL, no cleanup).
    script = (
        "import subprocess, sys, os, signal\n"
        "for i in range(3):\n"
        "    subprocess.run([sys.executable, '-m', 'ledger', 'trace', 'emit', 'topic-done',"
        " '--field', f'topic={i}'], check=True)\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    proc = subprocess.run([sys.executable, "-c", script], cwd=batch.path, check=False)
    assert proc.returncode == -signal.SIGKILL
    state = batch.ok("resume", "--json").json()
    assert state["batch"] == 2 and state["batch_closed"] is False
    assert state["last_seq"] == 5  # two batch-start events committed, three since
    assert state["recent_ratios"] == [1.0, 0.875]
    assert state["converged"] is False
    assert state["next_weights_file"] == "training_log/weights/batch-3.json"
    assert state["uncommitted_trace"] is True
    assert len(state["revisions"]) == 0
    git(batch.path, "fsck", "--strict")
