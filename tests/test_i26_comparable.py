"""Issue 26: seeds of one version measured on different code commits, or under other
conditions, are flagged; conclude refuses them until re-measured, or with --override."""

from __future__ import annotations

from tests.helpers import Repo
from tests.test_next_walk_states import register_cache, shop


def _code(repo: Repo, size: int) -> None:
    repo.write("src/cache.py", f"SIZE = {size}\n")
    repo.commit_all(f"feat(cache): V2 — size {size}")


def test_seeds_from_two_code_commits_of_a_version_are_refused_until_remeasured(
    bare_repo: Repo,
) -> None:
    repo = shop(bare_repo)
    register_cache(repo, "V1")
    repo.ok("run", "V1", "--gate", "recent", "--seeds", "1,2,3,4")
    repo.ok("conclude", "V1", "--verdict", "confirmed", "--next", "x")
    register_cache(repo, "V2")
    _code(repo, 65)
    repo.ok("run", "V2", "--gate", "recent", "--seeds", "1,2")
    _code(repo, 200)  # the bet changed under the measurement
    repo.ok("run", "V2", "--gate", "recent", "--seeds", "3,4")
    flags = repo.ok("show", "V2", "--json").json()["flags"]
    assert [p.rsplit("/", 1)[1] for p in flags["mixed"]] == ["seed-1.json", "seed-2.json"]
    assert "flagged: V2 has 2 result(s) measured at another code commit" in repo.ok("status").out
    dry = repo.ok("conclude", "V2", "--dry-run", "--json").json()
    assert dry["allowed"] == [] and "another code commit" in dry["blocked"]
    refused = repo.run("conclude", "V2", "--verdict", "confirmed", "--next", "x")
    assert refused.code == 1 and "another code commit" in refused.err
    # next's way out needs no override: measure those seeds again at the code of now.
    nxt = repo.ok("next", "--json").json()
    assert nxt["action"] == "re-measure" and "--seeds 1,2 --replace" in nxt["command"]
    repo.ok("run", "V2", "--gate", "recent", "--seeds", "1,2", "--replace", "code changed")
    assert repo.ok("show", "V2", "--json").json()["flags"]["mixed"] == []
    nxt = repo.ok("next", "--json").json()
    assert nxt["action"] == "conclude" and "--override" not in nxt["command"]
    repo.ok(*nxt["command"].split()[2:-2], "--next", "x")


def test_results_under_other_conditions_are_flagged_and_need_an_override(repo: Repo) -> None:
    from tests.helpers import noisy_results, register

    register(repo, "V1")
    paths = noisy_results(repo.path.parent, 10.0, 0.5, [1, 2, 3], "c")
    for seed, (path, lr) in enumerate(zip(paths, ("0.1", "0.1", "0.2"), strict=True), 1):
        repo.ok("record", "V1", "--gate", "recent", "--seed", str(seed), str(path),
                "--condition", f"lr={lr}")  # fmt: skip
    flags = repo.ok("show", "V1", "--json").json()["flags"]
    assert [p.rsplit("/", 1)[1] for p in flags["mixed"]] == ["seed-3.json"]
    refused = repo.run("conclude", "V1", "--verdict", "confirmed", "--next", "x")
    assert refused.code == 1 and "other conditions" in refused.err
    repo.ok("conclude", "V1", "--verdict", "confirmed", "--next", "x", "--override", "lr is noise")
