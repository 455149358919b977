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


def test_a_noop_gate_the_parent_never_measured_is_no_crash(repo: Repo) -> None:
    """The eval-noise flag compares a no-op gate with the parent; a parent with no
    results on that gate has nothing to compare (this repository's own ledger hit it)."""
    toml = repo.path / "ledger.toml"
    toml.write_text(
        toml.read_text()
        + '\n[gates.other]\nmetric = "score"\nnoise_floor = 1.0\n[gates.other.metrics]\n'
        'score = "$.score"\n'
    )
    repo.commit_all("chore(ledger): a second gate")
    assert register(repo, "V1").code == 0
    repo.write("src/model.py", "WIDTH = 2\n")
    repo.commit_all("feat(model): V1 — wider\n\nLedger-Step: V1")
    measure(repo, "V1", "recent", 10.0)
    repo.ok("conclude", "V1", "--verdict", "inconclusive", "--next", "go on")
    assert register(repo, "V2", extra=("--noop-gates", "other", "--parent", "V1")).code == 0
    repo.write("src/model.py", "WIDTH = 3\n")
    repo.commit_all("feat(model): V2 — wider still\n\nLedger-Step: V2")
    measure(repo, "V2", "recent", 10.0)
    measure(repo, "V2", "other", 50.0)
    repo.ok("conclude", "V2", "--verdict", "inconclusive", "--next", "go on")
    status = repo.run("status", "--json")
    assert status.code == 0, status.err
    assert repo.run("triggers").code in (0, 1)
