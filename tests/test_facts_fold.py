"""Issue 47, facts that hold across all of history: an adversary with push access
branches from before the unwelcome results, records the same seeds again with better
numbers, concludes, and merges the real history in with ``git merge -s ours`` (or an
ordinary merge whose conflicts he resolves to his side). Every line passes its own
rules; the merge is where a fact was recorded twice, and ``verify`` (locally and in the
server's pre-receive hook) says so."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.helpers import Repo, git, measure
from tests.test_campaign_batches import _record
from tests.test_i30_tamper import published  # noqa: F401 (a fixture)
from tests.test_preset_history import batches, campaign  # noqa: F401 (fixtures)
from tests.test_server import push
from tests.test_tamper import hand_commit

SEED4 = "training_log/results/V1/recent/seed-4.json"


def _real_then_forged(repo: Repo) -> str:
    """main: seeds 4 and 5 recorded low, V1 refuted, pushed. forged: from before them,
    the same seeds recorded high and V1 confirmed. Returns main's pushed tip."""
    fork = repo.head()
    measure(repo, "V1", "recent", 5.0, seeds=(4, 5))
    repo.ok("conclude", "V1", "--verdict", "refuted", "--next", "x", "--override", "t")
    assert push(repo, "HEAD:refs/heads/main").returncode == 0
    real = repo.head()
    repo.git("switch", "-q", "-c", "forged", fork)
    measure(repo, "V1", "recent", 20.0, seeds=(4, 5))
    repo.ok("conclude", "V1", "--verdict", "confirmed", "--next", "x", "--override", "t")
    assert repo.run("verify").code == 0  # the forged line passes on its own
    return real


def _refused(repo: Repo, rules: tuple[str, ...]) -> None:
    found = repo.run("verify")
    assert found.code == 1, found.out
    for rule in rules:
        assert f"[{rule}]" in found.out, found.out
    remote = repo.path.parent / "remote.git"
    before = git(remote, "rev-parse", "main").strip()
    done = push(repo, "HEAD:refs/heads/main")
    assert done.returncode != 0, done.stderr
    assert "[fact-replaced]" in done.stderr, done.stderr
    assert git(remote, "rev-parse", "main").strip() == before


def test_a_merge_with_strategy_ours_over_the_real_results_is_refused(
    published: Repo,  # noqa: F811
) -> None:
    real = _real_then_forged(published)
    published.git("merge", "-q", "-s", "ours", "--no-edit", real)
    # Every entry equals the forged side's; the real results and verdict read as forged.
    assert "confirmed" in (published.path / "training_log/V1.md").read_text()
    _refused(published, ("fact-replaced",))
    assert "result V1 recent seed-4" in published.run("verify").out
    assert "verdict V1" in published.run("verify").out


def test_a_merge_resolved_to_one_side_is_refused(published: Repo) -> None:  # noqa: F811
    real = _real_then_forged(published)
    merged = published.git("merge", "--no-edit", real, check=False)
    assert published.git("ls-files", "-u").strip(), merged  # the results conflict
    published.git("checkout", "--ours", "--", "training_log")
    hand_commit(published, "Merge branch 'main' into forged", "training_log")
    assert json.loads((published.path / SEED4).read_text())["metrics"]["score"] > 15
    _refused(published, ("fact-replaced",))


def test_a_merge_that_drops_a_side_s_results_is_refused(published: Repo) -> None:  # noqa: F811
    """The forged side does not record seed 5 again: the merge must keep the real one."""
    fork = published.head()
    measure(published, "V1", "recent", 5.0, seeds=(4, 5))
    assert push(published, "HEAD:refs/heads/main").returncode == 0
    real = published.head()
    published.git("switch", "-q", "-c", "forged", fork)
    measure(published, "V1", "recent", 20.0, seeds=(4,))
    published.git("merge", "-q", "-s", "ours", "--no-edit", real)
    assert not (published.path / "training_log/results/V1/recent/seed-5.json").exists()
    found = published.run("verify")
    assert found.code == 1 and "[fact-lost]" in found.out, found.out
    assert "result V1 recent seed-5" in found.out


def test_an_honest_merge_of_the_same_record_and_of_a_withdrawal_is_accepted(
    published: Repo,  # noqa: F811
) -> None:
    """Both sides hold the same record (a clean merge); one side withdrew a result by a
    whole revert, the other recorded another seed: nothing was recorded twice."""
    fork = published.head()
    record = published.git("log", "-1", "--format=%H", "--", "training_log/results").strip()
    published.git("revert", "--no-edit", record)
    published.git("switch", "-q", "-c", "side", fork)
    measure(published, "V1", "recent", 10.0, seeds=(7,))
    published.git("switch", "-q", "main")
    published.git("merge", "-q", "--no-edit", "side")
    done = published.run("verify")
    assert done.code == 0, done.out


