"""Issue 27, campaign: noise-aware promotion on the shared statistics core, ``held``
with a reason and within noise, no comparison across a benchmark adjustment until
base and head are re-measured, and measurements that cannot be negative.

Through ``git ledger`` (git's dispatch), hooks installed.
"""

from __future__ import annotations

import json

from tests.helpers import Repo, fingerprint, git
from tests.test_i27_campaign_finish import camp, code, gl, ok, record  # noqa: F401 (fixture)


def _base(repo: Repo, speed: str = "100,102,98") -> str:
    base = git(repo.path, "log", "-1", "--format=%H", "--grep=the base").strip()
    assert record(repo, base, "base", speed).code == 0
    ok(repo, "arm")
    return base


def _entry(repo: Repo, sha: str) -> dict[str, object]:
    path = sorted((repo.path / "training_log/candidates").glob(f"{sha[:12]}-*.json"))[-1]
    data: dict[str, object] = json.loads(path.read_text())
    return data


def test_repeats_inside_the_bases_noise_are_held_not_promoted(camp: Repo) -> None:  # noqa: F811
    _base(camp)
    tweak = code(camp, "tweak")
    before = fingerprint(camp.path)
    refused = record(camp, tweak, "promoted", "101,99,103", "--reason", "a bit faster")
    assert refused.code == 1 and "[promotion-evidence]" in refused.err, refused.err
    assert "within noise" in refused.err and "held" in refused.err
    assert "n=3" in refused.err and "σ=" in refused.err and "threshold=" in refused.err
    assert fingerprint(camp.path) == before
    held = record(camp, tweak, "held", "101,99,103", "--reason", "no measurable change")
    assert held.code == 0, held.err
    entry = _entry(camp, tweak)
    assert entry["repeats"] == {"speed": [101.0, 99.0, 103.0]}
    comparison = entry["comparison"]
    assert isinstance(comparison, dict)
    assert comparison["outcome"] == "within noise" and comparison["n"] == 3
    assert comparison["sigma"] > 0 and comparison["threshold"] > abs(comparison["delta"])
    fast = code(camp, "fast")
    promoted = record(camp, fast, "promoted", "130,131,129", "--reason", "fused loop")
    assert promoted.code == 0, promoted.err
    assert "improved" in promoted.out
    ok(camp, "close", "--summary", "fast promoted")
    report = (camp.path / "training_log/latest-report.md").read_text()
    for line in report.splitlines():
        if line.startswith("- ") and ("held" in line or "promoted" in line):
            assert "n=3" in line and "σ=" in line and "Δ=" in line and "threshold=" in line, line
    md = ok(camp, "report").out
    assert "threshold" in md and "within noise" in md and "improved" in md


def test_held_needs_a_reason_and_stays_within_noise_of_the_head(camp: Repo) -> None:  # noqa: F811
    _base(camp, "200,201,199")
    slow = code(camp, "slow")
    no_reason = record(camp, slow, "held", "10")
    assert no_reason.code == 2 and "needs --reason" in no_reason.err
    far = record(camp, slow, "held", "10,11,9", "--reason", "keep it")
    assert far.code == 1 and "[held-evidence]" in far.err, far.err
    assert record(camp, slow, "rejected", "10,11,9", "--reason", "slower").code == 0


def test_a_single_value_without_a_floor_is_diagnostic_only(camp: Repo) -> None:  # noqa: F811
    _base(camp, "100")
    fast = code(camp, "fast")
    done = record(camp, fast, "promoted", "130", "--reason", "fused loop")
    assert done.code == 0 and "diagnostic only" in done.out, done.out
    camp.write("training_log/NOTES.md", "# Notes\n")
    git(camp.path, "add", "-A")
    git(camp.path, "commit", "-q", "-m", "docs(campaign): notes")
    ok(camp, "close", "--summary", "fast promoted")
    finish = ok(camp, "finish")
    assert "diagnostic only" in finish.out and fast[:10] in finish.out
    other = code(camp, "other")
    held = record(camp, other, "held", "129", "--reason", "about the same")
    assert held.code == 1 and "no noise estimate" in held.err, held.err


def test_after_adjust_no_candidate_is_compared_until_base_and_head_are_remeasured(
    camp: Repo,  # noqa: F811
) -> None:
    base = _base(camp, "100")
    fast = code(camp, "fast")
    assert record(camp, fast, "promoted", "200", "--reason", "fused loop").code == 0
    camp.write("bench.py", "print(2)  # slower timer\n")
    git(camp.path, "add", "-A")
    git(camp.path, "commit", "-q", "-m", "perf(bench): timer")
    ok(camp, "benchmark", "adjust", "--reason", "timer excludes warm-up")
    assert record(camp, base, "base", "50").code == 0
    # The regression the old code promoted: better than the fresh base, worse than the
    # head would be once re-measured.
    slow = code(camp, "slow")
    early = record(camp, slow, "promoted", "60", "--reason", "beats the base")
    assert early.code == 1 and "[stale-head]" in early.err, early.err
    nxt = ok(camp, "next", "--json").json()
    assert nxt["action"] == "re-measure-head" and fast[:12] in nxt["command"], nxt
    assert record(camp, fast, "held", "100", "--reason", "re-measured").code == 0
    late = record(camp, slow, "promoted", "60", "--reason", "beats the base")
    assert late.code == 1 and "[promotion-evidence]" in late.err, late.err
    assert "regressed" in late.err


def test_negative_memory_or_time_is_bad_input(camp: Repo) -> None:  # noqa: F811
    base = git(camp.path, "log", "-1", "--format=%H", "--grep=the base").strip()
    before = fingerprint(camp.path)
    for args in (
        ("--measure", "speed=100", "--measure", "peak_cpu_gb=-1.5"),
        ("--measure", "speed=-3", "--measure", "peak_cpu_gb=1.5"),
        ("--measure", "speed=100,-1", "--measure", "peak_cpu_gb=1.5"),
    ):
        done = gl(
            camp, "candidate", "record", "--commit", base, "--verdict", "base", *args,
            "--measure", "accel_mem_gb=N/A: none", "--measure", "correctness=0",
        )  # fmt: skip
        assert done.code == 2 and "never negative" in done.err, done.err
        assert len(done.err.strip().splitlines()) == 1
    assert fingerprint(camp.path) == before
