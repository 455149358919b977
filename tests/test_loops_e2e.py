"""Whole campaign and batches loops through ``git ledger`` (git's dispatch), hooks installed."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.helpers import Repo, Run, fingerprint, git


def gl(repo: Repo, *args: str, env: dict[str, str] | None = None) -> Run:
    import os

    proc = subprocess.run(
        ["git", "ledger", *args],
        cwd=repo.path,
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, **(env or {})},
    )
    return Run(proc.returncode, proc.stdout, proc.stderr)


def ok(repo: Repo, *args: str, env: dict[str, str] | None = None) -> Run:
    result = gl(repo, *args, env=env)
    assert result.code == 0, f"git ledger {' '.join(args)} -> {result.code}\n{result.err}"
    return result


def commit(repo: Repo, message: str) -> subprocess.CompletedProcess[str]:
    git(repo.path, "add", "-A")
    return subprocess.run(
        ["git", "commit", "-q", "-m", message],
        cwd=repo.path,
        capture_output=True,
        text=True,
        check=False,
    )


MEASURE = ("--measure", "accel_mem_gb=N/A: no accelerator", "--measure", "peak_cpu_gb=1.5")


def test_campaign_loop_with_hooks(bare_repo: Repo, tmp_path: Path) -> None:
    repo = bare_repo
    template = Path(__file__).resolve().parent.parent / "templates/ledger-campaign.toml"
    (repo.path / "ledger.toml").write_text(
        template.read_text().replace("${dir}", "training_log")
        + 'scope = ["src/**"]\nbenchmark_script = "bench.py"\nunits = { speed = "tok/s" }\n'
    )
    ok(repo, "init")
    ok(repo, "hooks", "install")
    repo.write("src/app.py", "speed = 1\n")
    repo.write("bench.py", "print(1)\n")
    base_code = commit(repo, "feat(src): the base")
    assert base_code.returncode == 0, base_code.stderr  # no version needed in a campaign
    base = repo.head()
    early = gl(repo, "arm")
    assert early.code == 1 and "contract" in early.err
    repo.write("training_log/contract.md", "# Contract\n\nSpeed of src/ on bench.py.\n")
    ok(repo, "contract")
    repo.write("training_log/contract.md", "# Contract\n\nAnything goes.\n")
    frozen = commit(repo, "docs(campaign): loosen the contract")
    assert frozen.returncode == 1 and "contract-frozen" in frozen.stderr
    git(repo.path, "reset", "-q", "--hard")
    assert gl(repo, "arm").code == 1  # no base yet

    before = fingerprint(repo.path)
    unknown = gl(
        repo, "candidate", "record", "--commit", base, "--verdict", "base",
        "--measure", "speed=100", "--measure", "latency=3", "--correctness", "0", *MEASURE,
    )  # fmt: skip
    assert unknown.code == 2 and "latency" in unknown.err
    transition = gl(
        repo, "candidate", "record", "--commit", "HEAD", "--verdict", "base",
        "--speed", "100", "--correctness", "0", *MEASURE,
    )  # fmt: skip
    assert transition.code == 2 and "ledger transition" in transition.err
    assert fingerprint(repo.path) == before
    ok(
        repo, "candidate", "record", "--commit", base, "--verdict", "base",
        "--measure", "speed=100", "--measure", "correctness=0", *MEASURE,
    )  # fmt: skip

    ok(repo, "arm", env={"LEDGER_OWNER": "alice"})
    taken = gl(repo, "arm", env={"LEDGER_OWNER": "bob"})
    assert taken.code == 1 and "alice" in taken.err
    ok(repo, "arm", "--force", "alice's session ended", env={"LEDGER_OWNER": "bob"})
    owner = json.loads((repo.path / "training_log/owner.json").read_text())
    assert owner["owner"] == "bob" and owner["forced"][0]["reason"] == "alice's session ended"
    # Every writing verb checks the owner: the git user (no LEDGER_OWNER) takes it back.
    ok(repo, "arm", "--force", "bob handed the campaign back")

    repo.write("src/fast.py", "fast = 1\n")
    fast_commit = commit(repo, "perf(src): fast path")
    assert fast_commit.returncode == 0, fast_commit.stderr
    fast = repo.head()
    repo.write("docs/notes.md", "outside\n")
    outside = commit(repo, "docs: notes")
    assert outside.returncode == 0 and "campaign-scope" in outside.stderr
    stray = repo.head()
    ok(
        repo, "candidate", "record", "--commit", fast, "--verdict", "promoted",
        "--reason", "fused loop", "--notes", "less invasive than the rewrite",
        "--speed", "130", "--correctness", "0.0001", *MEASURE,
    )  # fmt: skip
    ok(
        repo, "candidate", "record", "--commit", stray, "--verdict", "rejected",
        "--reason", "no gain", "--speed", "99", "--correctness", "0", *MEASURE,
    )  # fmt: skip
    csv_text = (repo.path / "training_log/benchmark.csv").read_text()
    assert "speed (tok/s)" in csv_text and "fused loop" in csv_text and "less invasive" in csv_text

    repo.write("bench.py", "print(2)  # warm-up excluded\n")
    assert commit(repo, "perf(bench): exclude warm-up").returncode == 0
    ok(repo, "benchmark", "adjust", "--reason", "warm-up excluded from timing")
    nxt = ok(repo, "next", "--json").json()
    assert nxt["action"] == "record-base"
    ok(
        repo, "candidate", "record", "--commit", base, "--verdict", "base",
        "--speed", "90", "--correctness", "0", *MEASURE,
    )  # fmt: skip
    assert ok(repo, "next", "--json").json()["action"] == "re-measure-head"
    ok(
        repo, "candidate", "record", "--commit", fast, "--verdict", "held",
        "--reason", "re-measured", "--speed", "120", "--correctness", "0", *MEASURE,
    )  # fmt: skip
    repo.write("src/slow.py", "slow = 1\n")
    assert commit(repo, "perf(src): another try").returncode == 0
    regression = gl(
        repo, "candidate", "record", "--commit", "HEAD", "--verdict", "promoted",
        "--reason", "beats the old base", "--speed", "110", "--correctness", "0", *MEASURE,
    )  # fmt: skip
    assert regression.code == 1 and "promotion-evidence" in regression.err
    # finish wants every code commit recorded: the refused promotion is rejected.
    ok(
        repo, "candidate", "record", "--commit", "HEAD", "--verdict", "rejected",
        "--reason", "slower than the head", "--speed", "110", "--correctness", "0", *MEASURE,
    )  # fmt: skip

    repo.write("training_log/latest-report.md", "# Report\n\nstatus: closed\n")
    assert commit(repo, "docs(campaign): a report by hand").returncode == 0
    unnamed = gl(repo, "finish", "--json")
    assert unnamed.code == 1
    assert "report-adjustments" in [i["rule"] for i in unnamed.json()["outstanding"]]
    assert [i["commit"] for i in unnamed.json()["out_of_scope"]] == [stray]
    ok(repo, "close", "--summary", "fast path promoted; numbers re-measured after adjustment 1")
    report = (repo.path / "training_log/latest-report.md").read_text()
    assert "adjustment 1: warm-up excluded" in report and "fused loop" in report
    done = ok(repo, "finish")
    assert "out of scope" in done.out

    repo.write("src/uncommitted.py", "work tree only\n")
    temp = tmp_path / "tmp"
    temp.mkdir()
    ok(repo, "deliver", "--branch", "campaign/out", env={"TMPDIR": str(temp)})
    assert list(temp.iterdir()) == []
    files = git(repo.path, "ls-tree", "-r", "--name-only", "campaign/out").split()
    assert "src/fast.py" in files and "bench.py" in files
    assert "src/uncommitted.py" not in files and "docs/notes.md" not in files
    assert "training_log/latest-report.md" in files and "training_log/benchmark.csv" in files
    assert "training_log/owner.json" not in files and "ledger.toml" not in files
    assert "exclude warm-up" in git(repo.path, "log", "--format=%s", "campaign/out")
    assert git(repo.path, "worktree", "list").count("\n") == 1
    assert ok(repo, "verify").code == 0  # the honest loop satisfies its preset's history rules


def test_batches_loop_with_hooks(bare_repo: Repo, tmp_path: Path) -> None:
    repo = bare_repo
    ok(repo, "init", "--preset", "batches")
    vocab = repo.path / "training_log/forbidden.txt"
    assert vocab.read_text().startswith("# Forbidden vocabulary")
    ok(repo, "hooks", "install")
    with vocab.open("a") as handle:
        handle.write("checklist\n")
    assert commit(repo, "chore(batches): vocabulary").returncode == 0
    weights = tmp_path / "w.json"
    weights.write_text(
        json.dumps(
            {
                "style": {"tone": "plain", "length": 3, "B1.L0": 0.5, "nested": {"depth": 1}},
                "label": "A",
            }
        )
    )
    ok(repo, "weights", "init", str(weights), "--frozen", "label", "--run-id", "run-7")
    meta = json.loads((repo.path / "training_log/weights/meta.json").read_text())
    assert meta["run_id"] == "run-7" and meta["thresholds"]["fidelity_min"] == 0.8

    before = fingerprint(repo.path)
    bad_rate = gl(
        repo, "gate", "topic", "--record", "--fidelity-rate", "1.5", "--mono", "true",
        "--endpoint", "true",
    )  # fmt: skip
    assert bad_rate.code == 2 and "[0, 1]" in bad_rate.err
    seven = gl(repo, "gate", "batch", "--flags", "1,1,1,1,1,1,1", "--record")
    assert seven.code == 2 and "8 topics" in seven.err
    assert fingerprint(repo.path) == before

    hand = repo.path / "training_log/weights/batch-0.json"
    hand.write_text(hand.read_text().replace("plain", "warm"))
    refused = commit(repo, "docs(batches): tweak")
    assert refused.returncode == 1 and "transition-only" in refused.stderr
    git(repo.path, "reset", "-q", "--hard")
    toml = repo.path / "ledger.toml"
    toml.write_text(toml.read_text().replace("fidelity_min = 0.8", "fidelity_min = 0.5"))
    lowered = commit(repo, "chore(ledger): easier")
    assert lowered.returncode == 1 and "thresholds-frozen" in lowered.stderr
    git(repo.path, "reset", "-q", "--hard")

    def batch(passes: int) -> None:
        for i in range(8):
            ok(
                # Naming the topic records it; --record says so explicitly.
                repo, "gate", "topic", *(["--record"] if i % 2 else []), "--topic", f"t{i}",
                "--fidelity-rate", "0.9" if i < passes else "0.1",
                "--mono", "true", "--endpoint", "true",
            )  # fmt: skip
            if i == 2:
                resume = ok(repo, "resume", "--json").json()
                assert resume["topics_done"] == ["t0", "t1", "t2"]
                assert resume["frozen_targets"] == ["label"]
                assert resume["next_weights_exists"] is False
        nxt = ok(repo, "next", "--json").json()
        assert nxt["action"] == "close-batch"
        ok(repo, *nxt["command"].split()[2:])

    ok(repo, "trace", "emit", "batch-start", "--field", "n=3", "--field", "path=src/x.py")
    out = gl(repo, "trace", "emit", "bad", "--field", "path=../secret")
    assert out.code == 2
    trace = repo.path / "training_log/trace/run-7.jsonl"
    with trace.open("a") as handle:
        handle.write('{"event": "topic-do')  # the loop died mid-line
    batch(6)
    lines = [json.loads(line) for line in trace.read_text().splitlines()]
    assert lines[0]["fields"] == {"n": 3, "path": "src/x.py"}
    assert [e["seq"] for e in lines] == [1, 2] and lines[1]["event"] == "torn-line"
    ok(repo, "trace", "emit", "after")
    assert json.loads(trace.read_text().splitlines()[-1])["seq"] == 3

    leak = gl(
        repo, "weights", "revise", "--target", "style", "--key", "tone",
        "--new", "follow the Check-lists", "--reason", "x",
    )  # fmt: skip
    assert leak.code == 1 and "checklist" in leak.err
    container = gl(
        repo, "weights", "revise", "--target", "style", "--key", "nested",
        "--new", "3", "--reason", "x",
    )  # fmt: skip
    assert container.code == 2 and "--replace-container" in container.err
    ok(repo, "weights", "revise", "--target", "style", "--key", "B1.L0", "--new", "0.75",
       "--reason", "exact key with a dot")  # fmt: skip
    w1 = json.loads((repo.path / "training_log/weights/batch-1.json").read_text())
    assert w1["style"]["B1.L0"] == 0.75
    batch(8)
    ok(repo, "weights", "revise", "--target", "style", "--key", "nested.depth", "--new", "2",
       "--reason", "dotted path")  # fmt: skip
    w2 = json.loads((repo.path / "training_log/weights/batch-2.json").read_text())
    assert w2["style"]["nested"] == {"depth": 2}
    batch(8)
    ok(repo, "weights", "revise", "--target", "style", "--key", "length", "--new", "4",
       "--reason", "json types kept")  # fmt: skip
    w3 = json.loads((repo.path / "training_log/weights/batch-3.json").read_text())
    assert w3["style"]["length"] == 4
    batch(8)
    assert ok(repo, "next", "--json").json()["action"] == "converge"
    ok(repo, "gate", "converged", "--record")
    events = [json.loads(line)["event"] for line in trace.read_text().splitlines()]
    assert events[-2:] == ["converged", "run_end"]
    assert git(repo.path, "status", "--porcelain", "training_log") == ""
    after = gl(repo, "weights", "copy")
    assert after.code == 1 and "converged" in after.err
    assert ok(repo, "next", "--json").json()["action"] == "done"
    assert ok(repo, "verify").code == 0  # the honest loop satisfies its preset's history rules

    vocab.unlink()
    missing = gl(
        repo, "weights", "revise", "--target", "style", "--key", "tone", "--new", "x",
        "--reason", "x",
    )  # fmt: skip
    assert missing.code == 2 and "forbidden-vocabulary" in missing.err


def test_a_malformed_entry_of_any_preset_is_listed_never_dropped(
    bare_repo: Repo, tmp_path: Path
) -> None:
    repo = bare_repo
    ok(repo, "init", "--preset", "campaign")
    repo.write("training_log/contract.md", "# Contract\n\nSpeed.\n")
    ok(repo, "contract")
    bad = "training_log/candidates/0123456789ab-e0.json"
    repo.write(bad, json.dumps({"commit": "0123", "seq": 1, "epoch": 0, "verdict": "base"}))
    repo.commit_all("docs(campaign): by hand", "--no-verify")
    status = ok(repo, "status", "--json").json()
    assert [p["path"] for p in status["problems"]] == [bad]
    assert status["next"]["action"] == "fix-entry"
    finish = gl(repo, "finish", "--json")
    assert finish.code == 1 and "entry-schema" in [i["rule"] for i in finish.json()["outstanding"]]
    doctor = gl(repo, "doctor", "--json")
    assert bad in doctor.out

    other = tmp_path / "batches"
    other.mkdir()
    git(other, "init", "-q")
    brepo = Repo(other)
    ok(brepo, "init", "--preset", "batches")
    gate = "training_log/gates/batch-0.json"
    brepo.write(gate, '{"batch": 0, "ratio": 3}')
    brepo.commit_all("docs(batches): by hand", "--no-verify")
    status = ok(brepo, "status", "--json").json()
    assert [p["path"] for p in status["problems"]] == [gate]


def test_versions_loop_with_hooks(bare_repo: Repo, tmp_path: Path) -> None:
    repo = bare_repo
    ok(repo, "init")
    ok(repo, "hooks", "install")
    repo.write("a.py", "x = 1\n")
    early = commit(repo, "feat(a): before any bet")
    assert early.returncode == 1 and "no version is open" in early.stderr
    git(repo.path, "reset", "-q")
    for _ in range(2):
        nxt = ok(repo, "next", "--json").json()
        assert nxt["action"] == "register"
        vid = nxt["command"].split()[3]
        ok(repo, "register", vid, "--bet", "faster", "--gate", "recent", "--files", "a.py",
           "--falsifier", "no gain")  # fmt: skip
        repo.write("a.py", f"x = {_ + 2}\n")
        assert commit(repo, "feat(a): the bet").returncode == 0
        nxt = ok(repo, "next", "--json").json()
        assert nxt["action"] == "measure"
        results = tmp_path / f"r{_}.json"
        results.write_text(json.dumps({"score": 10 + _}))
        command = nxt["command"].replace("<RESULTS.json>", str(results))
        ok(repo, *command.replace("RESULTS.json", str(results)).split()[2:])
        nxt = ok(repo, "next", "--json").json()
        assert nxt["action"] == "conclude"
        verdict = nxt["command"].split("--verdict ")[1].split()[0].split("|")[0]
        vid = nxt["command"].split()[3]
        ok(repo, "conclude", vid, "--verdict", verdict, "--next", "try the next bet")
    status = ok(repo, "status", "--json").json()
    assert status["counts"]["concluded"] == 2 and status["problems"] == []
