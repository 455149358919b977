"""Re-measurements, exhausted subsystems and values no statistic can hold, through the CLI."""

from __future__ import annotations

import json
from pathlib import Path

from tests.helpers import Repo, fingerprint, measure, register


def test_remeasure_is_kept_apart_and_never_changes_the_verdict(repo: Repo) -> None:
    register(repo, "V1")
    measure(repo, "V1", "recent", 10.0)
    repo.ok("conclude", "V1", "--verdict", "confirmed", "--next", "go on")
    before = (repo.path / "training_log/V1.md").read_text()
    rerun = repo.path.parent / "rerun.json"
    rerun.write_text('{"score": 25.0}')
    refused = repo.run("record", "V1", "--gate", "recent", "--seed", "1", str(rerun))
    assert refused.code == 1 and "--remeasure" in refused.err
    out = repo.ok(
        "record",
        "V1",
        "--gate",
        "recent",
        "--seed",
        "1",
        str(rerun),
        "--remeasure",
        "eval stability",
        "--json",
    ).json()
    stored = json.loads((repo.path / out["path"]).read_text())
    assert stored["provenance"]["remeasure"] == "eval stability"
    assert out["path"].endswith("seed-1-r1000.json")
    assert repo.trailers()["Ledger-Remeasure"] == "eval stability"
    assert (repo.path / "training_log/V1.md").read_text() == before
    # The standing baseline still stands on the four original seeds.
    rows = repo.ok("baseline", "--json").json()
    assert rows[0]["n"] == 4 and rows[0]["mean"] < 12


def test_huge_values_are_refused_at_record_and_the_repo_is_untouched(repo: Repo) -> None:
    register(repo, "V1")
    huge = repo.path.parent / "huge.json"
    huge.write_text('{"score": 1e300}')
    repo.git("status")  # refresh the index stat cache first: that is not a change
    print_before = fingerprint(repo.path)
    result = repo.run("record", "V1", "--gate", "recent", "--seed", "1", str(huge))
    assert result.code == 2 and "overflows" in result.err
    assert len(result.err.strip().splitlines()) <= 2
    assert fingerprint(repo.path) == print_before


def test_reflection_is_prefilled_and_filler_answers_do_not_count(repo: Repo) -> None:
    register(repo, "V1")
    measure(repo, "V1", "recent", 10.0)
    repo.ok("conclude", "V1", "--verdict", "confirmed", "--next", "go on")
    for vid in ("V2", "V3", "V4"):
        assert register(repo, vid, extra=("--subsystem", "carry")).code == 0
        measure(repo, vid, "recent", 10.0)
        repo.ok("conclude", vid, "--verdict", "refuted", "--next", "go on")
    rerun = repo.path.parent / "rerun.json"
    rerun.write_text('{"score": 11.0}')
    # Allowed while the reflection is pending: the reflection needs the number.
    repo.ok(
        "record", "V1", "--gate", "recent", "--seed", "1", str(rerun), "--remeasure", "seed check"
    )
    repo.ok("reflect")
    path = repo.path / "training_log/REFLECTION_V4.md"
    text = path.read_text()
    assert "> V1 `recent` 1: re-measured 11" in text
    assert "> V4: gate `recent`, subsystem carry, refuted" in text
    assert "goodhart-tripwire" in text
    sections = (
        "Eval stability",
        "Variance estimate",
        "Subsystem audit",
        "Revert-and-branch option",
        "Untouched dimensions",
        "Observability-gap audit",
    )
    filler = text
    for title, answer in zip(sections, ("n/a", "-", "ok", "N/A.", "none", "todo"), strict=True):
        filler = filler.replace(f"## {title}\n", f"## {title}\n\n{answer}\n")
    path.write_text(filler)
    refused = repo.run("reflect", "V4", "--commit")
    assert refused.code == 1
    assert all(title in refused.err for title in sections)
    real = text.replace("exhausted: []\n", "exhausted:\n- carry\n")
    for title in sections:
        real = real.replace(
            f"## {title}\n", f"## {title}\n\nWe looked at {title.lower()} closely.\n"
        )
    path.write_text(real)
    repo.ok("reflect", "V4", "--commit")
    again = register(repo, "V5", extra=("--subsystem", "carry", "--cites", "REFLECTION_V4"))
    assert again.code == 1 and "exhausted" in again.err and "--force" in again.err
    forced = register(
        repo,
        "V5",
        extra=("--subsystem", "carry", "--cites", "REFLECTION_V4", "--force", "new evidence"),
    )
    assert forced.code == 0, forced.err
    assert repo.trailers()["Ledger-Force"] == "new evidence"


