"""Issue 27, campaign: ``candidate record --run`` measures with ``[campaign] run``.

The tool runs the measuring command (an argv from ledger.toml) at the candidate's
commit in a temporary worktree, never in the user's work tree, records the four
measurements with their repeats and the provenance (the command, the code commit,
the benchmark script's blob id, the environment facts), and refuses a run whose
benchmark script is not the current epoch's until ``benchmark adjust``. Through
``git ledger`` (git's dispatch), hooks installed.
"""

from __future__ import annotations

import json
import shlex
import sys

import pytest

from tests.helpers import Repo, fingerprint, git
from tests.test_i27_campaign_finish import TEMPLATE, commit, gl, ok

BENCH = """\
import json, sys
from pathlib import Path
repeat = int(sys.argv[2])
base = float(Path("src/speed.txt").read_text())
print(json.dumps({
    "speed": base * FACTOR + repeat - 2,
    "accel_mem_gb": "N/A: no accelerator",
    "peak_cpu_gb": 1.5,
    "correctness": 0,
}))
"""


def bench(factor: int) -> str:
    return BENCH.replace("FACTOR", str(factor))


@pytest.fixture
def camp(bare_repo: Repo) -> Repo:
    repo = bare_repo
    run = json.dumps([sys.executable, "bench.py", "{commit}", "{repeat}"])
    env = json.dumps([sys.executable, "--version"])
    (repo.path / "ledger.toml").write_text(
        TEMPLATE.read_text().replace("${dir}", "training_log")
        + 'scope = ["src/**"]\nbenchmark_script = "bench.py"\n'
        + f"run = {run}\nenvironment = {{ python = {env} }}\n"
    )
    ok(repo, "init")
    ok(repo, "hooks", "install")
    repo.write("src/speed.txt", "100\n")
    repo.write("bench.py", bench(1))
    commit(repo, "feat(src): the base")
    repo.write("training_log/contract.md", "# Contract\n\nSpeed of src/ on bench.py.\n")
    ok(repo, "contract")
    return repo


def _entry(repo: Repo, sha: str) -> dict[str, object]:
    path = sorted((repo.path / "training_log/candidates").glob(f"{sha[:12]}-*.json"))[-1]
    data: dict[str, object] = json.loads(path.read_text())
    return data


def _run(repo: Repo, sha: str, verdict: str, *extra: str) -> tuple[int, str, str]:
    done = gl(repo, "candidate", "record", "--commit", sha, "--verdict", verdict, "--run", *extra)
    return done.code, done.out, done.err


def _worktrees(repo: Repo) -> list[str]:
    return [
        line for line in git(repo.path, "worktree", "list", "--porcelain").splitlines()
        if line.startswith("worktree ")
    ]  # fmt: skip


def test_run_measures_the_commit_in_a_worktree_and_records_provenance(camp: Repo) -> None:
    base = git(camp.path, "log", "-1", "--format=%H", "--grep=the base").strip()
    # next proposes the tool's measurement, and the command it proposes passes.
    nxt = ok(camp, "next", "--json").json()
    assert nxt["action"] == "record-base" and nxt["command"].endswith(" --run"), nxt
    words = shlex.split(nxt["command"].replace("CANDIDATE", base))
    ok(camp, *words[2:])
    entry = _entry(camp, base)
    repeats = entry["repeats"]
    assert isinstance(repeats, dict)
    assert repeats["speed"] == [99.0, 100.0, 101.0]  # [campaign] run_repeats = 3
    assert repeats["peak_cpu_gb"] == [1.5, 1.5, 1.5]
    ok(camp, "arm")
    camp.write("src/speed.txt", "130\n")
    fast = commit(camp, "perf(src): fast")
    # An uncommitted edit in the user's work tree is not what is measured, nor touched.
    (camp.path / "src/speed.txt").write_text("999\n")
    code, out, err = _run(camp, fast, "promoted", "--reason", "fused loop", "--repeats", "4")
    assert code == 0, err
    assert "improved" in out
    entry = _entry(camp, fast)
    assert entry["repeats"]["speed"] == [129.0, 130.0, 131.0, 132.0]  # type: ignore[index]
    assert entry["measurements"]["peak_cpu_gb"] == 1.5  # type: ignore[index]
    assert entry["measurements"]["accel_mem_gb"] == "N/A: no accelerator"  # type: ignore[index]
    prov = entry["provenance"]
    assert isinstance(prov, dict)
    assert prov["code_commit"] == fast and prov["repeats"] == 4
    assert prov["command"] == [sys.executable, "bench.py", "{commit}", "{repeat}"]
    assert prov["script_blob"] == git(camp.path, "rev-parse", f"{fast}:bench.py").strip()
    assert prov["environment"]["python"].startswith("Python 3")
    assert (camp.path / "src/speed.txt").read_text() == "999\n"
    assert len(_worktrees(camp)) == 1
    assert not list((camp.path / ".git/ledger/campaign-run").iterdir())


def test_a_run_with_another_benchmark_script_is_refused_until_adjust(camp: Repo) -> None:
    base = git(camp.path, "log", "-1", "--format=%H", "--grep=the base").strip()
    assert _run(camp, base, "base")[0] == 0
    ok(camp, "arm")
    # A candidate that changes the measuring script with its code, the script then put
    # back: HEAD's script is the epoch's, the candidate's is not.
    camp.write("src/speed.txt", "130\n")
    camp.write("bench.py", bench(3))
    sneaky = commit(camp, "perf(src): faster, and a friendlier benchmark")
    camp.write("bench.py", bench(1))
    commit(camp, "chore: restore the benchmark")
    nxt = ok(camp, "next", "--json").json()
    assert nxt["action"] == "benchmark-adjust" and "[benchmark-changed]" in nxt["reason"], nxt
    before = fingerprint(camp.path)
    code, _, err = _run(camp, sneaky, "promoted", "--reason", "faster")
    assert code == 1 and "[benchmark-changed]" in err, err
    assert "benchmark adjust" in err
    assert fingerprint(camp.path) == before
    # After an adjustment, the old base re-measured by the tool runs the epoch's script.
    camp.write("bench.py", bench(2))
    commit(camp, "perf(bench): exclude warm-up")
    ok(camp, "benchmark", "adjust", "--reason", "warm-up excluded")
    code, _, err = _run(camp, base, "base")
    assert code == 0, err
    entry = _entry(camp, base)
    assert entry["repeats"]["speed"] == [199.0, 200.0, 201.0]  # type: ignore[index]
    prov = entry["provenance"]
    assert isinstance(prov, dict)
    assert prov["script_blob"] == git(camp.path, "rev-parse", "HEAD:bench.py").strip()


def test_run_refuses_bad_input_with_one_line(camp: Repo) -> None:
    base = git(camp.path, "log", "-1", "--format=%H", "--grep=the base").strip()
    both = gl(camp, "candidate", "record", "--commit", base, "--verdict", "base", "--run",
              "--speed", "100")  # fmt: skip
    assert both.code == 2 and len(both.err.strip().splitlines()) == 1, both.err
    camp.write("src/speed.txt", "-5\n")
    negative = commit(camp, "perf(src): broken probe")
    before = fingerprint(camp.path)
    done = gl(camp, "candidate", "record", "--commit", negative, "--verdict", "base", "--run")
    assert done.code == 2 and "never negative" in done.err, done.err
    assert "Traceback" not in done.err
    assert len(_worktrees(camp)) == 1
    assert fingerprint(camp.path) == before
