"""Secondary metrics are shown, not only stored: show, diff and the report list them all."""

from __future__ import annotations

from tests.helpers import Repo
from tests.test_next_walk_states import register_cache, shop


def test_show_diff_and_report_list_every_metric_primary_first(bare_repo: Repo) -> None:
    repo = shop(bare_repo, 'hit_rate = { path = "$.hit_rate", direction = "higher" }\n')
    for vid, size in (("V1", None), ("V2", 192)):
        register_cache(repo, vid)
        if size:
            repo.write("src/cache.py", f"SIZE = {size}\n")
            repo.commit_all(f"feat(cache): {vid} — size {size}")
        repo.ok("run", vid, "--gate", "recent", "--seeds", "1,2")
        repo.ok("conclude", vid, "--verdict", "confirmed", "--next", "x")
    shown = repo.ok("show", "V2", "--json").json()["metrics"]
    assert [m["metric"] for m in shown] == ["score", "hit_rate"]
    hit = shown[1]
    assert hit["baseline"] == "V1" and abs(hit["delta"] - (192 / 256 - 64 / 128)) < 1e-9
    text = repo.ok("show", "V2").out
    assert "hit_rate (higher)" in text and "+0.25" in text
    diff = repo.ok("diff", "V1", "V2", "--json").json()["metrics"]
    assert [m["metric"] for m in diff] == ["score", "hit_rate"]
    md = repo.ok("diff", "V1", "V2", "--format", "md").out
    assert "| recent | hit_rate | 0.5000 | 0.7500 | +0.2500 |" in md
    report = repo.ok("report", "--format", "md").out
    assert (
        "### Every metric" in report and "| V2 | hit_rate | 2 | 0.7500 | +0.2500 vs V1 |" in report
    )