def test_conclude_dry_run_prints_what_the_numbers_allow_and_writes_nothing(repo: Repo) -> None:
    register(repo, "V1")
    measure(repo, "V1", "recent", 10.0)
    repo.ok("conclude", "V1", "--verdict", "confirmed", "--next", "go on")
    register(repo, "V2", extra=("--effect", "20"))
    measure(repo, "V2", "recent", 14.0)
    repo.git("status")
    before = fingerprint(repo.path)
    out = repo.ok("conclude", "V2", "--dry-run", "--json").json()
    assert fingerprint(repo.path) == before
    assert out["allowed"] == ["refuted", "inconclusive"]
    assert "registered effect" in out["refused"]["confirmed"]
    text = repo.ok("conclude", "V2", "--dry-run").out
    assert "confirmed: contradicted" in text and "refuted: allowed" in text
    repo.ok("conclude", "V2", "--verdict", "refuted", "--next", "bigger bet")
    entry = (repo.path / "training_log/V2.md").read_text()
    assert "short of the registered effect 20: refuted" in entry
    missing = repo.run("conclude", "V1")
    assert missing.code == 2 and "--dry-run" in missing.err


def test_next_after_a_refuted_version_offers_reverting_its_code(repo: Repo) -> None:
    import subprocess

    repo.ok("hooks", "install")
    register(repo, "V1")
    measure(repo, "V1", "recent", 10.0)
    repo.ok("conclude", "V1", "--verdict", "confirmed", "--next", "go on")
    register(repo, "V2")
    repo.write("src/model.py", "WIDTH = 2\n")
    repo.commit_all("feat(model): V2 — wider")
    assert repo.trailers()["Ledger-Step"] == "V2"
    measure(repo, "V2", "recent", 10.0)
    repo.ok("conclude", "V2", "--verdict", "refuted", "--next", "revert")
    nxt = repo.ok("next", "--json").json()
    assert nxt["action"] == "revert-or-build-on"
    assert "--parent V2" in nxt["reason"]
    done = subprocess.run(
        ["sh", "-c", nxt["command"]], cwd=repo.path, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert not (repo.path / "src/model.py").exists()
    assert (repo.path / "training_log/V2.md").exists()


def test_fields_diff_aligns_records_by_key(tmp_path: Path) -> None:
    from tests.helpers import ledger

    trades = [
        {"cycle": 1, "symbol": "AAA", "side": "buy", "pnl": 1.0},
        {"cycle": 2, "symbol": "BBB", "side": "sell", "pnl": 2.0},
        {"cycle": 3, "symbol": "CCC", "side": "buy", "pnl": 3.0},
    ]
    drifted = [trades[0], {"cycle": 1, "symbol": "ZZZ", "side": "buy", "pnl": 9.0}, *trades[1:]]
    drifted[3] = {**trades[2], "pnl": 3.5}
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps({"trades": trades}))
    b.write_text(json.dumps({"trades": drifted}))
    by_index = ledger(tmp_path, "fields-diff", str(a), str(b), "--json")
    assert by_index.code == 1 and by_index.json()["first_divergence"]["path"] == "$.trades[1].cycle"
    keyed = ledger(tmp_path, "fields-diff", str(a), str(b), "--key", "cycle,symbol,side", "--json")
    assert keyed.code == 1
    assert (
        keyed.json()["first_divergence"]["path"] == '$.trades[cycle=3,symbol="CCC",side="buy"].pnl'
    )
    b.write_text(json.dumps({"trades": [drifted[0], drifted[2], {**trades[2]}]}))
    same = ledger(tmp_path, "fields-diff", str(a), str(b), "--key", "cycle,symbol,side")
    assert same.code == 0 and "identical" in same.out
    bad = ledger(tmp_path, "fields-diff", str(a), str(b), "--key", "cycle,,side")
    assert bad.code == 2
