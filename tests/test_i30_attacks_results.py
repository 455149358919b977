"""Issue 30, the adversary's pass: a result withdrawn (a whole `git revert` of its record)
after its version's conclusion changes the evidence the verdict stated, and a confirmed
version's results are the standing baseline every later verdict is judged against."""

from __future__ import annotations

from tests.helpers import Repo, git
from tests.test_i30_tamper import published  # noqa: F401 (a fixture)
from tests.test_server import push
from tests.test_tamper import hand_commit

SEED3 = "training_log/results/V1/recent/seed-3.json"


def test_a_result_withdrawn_after_the_verdict_is_a_finding(published: Repo) -> None:  # noqa: F811
    record = published.git("log", "-1", "--format=%H", "--", SEED3).strip()
    published.ok("conclude", "V1", "--verdict", "refuted", "--next", "x", "--override", "t")
    published.git("-c", "core.hooksPath=/dev/null", "revert", "--no-edit", record)
    revert = published.head()
    result = published.run("verify")
    assert result.code == 1, result.out
    assert f"{revert[:10]} {SEED3}: [append-only-results]" in result.out
    assert "withdrawn after its conclusion" in result.out
    remote = published.path.parent / "remote.git"
    before = git(remote, "rev-parse", "main").strip()
    done = push(published, "HEAD:refs/heads/main")
    assert done.returncode != 0 and "[append-only-results]" in done.stderr, done.stderr
    assert git(remote, "rev-parse", "main").strip() == before


def test_a_result_withdrawn_before_the_verdict_is_still_a_note(published: Repo) -> None:  # noqa: F811
    record = published.git("log", "-1", "--format=%H", "--", SEED3).strip()
    published.git("-c", "core.hooksPath=/dev/null", "revert", "--no-edit", record)
    result = published.run("verify")
    assert result.code == 0 and "withdrawn" in result.out, result.out


def test_a_replacement_forged_after_the_verdict_is_a_finding(published: Repo) -> None:  # noqa: F811
    """record refuses --replace on a concluded version; a hand commit that writes what it
    would have written (record trailers, provenance.replaced) is refused by history too."""
    import json

    published.ok("conclude", "V1", "--verdict", "refuted", "--next", "x", "--override", "t")
    seed1 = published.path / "training_log/results/V1/recent/seed-1.json"
    data = json.loads(seed1.read_text())
    data["metrics"]["score"] = 99.0
    data["provenance"]["replaced"] = "the first run was misconfigured"
    seed1.write_text(json.dumps(data, sort_keys=True, indent=2) + "\n")
    message = "record(recent): V1 seed 1\n\nLedger-Transition: record\nLedger-Step: V1"
    forged = hand_commit(published, message, str(seed1.relative_to(published.path)))
    result = published.run("verify")
    assert result.code == 1, result.out
    assert f"{forged[:10]} training_log/results/V1/recent/seed-1.json: [append-only-results]" in (
        result.out
    )
    assert "replaced after its conclusion" in result.out
    done = push(published, "HEAD:refs/heads/main")
    assert done.returncode != 0 and "[append-only-results]" in done.stderr, done.stderr
