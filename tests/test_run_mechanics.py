"""``run``: one transition per run, finished seeds of a killed run kept, timeouts, ``-C`` paths."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import click
import pytest

from tests.helpers import Repo, fingerprint, ledger, register

# seed "bad" fails, a seed starting with "slow" outlives any test.
GATE = """\
import json, sys, time
seed, out = sys.argv[1], sys.argv[2]
if seed.startswith("slow"):
    time.sleep(120)
if seed == "bad":
    print("boom"); sys.exit(3)
with open(out, "w") as handle:
    json.dump({"score": 10.0 + len(seed) / 10}, handle)
"""

CONFIG = """\
[ledger]
dir = "training_log"

[gates.recent]
metric = "score"
noise_floor = 0.5
command = ["{python}", "gate.py", "{{seed}}", "{{out}}"]
[gates.recent.metrics]
score = "$.score"
"""


@pytest.fixture
def gated(bare_repo: Repo) -> Repo:
    bare_repo.write("gate.py", GATE)
    bare_repo.write("ledger.toml", CONFIG.format(python=sys.executable))
    bare_repo.commit_all("chore: gate")
    bare_repo.ok("init")
    assert register(bare_repo, "V1").code == 0
    return bare_repo


def _results(repo: Repo, rev: str = "HEAD") -> list[str]:
    return repo.git("diff-tree", "--no-commit-id", "--name-only", "-r", f"{rev}~1", rev).split()


def test_run_commits_one_transition_with_each_seed_and_its_provenance(gated: Repo) -> None:
    before = gated.head()
    result = gated.run("run", "V1", "--gate", "recent", "--seeds", "1,22,bad,4444", "--jobs", "2")
    assert result.code == 1, "a failed seed fails the run"
    assert gated.git("rev-parse", "HEAD~1").strip() == before, "one commit for the whole run"
    assert gated.trailers() == {"Ledger-Transition": "run", "Ledger-Step": "V1"}
    assert sorted(_results(gated)) == [
        "training_log/results/V1/recent/seed-1.json",
        "training_log/results/V1/recent/seed-22.json",
        "training_log/results/V1/recent/seed-4444.json",
        "training_log/results/V1/recent/seed-bad-failed.json",
    ]
    shas = set()
    for seed in ("1", "22", "4444"):
        stored = json.loads(
            (gated.path / f"training_log/results/V1/recent/seed-{seed}.json").read_text()
        )
        assert stored["seed"] == seed and stored["metrics"]["score"] == 10.0 + len(seed) / 10
        assert stored["provenance"]["code_commit"] == before
        assert stored["provenance"]["wall_time_s"] > 0
        shas.add(stored["provenance"]["source_sha256"])
    assert len(shas) == 3, "each seed has its own provenance"
    failed = json.loads(
        (gated.path / "training_log/results/V1/recent/seed-bad-failed.json").read_text()
    )
    assert failed["exit_code"] == 3 and "boom" in failed["log_tail"]
    assert "seed bad: FAILED (exit code 3)" in gated.git("log", "-1", "--format=%b")
    assert gated.git("status", "--porcelain") == ""
    assert not list((gated.path / ".git/ledger/runs").glob("*.json"))


def test_finished_seeds_of_a_killed_run_are_listed_and_recorded(gated: Repo) -> None:
    runs = gated.path / ".git/ledger/runs"
    argv = ["run", "V1", "--gate", "recent", "--seeds", "1,slow1", "--jobs", "2"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "ledger", *argv],
        cwd=gated.path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    records: list[dict[str, object]] = []
    try:
        for _ in range(1200):  # until seed 1 has finished and slow1 is running
            records = [json.loads(p.read_text()) for p in runs.glob("run-*.json")]
            if len(records) == 2 and any(r.get("finished") for r in records):
                break
            assert proc.poll() is None
            time.sleep(0.05)
        assert any(r.get("finished") for r in records)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        slow = next(r for r in records if not r.get("finished"))
        os.kill(int(str(slow["pid"])), signal.SIGKILL)
    finally:
        for record in records:
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(str(record["pid"])), signal.SIGKILL)
    head = gated.head()
    assert gated.trailers()["Ledger-Transition"] == "register", "nothing was committed yet"
    doctor = gated.run("doctor", "--json")
    problems = " ".join(doctor.json()["problems"])
    assert doctor.code == 1
    assert "finished run not on record: V1 recent seed 1" in problems
    assert "git ledger run V1 --record-finished" in problems
    fixed = gated.run("doctor", "--fix")  # leaves it to its own step, and is not a failure
    assert fixed.code == 0 and "left for its own step: finished run not on record" in fixed.out
    assert "finished run not on record" in gated.run("doctor").out, "--fix never drops it"
    recorded = gated.ok("run", "V1", "--record-finished", "--json").json()["recorded"]
    assert [r["label"] for r in recorded] == ["V1 recent seed 1"] and not recorded[0]["failed"]
    assert gated.git("rev-parse", "HEAD~1").strip() == head
    assert _results(gated) == ["training_log/results/V1/recent/seed-1.json"]
    stored = json.loads((gated.path / "training_log/results/V1/recent/seed-1.json").read_text())
    assert stored["metrics"]["score"] == 10.1 and stored["provenance"]["wall_time_s"] > 0
    assert "finished run not on record" not in gated.run("doctor").out
    again = gated.ok("run", "V1", "--record-finished")
    assert "no finished runs" in again.out and gated.git("rev-parse", "HEAD~1").strip() == head


def test_a_run_over_timeout_seconds_is_killed_and_recorded_as_failed(gated: Repo) -> None:
    config = gated.path / "ledger.toml"
    config.write_text(config.read_text() + "\n[run]\ntimeout_seconds = 0.5\n")
    gated.commit_all("chore: run timeout")
    result = gated.run("run", "V1", "--gate", "recent", "--seeds", "slow1,1", "--json")
    assert result.code == 1
    runs = {r["label"]: r for r in result.json()["runs"]}
    slow = runs["V1 recent seed slow1"]
    assert slow["failed"] and slow["reason"] == "timed out after 0.5 s ([run] timeout_seconds)"
    assert not runs["V1 recent seed 1"]["failed"]
    stored = json.loads(
        (gated.path / "training_log/results/V1/recent/seed-slow1-failed.json").read_text()
    )
    assert stored["status"] == "failed" and "timed out after 0.5 s" in stored["log_tail"]
    assert stored["exit_code"] == -signal.SIGTERM


def test_relative_paths_after_dash_c_are_relative_to_it(gated: Repo, tmp_path: Path) -> None:
    gated.write("in/result.json", json.dumps({"score": 9.5}))
    outside = gated.path.parent
    ledger(
        outside, "-C", "repo", "record", "V1", "--gate", "recent", "--seed", "7", "in/result.json"
    )
    assert gated.git("show", "HEAD:training_log/results/V1/recent/seed-7.json")
    ran = ledger(
        outside, "-C", "repo", "run", "V1", "--gate", "recent", "--seeds", "8", "--out-dir", "out"
    )
    assert ran.code == 0, ran.err
    assert (gated.path / "out/V1/recent/seed-8.json").is_file()
    before = fingerprint(gated.path)
    missing = ledger(outside, "-C", "nowhere", "status")
    assert missing.code == 2 and "nowhere" in missing.err
    assert fingerprint(gated.path) == before


def test_run_out_dir_relative_to_a_subdirectory(gated: Repo) -> None:
    sub = gated.path / "sub"
    sub.mkdir()
    ran = ledger(sub, "run", "V1", "--gate", "recent", "--seeds", "1", "--out-dir", "out", "--json")
    assert ran.code == 0, ran.err
    assert (sub / "out/V1/recent/seed-1.json").is_file()
    assert not ran.json()["runs"][0]["failed"]
    # A run's own outputs in the work tree do not make the code it measured dirty.
    assert gated.ok("show", "V1", "--json").json()["flags"]["dirty"] == []
    detached = ledger(
        sub, "run", "V1", "--gate", "recent", "--seeds", "2", "--out-dir", "out2", "--detach"
    )
    assert detached.code == 0, detached.err
    gated.ok("wait", "--timeout", "120")
    assert (sub / "out2/V1/recent/seed-2.json").is_file()
    assert gated.git("show", "HEAD:training_log/results/V1/recent/seed-2.json")
    # Seed 2 ran beside seed 1's outputs (another folder): untracked files that are not
    # this run's are not known to be anything but code.
    assert gated.ok("show", "V1", "--json").json()["flags"]["dirty"] == [
        "training_log/results/V1/recent/seed-2.json"
    ]


PRINTS = """\
import json, sys
seed = sys.argv[1]
print("warming up", file=sys.stderr)
if seed == "mute":
    sys.exit(0)
