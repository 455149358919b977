"""Issue 26: the latest concluded entry's Next-steps text is the brief for the new
version, shown by `status` and `next` (it was visible only in `show`)."""

from __future__ import annotations

from tests.helpers import Repo, measure, register


def test_status_and_next_carry_the_latest_conclusions_next_steps_as_the_brief(
    repo: Repo,
) -> None:
    register(repo, "V1")
    measure(repo, "V1", "recent", 10.0)
    repo.ok("conclude", "V1", "--verdict", "inconclusive", "--next", "try a wider layer on crisis")
    status = repo.ok("status", "--json").json()
    assert status["brief"] == {"from": "V1", "text": "try a wider layer on crisis"}
    nxt = repo.ok("next", "--json").json()
    assert nxt["action"] == "register"
    assert nxt["brief"] == "try a wider layer on crisis"
    assert "brief (next steps of V1): try a wider layer on crisis" in repo.ok("status").out
    assert "# brief: try a wider layer on crisis" in repo.ok("next").out
    # The newest conclusion wins; while the new version is open it is still its brief.
    register(repo, "V2")
    assert repo.ok("next", "--json").json()["brief"] == "try a wider layer on crisis"
    measure(repo, "V2", "recent", 10.0)
    repo.ok("conclude", "V2", "--verdict", "inconclusive", "--next", "measure crisis first")
    assert repo.ok("status", "--json").json()["brief"]["from"] == "V2"
    assert repo.ok("next", "--json").json()["brief"] == "measure crisis first"


def test_no_brief_before_any_conclusion(repo: Repo) -> None:
    assert repo.ok("status", "--json").json()["brief"] is None
    assert "brief" not in repo.ok("next", "--json").json()
