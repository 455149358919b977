"""The standing-baseline walk remembered across processes (ledger.core.baselinecache)
answers exactly what a walk that remembers nothing answers, as the ledger grows."""

from __future__ import annotations

from dataclasses import replace

from ledger.core.context import open_context
from ledger.presets.versions.baseline import high_water_marks, standing_baseline
from tests.helpers import Repo, measure, register


def _conclude(repo: Repo, vid: str, verdict: str) -> None:
    repo.ok("conclude", vid, "--verdict", verdict, "--next", "continue")


def _walks(repo: Repo) -> tuple[list[str], list[str], str | None, str | None]:
    """(marks, best) from a state that uses the cache, and from one that does not."""
    cached = open_context(repo.path).state()
    fresh = replace(cached, state_dir=None)
    best_cached = standing_baseline(cached, "recent")
    best_fresh = standing_baseline(fresh, "recent")
    return (
        high_water_marks(cached, "recent"),
        high_water_marks(fresh, "recent"),
        best_cached.id if best_cached else None,
        best_fresh.id if best_fresh else None,
    )


def test_cached_baseline_walk_agrees_with_a_fresh_one_as_versions_are_added(
    repo: Repo,
) -> None:
    cache = repo.path / ".git" / "ledger" / "cache" / "baseline-history.json"
    for vid, mean, verdict in (
        ("V1", 10.0, "confirmed"),
        ("V2", 14.0, "confirmed"),
        ("V3", 14.1, "inconclusive"),
    ):
        register(repo, vid)
        measure(repo, vid, "recent", mean)
        _conclude(repo, vid, verdict)
    marks, fresh_marks, best, fresh_best = _walks(repo)
    assert cache.exists()
    assert (marks, best) == (fresh_marks, fresh_best) == (["V1", "V2"], "V2")
    assert _walks(repo) == (["V1", "V2"], ["V1", "V2"], "V2", "V2")  # read from the cache

    register(repo, "V4")
    measure(repo, "V4", "recent", 20.0)
    _conclude(repo, "V4", "confirmed")  # resumes after V3, compares V4 only
    assert _walks(repo) == (["V1", "V2", "V4"], ["V1", "V2", "V4"], "V4", "V4")


def test_a_changed_noise_floor_is_a_new_walk_not_a_cached_answer(repo: Repo) -> None:
    for vid, mean in (("V1", 10.0), ("V2", 14.0)):
        register(repo, vid)
        measure(repo, vid, "recent", mean)
        _conclude(repo, vid, "confirmed")
    assert _walks(repo)[:2] == (["V1", "V2"], ["V1", "V2"])
    repo.ok("config", "set", "gates.recent.noise_floor", "50.0", "--reason", "a wider floor")
    state = open_context(repo.path).state()
    # The same versions under a floor that swallows V2's gain: V1 stays the best.
    wide = state.config.model_copy(
        update={
            "gates": {
                **state.config.gates,
                "recent": state.config.gates["recent"].model_copy(update={"noise_floor": 50.0}),
            }
        }
    )
    cached = replace(state, config=wide)
    fresh = replace(state, config=wide, state_dir=None)
    assert high_water_marks(cached, "recent") == high_water_marks(fresh, "recent") == ["V1"]
