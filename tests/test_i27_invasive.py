"""Issue 27, campaign: less invasive wins by measure, not by word.

Each candidate's change is measured from git when it is recorded (its kind and
the files and lines it changes). Between candidates whose gains are within noise
of each other, a code change is never promoted over a setting, and a larger diff
only with a recorded ``--larger-diff-reason``; a note that says "less invasive"
decides nothing. ``next`` names the rivals a known commit must beat, on the same
function. Through ``git ledger`` (git's dispatch), hooks installed.
"""

from __future__ import annotations

import json

from tests.helpers import Repo, fingerprint, git
from tests.test_i27_campaign_finish import camp, commit, gl, ok, record  # noqa: F401 (fixture)


def _base(repo: Repo) -> str:
    base = git(repo.path, "log", "-1", "--format=%H", "--grep=the base").strip()
    assert record(repo, base, "base", "100,102,98").code == 0
    ok(repo, "arm")
    return base


def _change(repo: Repo, path: str, lines: int, message: str) -> str:
    repo.write(path, "".join(f"v{i} = {i}\n" for i in range(lines)))
    return commit(repo, message)


def _entry(repo: Repo, sha: str) -> dict[str, object]:
    path = sorted((repo.path / "training_log/candidates").glob(f"{sha[:12]}-*.json"))[-1]
    data: dict[str, object] = json.loads(path.read_text())
    return data


def test_a_code_change_is_not_promoted_over_a_setting_of_equal_gain(camp: Repo) -> None:  # noqa: F811
    _base(camp)
    setting = _change(camp, "src/tuning.toml", 1, "perf(src): more threads")
    done = record(camp, setting, "promoted", "130,131,129", "--reason", "more threads")
    assert done.code == 0, done.err
    entry = _entry(camp, setting)
    assert entry["kind"] == "setting" and entry["diff"] == {"files": 1, "lines": 1}
    rewrite = _change(camp, "src/kernel.py", 12, "perf(src): rewrite the kernel")
    # next names the rival before the measurement: the same rule function record uses.
    nxt = ok(camp, "next", "--json").json()
    assert nxt["action"] == "candidate" and rewrite[:12] in nxt["command"]
    assert "[less-invasive]" in nxt["reason"] and setting[:10] in nxt["reason"]
    assert [r["commit"] for r in nxt["bar"]["less_invasive"]] == [setting]
    before = fingerprint(camp.path)
    words = ("--reason", "a faster kernel", "--notes", "this is the less invasive change")
    refused = record(camp, rewrite, "promoted", "131,130,132", *words)
    assert refused.code == 1, refused.err
    assert "[less-invasive]" in refused.err and "code change" in refused.err
    assert setting[:10] in refused.err and "setting" in refused.err
    assert fingerprint(camp.path) == before
    # A larger-diff reason does not turn code into a setting.
    again = record(camp, rewrite, "promoted", "131,130,132", *words,
                   "--larger-diff-reason", "it is cleaner")  # fmt: skip
    assert again.code == 1 and "[less-invasive]" in again.err
    held = record(camp, rewrite, "held", "131,130,132", "--reason", "no better than the setting")
    assert held.code == 0, held.err
    assert _entry(camp, rewrite)["kind"] == "code"
    assert _entry(camp, rewrite)["diff"] == {"files": 1, "lines": 12}


def test_the_smaller_diff_wins_and_a_larger_one_needs_a_recorded_reason(camp: Repo) -> None:  # noqa: F811
    _base(camp)
    big = _change(camp, "src/big.py", 20, "perf(src): a big change")
    assert record(camp, big, "promoted", "130,131,129", "--reason", "fused loops").code == 0
    small = _change(camp, "src/small.py", 1, "perf(src): a one-line change")
    # Equal gain, smaller diff: promoted without a word about it.
    done = record(camp, small, "promoted", "130,129,131", "--reason", "one flag")
    assert done.code == 0, done.err
    larger = _change(camp, "src/larger.py", 30, "perf(src): a larger change")
    before = fingerprint(camp.path)
    refused = record(camp, larger, "promoted", "131,130,129", "--reason", "rewritten",
                     "--notes", "less invasive, honestly")  # fmt: skip
    assert refused.code == 1 and "[less-invasive]" in refused.err, refused.err
    assert "30 line(s)" in refused.err and "--larger-diff-reason" in refused.err
    assert fingerprint(camp.path) == before
    why = "the small change leaks memory under load"
    kept = record(camp, larger, "promoted", "131,130,129", "--reason", "rewritten",
                  "--larger-diff-reason", why)  # fmt: skip
    assert kept.code == 0, kept.err
    assert _entry(camp, larger)["larger_diff_reason"] == why
    ok(camp, "close", "--summary", "the larger change kept")
    report = (camp.path / "training_log/latest-report.md").read_text()
    assert why in report and "code change of 1 file(s), 30 line(s)" in report


def test_a_kind_is_read_from_the_files_not_declared_less(camp: Repo) -> None:  # noqa: F811
    _base(camp)
    sha = _change(camp, "src/fast.py", 3, "perf(src): fast path")
    before = fingerprint(camp.path)
    done = record(camp, sha, "promoted", "130,131,129", "--reason", "fast", "--kind", "setting")
    assert done.code == 2, done.err
    assert "--kind setting" in done.err and "code change" in done.err
    assert len(done.err.strip().splitlines()) == 1 and "Traceback" not in done.err
    assert fingerprint(camp.path) == before
    dep = _change(camp, "src/requirements.txt", 2, "build(src): pin numpy")
    assert record(camp, sha, "rejected", "99", "--reason", "slower").code == 0
    done = record(camp, dep, "rejected", "99", "--reason", "no gain")
    assert done.code == 0, done.err
    assert _entry(camp, dep)["kind"] == "dependency"
