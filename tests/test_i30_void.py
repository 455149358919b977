"""Issue 30: ``void`` never rewrites the past. A concluded version whose history verifies
keeps its verdict (void is refused, nothing written); a tampered concluded one can still
be voided, which is what ``next`` proposes for it."""

from __future__ import annotations

from tests.helpers import Repo, fingerprint, measure, register
from tests.test_tamper import V1, hand_commit


def concluded(repo: Repo, verdict: str = "refuted") -> Repo:
    assert register(repo, "V1").code == 0
    measure(repo, "V1", "recent", 10.0, seeds=(1, 2, 3))
    repo.ok("conclude", "V1", "--verdict", verdict, "--next", "x", "--override", "t")
    return repo


def test_void_of_an_honest_concluded_version_is_refused(repo: Repo) -> None:
    concluded(repo, "confirmed")
    before = fingerprint(repo.path)
    done = repo.run("void", "V1", "--reason", "the baseline is inconvenient")
    assert done.code == 1, done.out + done.err
    assert "rewrite" in done.err and "concluded (confirmed)" in done.err
    assert fingerprint(repo.path) == before
    status = repo.ok("status", "--json").json()
    assert any(v["id"] == "V1" and v["state"] != "void" for v in status["recent"]), status


def test_void_of_a_refuted_version_never_silences_the_tripwire(repo: Repo) -> None:
    concluded(repo, "refuted")
    before = fingerprint(repo.path)
    assert repo.run("void", "V1", "--reason", "forget it").code == 1
    assert fingerprint(repo.path) == before


def test_a_tampered_concluded_version_can_still_be_voided(repo: Repo) -> None:
    concluded(repo, "confirmed")
    text = (repo.path / V1).read_text()
    repo.write(V1, text.replace("bet: A bet", "bet: A better bet", 1))
    hand_commit(repo, "docs: sharper", V1)
    assert repo.run("verify").code == 1
    nxt = repo.ok("next", "--json").json()
    assert nxt["action"] == "void", nxt
    assert repo.run("void", "V1", "--reason", "its registration was edited").code == 0
