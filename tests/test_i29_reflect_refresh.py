"""Issue 29: ``reflect ID --refresh`` rebuilds the evidence of an uncommitted reflection
(today a second ``reflect`` only says "already written"), keeping what was written."""

from __future__ import annotations

from tests.helpers import Repo, measure, register

ANSWER = "The seeds agree within 0.3; the evaluation is stable enough to trust."


def test_reflect_refresh_rebuilds_the_evidence_and_keeps_the_answers(repo: Repo) -> None:
    register(repo, "V1")
    measure(repo, "V1", "recent", 10.0)
    repo.ok("conclude", "V1", "--verdict", "confirmed", "--next", "go on")
    repo.ok("reflect", "V1")
    path = repo.path / "training_log/REFLECTION_V1.md"
    text = path.read_text()
    assert "re-measured" not in text
    path.write_text(
        text.replace("## Eval stability\n\n", f"## Eval stability\n\n{ANSWER}\n\n", 1).replace(
            "exhausted: []", "exhausted:\n- cache", 1
        )
        + "\n## My notes\n\nkept as written\n"
    )
    rerun = repo.path.parent / "rerun.json"
    rerun.write_text('{"score": 25.0}')
    repo.ok("record", "V1", "--gate", "recent", "--seed", "1", str(rerun), "--remeasure", "check")
    again = repo.ok("reflect", "V1")
    assert "already written" in again.out and "--refresh" in again.out
    assert "re-measured" not in path.read_text(), "without --refresh nothing is rewritten"
    done = repo.ok("reflect", "V1", "--refresh")
    assert "refreshed" in done.out
    after = path.read_text()
    section = after.split("## Eval stability\n", 1)[1].split("\n## ", 1)[0]
    assert "> V1 `recent` 1: re-measured 25.00" in section, section
    assert ANSWER in section, "the writer's answer stays in its section"
    assert after.count(ANSWER) == 1
    assert "## My notes\n\nkept as written" in after
    assert "- cache" in after.split("---", 2)[1], "front matter the writer added stays"
    assert after.count("## Variance estimate") == 1
    # Refreshing twice changes nothing more.
    repo.ok("reflect", "V1", "--refresh")
    assert path.read_text() == after


def test_reflect_refresh_needs_a_written_reflection(repo: Repo) -> None:
    register(repo, "V1")
    measure(repo, "V1", "recent", 10.0)
    repo.ok("conclude", "V1", "--verdict", "confirmed", "--next", "go on")
    result = repo.run("reflect", "V1", "--refresh")
    assert result.code == 2 and "does not exist" in result.err