def test_the_fold_in_process_on_a_small_history(tmp_path: Path) -> None:
    """Two sides of one base each write results seed-1 and seed-2 (different bytes); one
    side then drops seed-2 and merges the other with -s ours: seed-1 was recorded twice,
    seed-2 is lost, and the fold says so on the merge commit only."""
    from tests.helpers import new_ledger

    repo = new_ledger(tmp_path)
    base = repo.head()
    repo.ok("verify")  # cached: the light reader replays what follows on top of it
    for branch, value in (("a", 1.0), ("b", 2.0)):
        repo.git("switch", "-q", "-c", branch, base)
        entry: dict[str, Any] = {"metrics": {"score": value}, "version": "V1"}
        repo.write("training_log/results/V1/recent/seed-1.json", json.dumps(entry))
        repo.write("training_log/results/V1/recent/seed-2.json", json.dumps(entry))
        hand_commit(repo, f"record {branch}", "training_log")
    repo.git("switch", "-q", "a")
    repo.git("rm", "-q", "training_log/results/V1/recent/seed-2.json")
    hand_commit(repo, "drop", "training_log")
    repo.git("merge", "-q", "-s", "ours", "--no-edit", "b")
    merge = repo.head()

    from ledger.core.context import open_context
    from ledger.core.verify import CACHE_FILE, verify
    from ledger.hooks.history import open_light

    git_dir = repo.path / ".git"
    light = open_light(repo.path, git_dir, git_dir, merge)
    assert light is not None
    try:
        report = verify(light[0], light[1], light[2], merge)  # verify's incremental path
    finally:
        light[0].close()
    fold = [(f.commit, f.rule, f.step) for f in report.findings if f.rule.startswith("fact-")]
    assert sorted(fold) == [(merge, "fact-lost", "V1"), (merge, "fact-replaced", "V1")]
    (git_dir / "ledger" / CACHE_FILE).unlink()
    ctx = open_context(repo.path)
    full = verify(ctx.store, ctx.config, ctx.config_file)  # the whole replay, with pygit2
    assert sorted(full.findings) == sorted(report.findings)


def _forged_merge(repo: Repo, entries: str, forge: Callable[[Repo], None]) -> None:
    """Fork before the last transition that wrote ``entries``, ``forge`` it again on the
    fork, and merge the real history in with -s ours."""
    real = repo.head()
    last = repo.git("log", "-1", "--format=%H", "--", entries).strip()
    repo.git("switch", "-q", "-c", "forged", f"{last}^")
    forge(repo)
    assert repo.run("verify").code == 0  # the forged line passes on its own
    repo.git("merge", "-q", "-s", "ours", "--no-edit", real)


def test_a_candidate_verdict_recorded_again_and_merged_with_ours_is_found(
    campaign: Repo,  # noqa: F811
) -> None:
    last = campaign.git("log", "-1", "--format=%H", "--", "training_log/candidates").strip()
    code = campaign.git("rev-parse", f"{last}^").strip()

    def promote(repo: Repo) -> None:
        done = _record(repo, code, "promoted", "140", "--reason", "it was faster after all")
        assert done.returncode == 0, done.stderr

    _forged_merge(campaign, "training_log/candidates", promote)
    found = campaign.run("verify")
    assert found.code == 1 and "[fact-replaced]" in found.out, found.out
    assert f"candidate verdict candidates/{code[:12]}" in found.out


def test_a_topic_recorded_again_and_merged_with_ours_is_found(batches: Repo) -> None:  # noqa: F811
    def fail(repo: Repo) -> None:
        repo.ok("gate", "topic", "--record", "--fidelity-rate", "0.1", "--mono", "true",
                "--endpoint", "true")  # fmt: skip

    _forged_merge(batches, "training_log/topics", fail)
    found = batches.run("verify")
    assert found.code == 1 and "[fact-replaced]" in found.out, found.out
    assert "topic topics/batch-" in found.out


def test_a_trace_event_appended_on_two_sides_is_found_in_process(tmp_path: Path) -> None:
    """Two sides append event seq 1 to one trace, differently; the merge keeps one."""
    from ledger.core.context import open_context
    from ledger.core.verify import verify
    from tests.helpers import fresh

    repo = fresh(tmp_path)
    repo.ok("init", "--preset", "batches")
    base = repo.head()
    for branch, name in (("a", "start"), ("b", "other")):
        repo.git("switch", "-q", "-c", branch, base)
        line = json.dumps({"event": name, "seq": 1}, sort_keys=True)
        repo.write("training_log/trace/run.jsonl", line + "\n")
        hand_commit(repo, f"trace {branch}", "training_log")
    repo.git("merge", "-q", "-s", "ours", "--no-edit", "a")
    ctx = open_context(repo.path)
    report = verify(ctx.store, ctx.config, ctx.config_file)
    fold = [(f.commit, f.rule, f.message.split(" was ")[0]) for f in report.findings]
    assert (repo.head(), "fact-replaced", "trace event run 1") in fold, report.findings
