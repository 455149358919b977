"""Issue 26: the observability backlog. The reflection's sixth section proposes deltas
(what, where, effort S/M/L, ship-now or queue); the ship-now ones are tied to the next
registration, the queued ones are generated into OBSERVABILITY-BACKLOG.md, status
shows the queue, and a later registration ships from it."""

from __future__ import annotations

import yaml

from tests.helpers import Repo, measure, register

SECTIONS = (
    "Eval stability",
    "Variance estimate",
    "Subsystem audit",
    "Revert-and-branch option",
    "Untouched dimensions",
)
DELTAS = (
    "- what: per-window fill prices in the results JSON; where: scripts/eval.py; effort: S; "
    "ship-now\n"
    "- what: seed of the data split in provenance; where: src/data.py; effort: S; ship-now\n"
    "- what: a latency histogram per gate; where: src/trace.py; effort: M; queue\n"
)


def _front(repo: Repo, vid: str) -> dict[str, object]:
    text = (repo.path / "training_log" / f"{vid}.md").read_text()
    return dict(yaml.safe_load(text.split("---\n")[1]))


def _reflect(repo: Repo, after: str) -> None:
    repo.ok("reflect", after)
    path = repo.path / f"training_log/REFLECTION_{after}.md"
    text = path.read_text()
    for title in SECTIONS:
        text = text.replace(f"## {title}\n", f"## {title}\n\nWe looked at {title.lower()}.\n")
    text = text.replace("## Observability-gap audit\n", f"## Observability-gap audit\n\n{DELTAS}")
    path.write_text(text)
    repo.ok("reflect", after, "--commit")


def test_deltas_ship_with_the_next_registration_or_wait_in_the_backlog(repo: Repo) -> None:
    repo.ok("hooks", "install")
    register(repo, "V1")
    measure(repo, "V1", "recent", 10.0)
    repo.ok("conclude", "V1", "--verdict", "inconclusive", "--next", "instrument first")
    _reflect(repo, "V1")
    view = repo.path / "training_log" / "OBSERVABILITY-BACKLOG.md"
    text = view.read_text()
    assert "<!-- ledger:begin observability-backlog -->" in text
    assert "| OBS-V1-3 | a latency histogram per gate | src/trace.py | M | queued |" in text
    assert "| OBS-V1-1 | per-window fill prices in the results JSON |" in text
    status = repo.ok("status", "--json").json()
    assert [d["id"] for d in status["backlog"]["queued"]] == ["OBS-V1-3"]
    assert "OBS-V1-3 [M] a latency histogram per gate (src/trace.py)" in repo.ok("status").out
    # The next registration ships the two ship-now deltas, recorded in its entry.
    out = register(repo, "V2", extra=("--cites", "REFLECTION_V1"))
    assert out.code == 0, out.err
    assert "ships (observability backlog): OBS-V1-1, OBS-V1-2" in out.out
    assert _front(repo, "V2")["ships"] == ["OBS-V1-1", "OBS-V1-2"]
    assert "| S | shipped with V2 |" in view.read_text()
    assert repo.git("status", "--porcelain") == ""  # the view rode with the registration
    repo.write("src/model.py", "X = 2\n")
    repo.commit_all("feat(model): V2 — instrumented")
    measure(repo, "V2", "recent", 10.0)
    repo.ok("conclude", "V2", "--verdict", "inconclusive", "--next", "ship the histogram")
    # Unknown or already shipped deltas are bad input, nothing written.
    head = repo.head()
    bad = register(repo, "V3", extra=("--ships", "OBS-V9-1"))
    assert bad.code == 2 and "OBS-V9-1" in bad.err
    again = register(repo, "V3", extra=("--ships", "OBS-V1-1"))
    assert again.code == 2 and "already shipped with V2" in again.err
    assert repo.head() == head
    # A later registration ships from the queue.
    later = register(repo, "V3", extra=("--ships", "OBS-V1-3"))
    assert later.code == 0, later.err
    assert _front(repo, "V3")["ships"] == ["OBS-V1-3"]
    assert repo.ok("status", "--json").json()["backlog"]["queued"] == []
    assert "| M | shipped with V3 |" in view.read_text()
    assert repo.ok("verify").code == 0


def test_a_registration_with_nothing_to_ship_writes_no_backlog(repo: Repo) -> None:
    register(repo, "V1")
    assert "ships" not in _front(repo, "V1")
    assert not (repo.path / "training_log" / "OBSERVABILITY-BACKLOG.md").exists()
    assert repo.ok("status", "--json").json()["backlog"] == {"queued": []}
