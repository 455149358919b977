"""Issue 26: reflections that say something; the Goodhart reflection audits its target."""

from __future__ import annotations

from tests.helpers import Repo, measure, register

SECTIONS = (
    "Eval stability",
    "Variance estimate",
    "Subsystem audit",
    "Revert-and-branch option",
    "Untouched dimensions",
    "Observability-gap audit",
)


def _goodhart(repo: Repo) -> None:
    register(repo, "V1")
    measure(repo, "V1", "recent", 10.0)
    repo.ok("conclude", "V1", "--verdict", "confirmed", "--next", "go on")
    for vid in ("V2", "V3", "V4"):
        register(repo, vid)
        measure(repo, vid, "recent", 10.0)
        repo.ok("conclude", vid, "--verdict", "refuted", "--next", "go on")


def test_a_section_repeating_another_does_not_count(repo: Repo) -> None:
    register(repo, "V1")
    measure(repo, "V1", "recent", 10.0)
    repo.ok("conclude", "V1", "--verdict", "confirmed", "--next", "go on")
    repo.ok("reflect", "V1")
    path = repo.path / "training_log/REFLECTION_V1.md"
    text = path.read_text()
    same = text
    for title in SECTIONS:
        same = same.replace(f"## {title}\n", f"## {title}\n\nThe numbers look fine to us.\n")
    path.write_text(same)
    refused = repo.run("reflect", "V1", "--commit")
    assert refused.code == 1
    # The first answer counts; the five that repeat it do not.
    assert "Eval stability" not in refused.err.split("is not complete:")[1]
    assert all(t in refused.err for t in SECTIONS[1:])
    own = text
    for title in SECTIONS:
        own = own.replace(f"## {title}\n", f"## {title}\n\nWe looked at {title.lower()} closely.\n")
    path.write_text(own)
    repo.ok("reflect", "V1", "--commit")


def test_the_goodhart_reflection_keeps_or_retires_its_target(repo: Repo) -> None:
    repo.write(
        "ledger.toml",
        (repo.path / "ledger.toml").read_text()
        + '\n[gates.older]\nmetric = "score"\n[gates.older.metrics]\nscore = "$.score"\n',
    )
    repo.commit_all("chore: a second gate")
    _goodhart(repo)
    repo.ok("reflect", "V4")
    path = repo.path / "training_log/REFLECTION_V4.md"
    text = path.read_text()
    assert "target_gate: recent" in text and "## Target audit" in text
    assert "`recent` (seeds): 16 result(s) of concluded versions" in text
    for title in SECTIONS:
        text = text.replace(
            f"## {title}\n", f"## {title}\n\nWe looked at {title.lower()} closely.\n"
        )
    path.write_text(text)
    undecided = repo.run("reflect", "V4", "--commit")
    assert undecided.code == 1 and "Target audit" in undecided.err
    path.write_text(
        text.replace(
            "## Target audit\n",
            "## Target audit\n\nThe window sits at the top of its regime's spread.\n"
            "We fitted its noise: retire\n",
        )
    )
    repo.ok("reflect", "V4", "--commit")
    retired = register(repo, "V5", extra=("--cites", "REFLECTION_V4"))
    assert retired.code == 1 and "retired-target" in retired.err
    # next never proposes the retired gate as the target.
    nxt = repo.ok("next", "--json").json()
    assert "--gate recent" not in nxt["command"] and "--gate older" in nxt["command"]
    assert register(repo, "V5", gate="older", extra=("--cites", "REFLECTION_V4")).code == 0
