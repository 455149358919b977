"""Issue 30: ingest reads the configuration frozen at the version's registration. A
`config set` of a gate's metric mapping after V1 was registered, made once its output is
known, never decides what V1's results say (record and run alike)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.helpers import Repo
from tests.test_i30_tamper import published  # noqa: F401 (a fixture)
from tests.test_next_walk_states import register_cache, shop

SEED7 = "training_log/results/V1/recent/seed-7.json"


def test_record_uses_the_mapping_frozen_at_registration(
    published: Repo,  # noqa: F811
    tmp_path: Path,
) -> None:
    published.ok("config", "set", "gates.recent.metrics.score", "$.other", "--reason", "remap")
    source = tmp_path / "r.json"
    source.write_text(json.dumps({"score": 1.0, "other": 99.0}))
    published.ok("record", "V1", "--gate", "recent", "--seed", "7", str(source))
    stored = json.loads((published.path / SEED7).read_text())
    assert stored["metrics"]["score"] == 1.0, stored
    assert published.run("verify").code == 0


def test_run_uses_the_mapping_frozen_at_registration(bare_repo: Repo) -> None:
    repo = shop(bare_repo)
    register_cache(repo, "V1")
    repo.write("src/cache.py", "SIZE = 96\n")
    repo.commit_all("feat(cache): V1 — a bigger cache")
    repo.ok("config", "set", "gates.recent.metrics.score", "$.missing", "--reason", "remap")
    repo.ok("run", "V1", "--gate", "recent", "--seeds", "1")
    stored = json.loads((repo.path / "training_log/results/V1/recent/seed-1.json").read_text())
    assert isinstance(stored["metrics"]["score"], (int, float)), stored