print(json.dumps({"score": 20.0 + len(seed), "hit_rate": 0.5}))
"""


def test_results_printed_on_stdout_are_recorded(bare_repo: Repo) -> None:
    bare_repo.write("gate.py", PRINTS)
    config = CONFIG.format(python=sys.executable).replace(', "{out}"]', "]")
    config = config.replace('score = "$.score"', 'score = "$.score"\nhit_rate = "$.hit_rate"')
    bare_repo.write("ledger.toml", config + '\n[run]\nresults = "stdout"\n')
    bare_repo.commit_all("chore: a gate that prints its results")
    bare_repo.ok("init")
    assert register(bare_repo, "V1").code == 0
    result = bare_repo.run("run", "V1", "--gate", "recent", "--seeds", "1,22,mute")
    assert result.code == 1, result.err  # the mute seed printed nothing
    results = bare_repo.path / "training_log/results/V1/recent"
    for seed in ("1", "22"):
        stored = json.loads((results / f"seed-{seed}.json").read_text())
        assert stored["metrics"] == {"score": 20.0 + len(seed), "hit_rate": 0.5}
    failed = json.loads((results / "seed-mute-failed.json").read_text())
    assert "printed no results JSON on stdout" in failed["log_tail"]
    assert "warming up" in failed["log_tail"]  # stderr is the log, never the results
    # Without results = "stdout", a command that has no {out} is bad input.
    toml = bare_repo.path / "ledger.toml"
    toml.write_text(toml.read_text().replace('results = "stdout"', 'results = "file"'))
    bare_repo.commit_all("chore: back to a results file")
    before = fingerprint(bare_repo.path)
    bad = bare_repo.run("run", "V1", "--gate", "recent", "--seeds", "3")
    assert bad.code == 2 and 'results = "stdout"' in bad.err, bad.err
    assert fingerprint(bare_repo.path) == before
    toml.write_text(toml.read_text().replace('results = "file"', 'results = "print"'))
    wrong = bare_repo.run("status")
    assert wrong.code == 2 and "results" in wrong.err, wrong.err


# A value for each option of `run`, as a user types it. An option added to `run`
# without a value here fails the test below: say what it takes, and the test
# checks that a detached run receives it too.
RUN_VALUES: dict[str, list[str]] = {
    "--gate": ["recent"],
    "--seeds": ["3,4"],
    "--windows": [],  # the other way to name runs; --seeds stands for both
    "--replicates": ["2"],
    "--jobs": ["2"],
    "--out-dir": ["artifacts"],
    "--replace": ["--detach"],  # a value that reads like the flag stays a value
    "--json": [],
    "--detach": [],
    "--record-finished": [],  # records earlier runs and starts none: nothing to detach
    # Only for a concluded version (V1 is open); test_remeasure detaches one.
    "--remeasure": [],
}


def test_every_option_of_run_reaches_a_detached_run(gated: Repo) -> None:
    from ledger.cli.app import cli

    command = cli.commands["run"]
    names = {opt for p in command.params if isinstance(p, click.Option) for opt in p.opts}
    names -= {"-h", "--help"}
    assert names <= set(RUN_VALUES), f"give a value for {sorted(names - set(RUN_VALUES))}"
    args = ["V1"]
    for name in sorted(names - {"--windows", "--record-finished", "--detach", "--remeasure"}):
        args += [name, *RUN_VALUES[name]]
    args.insert(3, "--detach")  # anywhere on the line
    started = gated.run("run", *args)
    assert started.code == 0, started.err
    (record,) = [
        json.loads(p.read_text()) for p in (gated.path / ".git/ledger/runs").glob("batch-*.json")
    ]
    worker = record["argv"][record["argv"].index("run") + 1 :]
    expected = [a for i, a in enumerate(args) if not (a == "--detach" and i == 3)]
    assert worker == expected, (worker, expected)
    assert worker[worker.index("--replace") + 1] == "--detach"
    gated.ok("wait", "--timeout", "120")
    # The options took effect in the worker: its own artifacts dir, two replicates each.
    assert (gated.path / "artifacts/V1/recent/seed-3-r2.json").is_file()
    log = Path(str(record["log"])).read_text()
    assert json.loads(log)["determinism"] is not None, log


def test_a_results_cheap_fields_agree_with_its_validated_model(gated: Repo, tmp_path: Path) -> None:
    """state.Result reads version, gate, status, metrics and provenance from the cached
    entry without validating it; for run, record, failed and re-measured results alike,
    each must say what the model says."""
    from ledger.core import cache
    from ledger.core.context import open_context

    gated.write("src/model.py", "x = 1\n")
    gated.commit_all("feat: V1 code\n\nLedger-Step: V1")
    gated.run("run", "V1", "--gate", "recent", "--seeds", "1,bad")
    recorded = tmp_path / "r.json"
    recorded.write_text(json.dumps({"score": 3.5}))
    gated.ok("record", "V1", "--gate", "recent", "--seed", "9", str(recorded))
    gated.ok("conclude", "V1", "--verdict", "inconclusive", "--next", "n", "--override", "test")
    gated.ok("run", "V1", "--gate", "recent", "--seeds", "1", "--remeasure", "again")
    for _ in range(2):  # parsed fresh, then from the entry cache
        cache._LOADED.clear()
        state = open_context(gated.path).state()
        assert len(state.results) == 4
        for r in state.results:
            model = r.data
            assert (r.version, r.gate, r.status) == (model.version, model.gate, model.status)
            assert r.remeasured == (model.provenance.remeasure is not None)
            assert r.dirty == model.provenance.dirty and r.metrics == model.metrics
            assert r.ran_at == (
                "command" in model.provenance.conditions,
                model.provenance.code_commit,
            )
        kinds = {(r.status, r.remeasured, r.ran_at[0]) for r in state.results}
        assert kinds == {
            ("ok", False, True),
            ("failed", False, True),
            ("ok", False, False),
            ("ok", True, True),
        }


@pytest.mark.parametrize("skew", ["code-dated-in-the-past", "registration-dated-ahead"])
def test_code_merged_from_a_branch_counts_whatever_the_clocks_said(
    bare_repo: Repo, skew: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A version's code commits are the ones after its registration in the graph
    (registration..HEAD), never judged by commit dates: a clock that ran ahead on the
    machine that registered, or behind on the one that wrote the code, must not turn
    results measured after the code into "measured before any code commit"."""
    bare_repo.write("gate.py", GATE)
    bare_repo.write("ledger.toml", CONFIG.format(python=sys.executable))
    bare_repo.commit_all("chore: gate")
    bare_repo.ok("init")
    branch = bare_repo.git("rev-parse", "--abbrev-ref", "HEAD").strip()
    assert register(bare_repo, "V0").code == 0
    bare_repo.ok("run", "V0", "--gate", "recent", "--seeds", "1")
    bare_repo.ok("conclude", "V0", "--verdict", "confirmed", "--next", "n")
    ahead = "2099-01-01T00:00:00" if skew == "registration-dated-ahead" else None
    if ahead:
        monkeypatch.setenv("GIT_COMMITTER_DATE", ahead)
        monkeypatch.setenv("GIT_AUTHOR_DATE", ahead)
    assert register(bare_repo, "V1").code == 0
    monkeypatch.delenv("GIT_COMMITTER_DATE", raising=False)
    monkeypatch.delenv("GIT_AUTHOR_DATE", raising=False)
    bare_repo.git("checkout", "-q", "-b", "feat")
    bare_repo.write("src/model.py", "x = 2\n")
    with monkeypatch.context() as m:
        if not ahead:
            m.setenv("GIT_COMMITTER_DATE", "2001-01-01T00:00:00")
            m.setenv("GIT_AUTHOR_DATE", "2001-01-01T00:00:00")
        bare_repo.commit_all("feat: V1 code\n\nLedger-Step: V1")
    bare_repo.git("checkout", "-q", branch)
    bare_repo.git("merge", "-q", "--no-ff", "-m", "Merge feat", "feat")
    bare_repo.ok("run", "V1", "--gate", "recent", "--seeds", "1,2")
    shown = json.loads(bare_repo.ok("show", "V1", "--json").out)
    assert shown["flags"]["before_code"] == [], shown["flags"]
    # status and the reports read every version's flags in one walk: the same answer.
    flagged = json.loads(bare_repo.ok("status", "--json").out)["flagged"]
    assert [f for f in flagged if f["id"] == "V1" and f["before_code"]] == [], flagged
    # conclude's own readiness check agrees (it refused these results before).
    done = bare_repo.run("conclude", "V1", "--verdict", "inconclusive", "--next", "n")
    assert "unreproducible-results" not in done.err, done.err
