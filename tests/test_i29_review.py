"""Issue 29: reviewing a pull request. On a feature branch ``report`` covers the
versions since the merge base with the default branch (``--all``: every one); a
voided version shows as void in status, show, report and compare."""

from __future__ import annotations

import json

from tests.helpers import Repo, register


def _version(repo: Repo, vid: str, mean: float) -> None:
    assert register(repo, vid, bet=f"bet of {vid}").code == 0
    repo.write("src/model.py", f"VERSION = {vid!r}\n")
    repo.commit_all(f"feat: {vid}")
    for seed in (1, 2, 3):
        src = repo.path.parent / f"{vid}-{seed}.json"
        src.write_text(json.dumps({"score": mean + 0.1 * seed}))
        repo.ok("record", vid, "--gate", "recent", "--seed", str(seed), str(src))
    repo.ok("conclude", vid, "--verdict", "confirmed", "--next", "go on")


def _ledger(bare_repo: Repo) -> Repo:
    bare_repo.git("symbolic-ref", "HEAD", "refs/heads/main")
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
