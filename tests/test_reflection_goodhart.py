"""Issue 49: the Goodhart reflection (after refutations in a row) can be completed by an
agent that does only what ``next`` and the refusal say. Both name what each section
lacks in the same words (reflectiontext.lacking): a target audit written in prose
without its decision was refused as "empty" while ``next`` said "fill in its six
sections" of a file that has seven, 202 steps of a 250-step walk."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.helpers import Repo, Templates, new_ledger
from tests.test_i26_reflection import _goodhart

UNDECIDED = "Target audit: end it with a line 'keep as target' or 'retire'"
REL = "training_log/REFLECTION_V4.md"


@pytest.fixture
def goodhart_repo(bare_repo: Repo, templates: Templates) -> Repo:
    """Three refutations in a row after a confirmed V1: the Goodhart tripwire is due."""
    return templates.over("goodhart-due", bare_repo, lambda p: _goodhart(new_ledger(p)))


def _titles(text: str) -> list[str]:
    return re.findall(r"^## (.+)$", text, re.M)


def _answer_in_prose(path: Path) -> str:
    """Prose of its own in every section, the target audit without its decision line."""
    text = path.read_text()
    for title in _titles(text):
        text = text.replace(
            f"## {title}\n", f"## {title}\n\nWe looked at {title.lower()} closely.\n", 1
        )
    path.write_text(text)
    return text


def _reflect(repo: Repo) -> tuple[Path, str]:
    nxt = repo.ok("next", "--json").json()
    assert nxt["action"] == "reflect" and nxt["command"] == "git ledger reflect V4", nxt
    wrote = repo.ok(*nxt["command"].split()[2:])
    return repo.path / REL, wrote.out


def test_next_and_the_refusal_name_the_undecided_target_audit_alike(goodhart_repo: Repo) -> None:
    repo = goodhart_repo
    path, wrote = _reflect(repo)
    titles = _titles(path.read_text())
    assert len(titles) == 7 and "Target audit" in titles
    # The count and the names come from the file written, not a number in the code.
    assert f"fill in its 7 sections ({', '.join(titles)})" in wrote
    untouched = repo.ok("next", "--json").json()
    assert untouched["action"] == "complete-reflection"
    for title in titles:
        assert f"{title}: " in untouched["reason"], (title, untouched["reason"])
    assert "Eval stability: empty;" in untouched["reason"]
    # In the file's order, each named once.
    at = [untouched["reason"].index(f"{title}: ") for title in titles]
    assert at == sorted(at), untouched["reason"]

    _answer_in_prose(path)
    refused = repo.run("reflect", "V4", "--commit")
    nxt = repo.ok("next", "--json").json()
    assert refused.code == 1 and UNDECIDED in refused.err, refused.err
    assert nxt["command"] == "git ledger reflect V4 --commit" and UNDECIDED in nxt["reason"]
    # Only what is missing: every other section, written in prose, counts.
    assert not any(f"{t}:" in refused.err for t in titles if t != "Target audit")
    assert not any(f"{t}:" in nxt["reason"] for t in titles if t != "Target audit")
    assert "empty" not in refused.err and "empty" not in nxt["reason"]

    path.write_text(
        path.read_text().replace(
            "We looked at target audit closely.\n",
            "We looked at target audit closely.\nThe window sits inside its spread: keep as target\n",
        )
    )
    repo.ok("reflect", "V4", "--commit")
    after = repo.ok("next", "--json").json()
    assert after["action"] != "complete-reflection" and "REFLECTION_V4" not in after["reason"]
    assert after["action"] == "register" and "--cites REFLECTION_V4" in after["command"], after


def test_an_agent_doing_what_it_is_told_is_never_told_the_same_thing_twice(
    goodhart_repo: Repo,
) -> None:
    """Each finding, done as it says, is gone at the next refusal: the repeated sections
    rewritten in their own words, the undecided target audit decided."""
    repo = goodhart_repo
    path, _ = _reflect(repo)
    skeleton = path.read_text()
    # The same words under every title: the first counts, the others repeat it.
    answers = {title: "The numbers look fine." for title in _titles(skeleton)}
    told: list[str] = []
    for _ in range(4):
        text = skeleton
        for title, answer in answers.items():
            text = text.replace(f"## {title}\n", f"## {title}\n\n{answer}\n", 1)
        path.write_text(text)
        refused = repo.run("reflect", "V4", "--commit")
        if refused.code == 0:
            break
        reason = repo.ok("next", "--json").json()["reason"]
        findings = refused.err.split("is not complete: ", 1)[1].split(" (do what", 1)[0]
        lacks = [f.strip() for f in findings.split(";")]
        assert all(f in reason for f in lacks), (lacks, reason)
        assert not set(lacks) & set(told), (lacks, told)
        told += lacks
        for finding in lacks:
            title, _, what = finding.partition(": ")
            if what.startswith("repeats another section"):
                answers[title] = f"We studied {title.lower()} in its own terms."
            elif what.startswith("end it with a line"):
                answers[title] += "\nkeep as target"
    else:
        pytest.fail(f"still refused after four rounds: {told}")
    assert sum(f.startswith("Variance estimate: repeats") for f in told) == 1, told
    assert UNDECIDED in told, told
    assert repo.ok("next", "--json").json()["action"] == "register"


def test_the_skeleton_says_outside_any_comment_how_the_target_audit_ends(
    goodhart_repo: Repo,
) -> None:
    path, _ = _reflect(goodhart_repo)
    visible = re.sub(r"<!--.*?-->", "", path.read_text(), flags=re.S)
    audit = visible.split("## Target audit\n", 1)[1].split("\n## ", 1)[0]
    assert "a line 'keep as target' or 'retire'" in audit, audit
    # Said as a quoted line, the ledger's: it is not taken for the writer's decision.
    refused = goodhart_repo.run("reflect", "V4", "--commit")
    assert refused.code == 1 and "Target audit: empty (write what you found" in refused.err


def test_a_reflection_committed_with_git_undecided_is_named_alike(goodhart_repo: Repo) -> None:
    """Committed by hand (git commit, not the verb): next names what is left the same."""
    repo = goodhart_repo
    path, _ = _reflect(repo)
    _answer_in_prose(path)
    repo.commit_all("docs(ledger): REFLECTION_V4")
    nxt = repo.ok("next", "--json").json()
    assert nxt["action"] == "complete-reflection", nxt
    assert (
        nxt["reason"]
        == f"REFLECTION_V4 is committed incomplete; to fill in: {UNDECIDED}; then commit it"
    )


def test_what_a_section_lacks_is_said_by_its_cause() -> None:
    from ledger.core.reflectiontext import lacking, read_sections

    body = (
        "## Eval stability\n\nn/a\n\n"
        "## Variance estimate\n\nSigma is small here.\n\n"
        "## Subsystem audit\n\nSigma is small here.\n\n"
        "## Revert-and-branch option\n\nRevert.\n\n"
        "## Untouched dimensions\n\n<!-- a comment -->\n> quoted\n\n"
        "## Target audit\n\nThe bets fit the noise; we retire it\n"
    )
    assert lacking(*read_sections(body, True), 3) == (
        "Eval stability: no answer of its own (placeholders, 'n/a', '-', 'ok' and the "
        "quoted '>' lines do not count)",
        "Subsystem audit: repeats another section word for word (answer it in its own words)",
        "Revert-and-branch option: 1 word (write at least 3)",
        "Untouched dimensions: empty",
        "Observability-gap audit: absent (add a '## Observability-gap audit' heading and "
        "answer under it)",
    )
    assert lacking(*read_sections(body, False), 3)[-1].startswith("Observability-gap audit")


def test_over_mcp_next_and_the_refusal_say_the_same_words(
    goodhart_repo: Repo, tmp_path: Path
) -> None:
    from tests.test_mcp import Agent, cli_next, drive

    repo = goodhart_repo
    path, _ = _reflect(repo)
    _answer_in_prose(path)
    cli = cli_next(repo)

    async def steps(client: Agent) -> None:
        nxt = await client.data("next")
        assert nxt == cli and UNDECIDED in nxt["reason"], nxt
        call = nxt["call"]
        assert call == {"tool": "reflect", "arguments": {"after": "V4", "commit": True}}, call
        error = await client.error(call["tool"], **call["arguments"])
        assert error["kind"] == "refused" and UNDECIDED in error["message"], error

    drive(repo, tmp_path, steps)
