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
    # Issue 26: the tripwire's reflection decides about its target gate.
    real = real.replace(
        "## Target audit\n",
        "## Target audit\n\nThe window is typical of its regime: keep as target\n",
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


def test_run_remeasure_takes_its_own_slots_keeps_the_verdict_and_feeds_the_noise(
    bare_repo: Repo,
) -> None:
    import math

    from tests.scripted import Plan

    repo = bare_repo
    plan = Plan(repo, ("recent",))
    register(repo, "V1")
    plan.means("V1", recent=10.0)
    plan.run("V1", "recent")
    repo.ok("conclude", "V1", "--verdict", "confirmed", "--next", "go on")
    entry = (repo.path / "training_log/V1.md").read_text()
    baseline = repo.ok("baseline", "--json").json()[0]
    repo.git("status")
    untouched = fingerprint(repo.path)
    # Refused before anything runs: a concluded version without --remeasure, a
    # re-measurement that would also replace, and an open version with it.
    refused = repo.run("run", "V1", "--gate", "recent", "--seeds", "1")
    assert refused.code == 1 and "--remeasure" in refused.err
    both = repo.run(
        "run", "V1", "--gate", "recent", "--seeds", "1", "--remeasure", "x", "--replace", "y"
    )
    assert both.code == 2 and len(both.err.strip().splitlines()) <= 2
    assert fingerprint(repo.path) == untouched
    # Re-measured: seed 1 comes back 0.3 higher, seed 2 0.4 lower (slot 1000).
    plan.shift("V1", "recent", "1", 1000, 0.3)
    plan.shift("V1", "recent", "2", 1000, -0.4)
    out = repo.ok(
        "run", "V1", "--gate", "recent", "--seeds", "1,2", "--remeasure", "seed check", "--json"
    ).json()
    assert [r["recorded"].rsplit("/", 1)[1] for r in out["runs"]] == [
        "seed-1-r1000.json",
        "seed-2-r1000.json",
    ]
    assert repo.trailers()["Ledger-Remeasure"] == "seed check"
    # Twice more with replicates: the next free slots, never the version's own files;
    # the DETERMINISM outcome is stored beside the original's, not over it.
    again = repo.ok(
        "run", "V1", "--gate", "recent", "--seeds", "1", "--replicates", "2",
        "--remeasure", "twice more", "--json",
    ).json()  # fmt: skip
    assert [r["recorded"].rsplit("/", 1)[1] for r in again["runs"]] == [
        "seed-1-r1001.json",
        "seed-1-r1002.json",
    ]
    stored = json.loads((repo.path / "training_log/determinism/V1-recent-r1001.json").read_text())
    assert stored["remeasure"] == "twice more" and stored["pass"] is True
    assert "DETERMINISM (recent, re-measurement: twice more): PASS" in repo.ok("show", "V1").out
    for name in ("seed-1-r1000", "seed-2-r1000", "seed-1-r1001", "seed-1-r1002"):
        data = json.loads((repo.path / f"training_log/results/V1/recent/{name}.json").read_text())
        assert data["provenance"]["remeasure"] in ("seed check", "twice more")
    # The verdict and the baseline stand on the original four seeds.
    assert (repo.path / "training_log/V1.md").read_text() == entry
    assert repo.ok("baseline", "--json").json()[0] == baseline
    # ... and the re-measurements feed the evaluation's own σ in the reflection:
    # differences 0.3, -0.4, 0, 0 (slots 1001/1002 are unshifted) -> √(0.25/8).
    repo.ok("reflect", "V1")
    text = (repo.path / "training_log/REFLECTION_V1.md").read_text()
    sigma = math.sqrt((0.3**2 + 0.4**2) / (2 * 4))
    assert f"`recent`: eval noise σ {sigma:.4g} from 4 re-measurement(s) of V1" in text
    variance = text.split("## Variance estimate", 1)[1].split("##", 1)[0]
    assert f"eval noise σ {sigma:.4g} from 4 re-measurement(s)" in variance


def test_a_detached_run_keeps_the_remeasure(bare_repo: Repo) -> None:
    from tests.scripted import Plan

    repo = bare_repo
    plan = Plan(repo, ("recent",))
    register(repo, "V1")
    plan.means("V1", recent=10.0)
    plan.run("V1", "recent")
    repo.ok("conclude", "V1", "--verdict", "confirmed", "--next", "go on")
    repo.ok("run", "V1", "--gate", "recent", "--seeds", "3", "--remeasure", "detached", "--detach")
    repo.ok("wait", "--timeout", "120")
    data = json.loads((repo.path / "training_log/results/V1/recent/seed-3-r1000.json").read_text())
    assert data["provenance"]["remeasure"] == "detached"
    assert repo.trailers()["Ledger-Remeasure"] == "detached"


def test_the_evidence_says_paired_or_unpaired_and_an_override_explains_a_refuted_gain(
    repo: Repo,
) -> None:
    register(repo, "V1")
    measure(repo, "V1", "recent", 10.0)
    repo.ok("conclude", "V1", "--verdict", "confirmed", "--next", "go on")
    register(repo, "V2")
    measure(repo, "V2", "recent", 14.0)
    paired = repo.ok("conclude", "V2", "--dry-run", "--json").json()["gates"][0]
    assert (
        paired["pairing"] == "paired" and "paired over 4 shared seeds" in paired["threshold_source"]
    )
    # Improved beyond noise: 'refuted' beside it needs the override that explains it.
    refused = repo.run("conclude", "V2", "--verdict", "refuted", "--next", "revert")
    assert refused.code == 1 and "verdict-contradicted" in refused.err
    done = repo.ok(
        "conclude", "V2", "--verdict", "refuted", "--next", "revert", "--override", "a leak"
    )
    assert "improved beyond noise, yet refuted by override (a leak)" in done.out
    shown = repo.ok("show", "V2").out
    assert "refuted" in shown and "improved" in shown and "OVERRIDE: a leak" in shown
    entry = (repo.path / "training_log/V2.md").read_text()
    assert "yet refuted by override (a leak)" in entry and "→ improved." not in entry
    report = repo.ok("report", "--format", "md").out
    assert "Δ vs parent" in report and "Δ vs best" in report
    # [stats] pairing = "off": the same seeds are compared unpaired, and the MDE follows.
    repo.ok("config", "set", "stats.pairing", '"off"', "--reason", "compare pooled")
    register(repo, "V3")
    measure(repo, "V3", "recent", 14.0)
    pooled = repo.ok("conclude", "V3", "--dry-run", "--json").json()["gates"][0]
    assert pooled["pairing"] == "unpaired" and 'pairing = "off"' in pooled["threshold_source"]
    assert pooled["mde"] > paired["mde"]  # σ is the noise floor here: SE √2 larger unpaired


def test_the_reflection_word_count_is_configurable(repo: Repo) -> None:
    register(repo, "V1")
    measure(repo, "V1", "recent", 10.0)
    repo.ok("conclude", "V1", "--verdict", "confirmed", "--next", "go on")
    repo.ok("config", "set", "triggers.reflection_min_words", "8", "--reason", "say more")
    repo.ok("reflect", "V1")
    path = repo.path / "training_log/REFLECTION_V1.md"
    text = path.read_text()
    titles = [line[3:] for line in text.splitlines() if line.startswith("## ")]
    assert len(titles) == 6

    def answer(words: str) -> str:
        out = text
        for i, title in enumerate(titles):
            # Each section its own answer (issue 26: a repeat does not count), same length.
            own = words.replace("Seeds", f"Seeds{i}")
            out = out.replace(f"## {title}\n", f"## {title}\n\n{own}\n")
        return out

    path.write_text(answer("Seeds one to four agree closely."))  # five words
    short = repo.run("reflect", "V1", "--commit")
    assert short.code == 1 and all(t in short.err for t in titles)
    path.write_text(answer("Seeds one to four agree closely, within the noise floor."))
    repo.ok("reflect", "V1", "--commit")


def test_the_pid_record_of_a_run_keeps_its_remeasure_for_record_finished() -> None:
    """A `run --remeasure` killed before its commit is recorded later by
    `run --record-finished` from its PID record: the reason must survive the trip."""
    from ledger.presets.versions.ingest import Measurement
    from ledger.presets.versions.runrecords import finished_from, measurement_record

    m = Measurement(version="V1", gate="recent", seed="1", replicate=1000, remeasure="why")
    record = {
        "finished": True,
        "measurement": json.loads(json.dumps(measurement_record(m))),
        "argv": ["python3"],
        "out": "out.json",
        "log": "out.log",
        "exit_code": 0,
        "seconds": 1.5,
    }
    found = finished_from(record)
    assert found is not None and found.spec.measurement == m
