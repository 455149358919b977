"""A version that history says can never be concluded: `next` points at `void`, not at a
`conclude` that will be refused forever (#15: one reverted --no-verify edit wedged the loop)."""

from __future__ import annotations

from tests.helpers import Repo, measure, register


def test_next_offers_void_for_a_tampered_open_version_and_the_loop_goes_on(repo: Repo) -> None:
    assert register(repo, "V1").code == 0
    repo.write("src/model.py", "WIDTH = 2\n")
    repo.commit_all("feat(model): V1 — wider\n\nLedger-Step: V1")
    measure(repo, "V1", "recent", 10.0)
    entry = repo.path / "training_log" / "V1.md"
    entry.write_text(entry.read_text().replace("A bet", "A better bet", 1))
    repo.commit_all("docs(ledger): a sharper bet", "--no-verify")
    nxt = repo.ok("next", "--json").json()
    assert nxt["action"] == "void", nxt
    assert nxt["command"].startswith("git ledger void V1 --reason")
    assert "<REASON>" in nxt["placeholders"]
    refused = repo.run("conclude", "V1", "--verdict", "inconclusive", "--next", "x")
    assert refused.code == 1
    repo.ok("void", "V1", "--reason", "its registration was edited after results")
    after = repo.ok("next", "--json").json()
    assert after["action"] == "register" and "V2" in after["command"], after
