"""Issue 29: reviewing a pull request. On a feature branch ``report`` covers the
versions since the merge base with the default branch (``--all``: every one); a
voided version shows as void in status, show, report and compare."""

from __future__ import annotations

import json
import re

from tests.helpers import Repo, register

CONFIG = """\
[gates.recent]
metric = "score"
noise_floor = 0.5
[gates.recent.metrics]
score = "$.score"
acc = "$.acc"
"""


def _version(repo: Repo, vid: str, mean: float) -> None:
    assert register(repo, vid, bet=f"bet of {vid}").code == 0
    repo.write("src/model.py", f"VERSION = {vid!r}\n")
    repo.commit_all(f"feat: {vid}")
    for seed in (1, 2, 3):
        src = repo.path.parent / f"{vid}-{seed}.json"
        src.write_text(json.dumps({"score": mean + 0.1 * seed, "acc": mean / 100}))
        repo.ok("record", vid, "--gate", "recent", "--seed", str(seed), str(src))
    repo.ok("conclude", vid, "--verdict", "confirmed", "--next", "go on")


def _ledger(bare_repo: Repo) -> Repo:
    bare_repo.git("symbolic-ref", "HEAD", "refs/heads/main")
    bare_repo.write("ledger.toml", CONFIG)
    bare_repo.ok("init")
    bare_repo.ok("hooks", "install")
    return bare_repo


def test_report_on_a_feature_branch_covers_only_the_branch_versions(bare_repo: Repo) -> None:
    repo = _ledger(bare_repo)
    _version(repo, "V1", 10.0)
    _version(repo, "V2", 20.0)
    repo.git("switch", "-q", "-c", "feature/deeper-trees")
    _version(repo, "V3", 30.0)
    assert register(repo, "V4", bet="still open").code == 0

    data = json.loads(repo.ok("report", "--format", "json").out)
    assert [v["id"] for v in data["versions"]] == ["V3", "V4"]
    assert data["branch"]["name"] == "feature/deeper-trees"
    assert data["branch"]["default"] == "main"
    assert data["branch"]["merge_base"] == repo.git("rev-parse", "main").strip()
    # The baseline's "change" column is against where the branch started.
    recent = {b["gate"]: b for b in data["baseline"]}["recent"]
    assert recent["version"] == "V3" and recent["change"] == "new best (was V2)"

    md = repo.ok("report").out
    assert "for feature/deeper-trees (since it left main" in md
    versions = md.split("### Versions", 1)[1].split("###", 1)[0]
    assert "| V3 |" in versions and "| V4 |" in versions
    assert "| V1 |" not in versions and "| V2 |" not in versions

    everything = json.loads(repo.ok("report", "--format", "json", "--all").out)
    assert [v["id"] for v in everything["versions"]] == ["V1", "V2", "V3", "V4"]
    assert everything["branch"] is None

    repo.git("switch", "-q", "main")
    on_main = json.loads(repo.ok("report", "--format", "json").out)
    assert [v["id"] for v in on_main["versions"]] == ["V1", "V2"]
    assert on_main["branch"] is None


def test_show_has_a_per_seed_table_with_sd_and_interval_and_labels_each_delta(
    bare_repo: Repo,
) -> None:
    repo = _ledger(bare_repo)
    _version(repo, "V1", 10.0)
    _version(repo, "V2", 20.0)
    data = repo.ok("show", "V2", "--json").json()
    (seeds,) = data["seeds"]
    assert seeds["gate"] == "recent"
    assert [(r["key"], r["metrics"]["score"]) for r in seeds["rows"]] == [
        ("1", 20.1),
        ("2", 20.2),
        ("3", 20.3),
    ]
    summary = seeds["summary"]["score"]
    assert summary["n"] == 3 and abs(summary["sd"] - 0.1) < 1e-9
    lo, hi = summary["ci95"]
    # t(0.975, 2) = 4.303: the interval is mean ± 4.303 · 0.1 / √3.
    assert abs((hi - lo) / 2 - 4.3027 * 0.1 / 3**0.5) < 1e-3
    (evidence,) = data["evidence"]
    assert evidence["test"] == "paired over 3 shared seeds"
    metric, other = data["metrics"]
    assert metric["delta_test"] == "difference of means" and abs(metric["sd"] - 0.1) < 1e-9
    assert other["metric"] == "acc" and other["sd"] == 0.0

    text = repo.ok("show", "V2").out
    assert "paired over 3 shared seeds" in text
    assert "per seed: recent" in text and "95% CI" in text
    per_seed = text.split("per seed: recent", 1)[1]
    assert [ln.split()[0] for ln in per_seed.strip().splitlines()[1:4]] == ["1", "2", "3"]
    assert "Δ of means" in text


def test_a_voided_version_shows_as_void_everywhere(bare_repo: Repo) -> None:
    repo = _ledger(bare_repo)
    _version(repo, "V1", 10.0)
    _version(repo, "V2", 20.0)
    # Its registration rewritten behind the hooks' back: its results can no longer count.
    path = repo.path / "training_log" / "V2.md"
    path.write_text(path.read_text().replace("bet: bet of V2", "bet: a different bet"))
    repo.git("commit", "-qam", "docs: rewrite V2", "--no-verify")
    repo.ok("void", "V2", "--reason", "registration rewritten after the results")

    status = repo.ok("status").out
    row = next(ln for ln in status.splitlines() if ln.startswith("V2 "))
    assert row.split()[2] == "void" and "confirmed" not in row
    assert {v["id"]: v["state"] for v in repo.ok("status", "--json").json()["recent"]}["V2"] == (
        "void"
    )

    shown = repo.ok("show", "V2").out.splitlines()
    assert shown[0].startswith("V2 [void]") and "confirmed" not in shown[0]
    assert repo.ok("show", "V2", "--json").json()["state"] == "void"

    report = json.loads(repo.ok("report", "--format", "json").out)
    assert {v["id"]: v["verdict"] for v in report["versions"]} == {"V1": "confirmed", "V2": "void"}
    md = repo.ok("report").out
    v2 = next(ln for ln in md.splitlines() if ln.startswith("| V2 |"))
    assert "| void |" in v2 and "confirmed" not in v2

    rows = repo.ok("compare", "--json").json()["rows"]
    assert {r["id"]: r["status"] for r in rows} == {"V1": "confirmed", "V2": "void"}


def test_plot_metric_draws_another_metric_of_the_gate(bare_repo: Repo) -> None:
    repo = _ledger(bare_repo)
    _version(repo, "V1", 10.0)
    _version(repo, "V2", 20.0)
    out = repo.path.parent / "acc.svg"
    repo.ok("plot", "--gate", "recent", "--metric", "acc", "--out", str(out))
    svg = out.read_text()
    tips = re.findall(r"<title>(V\d+): ([\d.]+) ", svg)
    assert tips == [("V1", "0.1"), ("V2", "0.2")]
    primary = repo.path.parent / "score.svg"
    repo.ok("plot", "--gate", "recent", "--out", str(primary))
    assert re.findall(r"<title>(V\d+): ([\d.]+) ", primary.read_text()) == [
        ("V1", "10.2"),
        ("V2", "20.2"),
    ]
    bad = repo.run("plot", "--gate", "recent", "--metric", "recall")
    assert bad.code == 2 and "acc, score" in bad.err and "Traceback" not in bad.err
