"""The versions loop end to end through the CLI, with results of known noise."""

from __future__ import annotations

import json

from tests.helpers import Repo, measure, register


def _conclude(repo: Repo, vid: str, verdict: str, *extra: str) -> None:
    repo.ok("conclude", vid, "--verdict", verdict, "--next", "continue", *extra)


def test_register_writes_entry_from_template_and_commits_it(repo: Repo) -> None:
    result = register(repo, "V199", bet="Wider cache lifts the score")
    assert result.code == 0, result.err
    assert repo.trailers() == {"Ledger-Transition": "register", "Ledger-Step": "V199"}
    text = (repo.path / "training_log/V199.md").read_text()
    assert "## Hypothesis" in text and "Wider cache lifts the score" in text
    assert repo.git("status", "--porcelain") == ""
    assert (
        "| [V199](V199.md) | Wider cache lifts the score | recent | open |"
        in (repo.path / "training_log/README.md").read_text()
    )


def test_ids_default_to_parent_plus_one_and_siblings(repo: Repo) -> None:
    register(repo, "V199")
    measure(repo, "V199", "recent", 10.0)
    _conclude(repo, "V199", "confirmed")
    assert register(repo).code == 0
    assert (repo.path / "training_log/V200.md").exists()
    measure(repo, "V200", "recent", 10.0)
    _conclude(repo, "V200", "inconclusive")
    assert register(repo, extra=("--parent", "V199")).code == 0
    assert (repo.path / "training_log/V200a.md").exists()


def test_register_refuses_two_sentences_unknown_gate_and_open_version(repo: Repo) -> None:
    bad = register(repo, "V1", bet="Cache more. Also tune lr.")
    assert bad.code == 2 and "one sentence" in bad.err
    unknown = register(repo, "V1", gate="nope")
    assert unknown.code == 2 and "unknown gate 'nope'" in unknown.err
    assert register(repo, "V1").code == 0
    second = register(repo, "V2")
    assert second.code == 1 and "V1 is still open" in second.err


def test_record_refuses_bad_results_and_duplicates(repo: Repo) -> None:
    register(repo, "V1")
    cases = {
        "missing.json": ('{"other": 1}', "metric 'score' is missing"),
        "string.json": ('{"score": "high"}', "not a finite number"),
        "nan.json": ('{"score": NaN}', "invalid JSON"),
        "list.json": ("[1, 2]", "must be a JSON object"),
    }
    for name, (content, reason) in cases.items():
        path = repo.path.parent / name
        path.write_text(content)
        result = repo.run("record", "V1", "--gate", "recent", "--seed", "1", str(path))
        assert result.code == 2 and reason in result.err, (name, result.err)
    good = repo.path.parent / "good.json"
    good.write_text('{"score": 1.5}')
    repo.ok(
        "record", "V1", "--gate", "recent", "--seed", "1", str(good), "--condition", "sleep=0.5"
    )
    dup = repo.run("record", "V1", "--gate", "recent", "--seed", "1", str(good))
    assert dup.code == 2 and "--replace" in dup.err
    repo.ok("record", "V1", "--gate", "recent", "--seed", "1", str(good), "--replace", "rerun")
    stored = json.loads((repo.path / "training_log/results/V1/recent/seed-1.json").read_text())
    assert stored["metrics"] == {"score": 1.5}
    assert stored["provenance"]["code_commit"]
    assert stored["provenance"]["dirty"] is False
    assert len(stored["provenance"]["source_sha256"]) == 64


def test_goodhart_arc_blocks_registration_until_a_complete_reflection(repo: Repo) -> None:
    """V199 -> V202: three refutations on one gate fire the tripwire; only a full reflection lifts it."""
    register(repo, "V199")
    measure(repo, "V199", "recent", 10.0)
    _conclude(repo, "V199", "confirmed")
    for vid in ("V200", "V201", "V202"):
        assert register(repo, vid).code == 0
        measure(repo, vid, "recent", 9.8)
        _conclude(repo, vid, "refuted")

    fired = repo.run("triggers", "--json")
    assert fired.code == 1
    rules = [f["rule"] for f in fired.json()]
    assert rules[0] == "goodhart-tripwire"
    assert fired.json()[0]["evidence"]["versions"] == ["V200", "V201", "V202"]
    text = repo.run("triggers").out
    assert "V200, V201, V202" in text

    blocked = register(repo, "V203")
    assert blocked.code == 1 and "reflection-due" in blocked.err

    repo.ok("reflect")
    path = repo.path / "training_log/REFLECTION_V202.md"
    body = path.read_text()
    filled = body
    for section in (
        "Eval stability",
        "Variance estimate",
        "Subsystem audit",
        "Revert-and-branch option",
        "Untouched dimensions",
    ):
        filled = filled.replace(f"## {section}\n", f"## {section}\n\nChecked: {section.lower()}.\n")
    # Issue 26: the tripwire's reflection decides about its target gate.
    filled = filled.replace(
        "## Target audit\n", "## Target audit\n\nIt is typical of its regime: keep as target\n"
    )
    path.write_text(filled)  # the sixth section stays empty
    refused = repo.run("reflect", "V202", "--commit")
    assert refused.code == 1 and "Observability-gap audit" in refused.err
    repo.commit_all("docs(ledger): incomplete reflection", "--no-verify")
    assert register(repo, "V203").code == 1, "an incomplete reflection must not lift the block"
    assert repo.ok("status", "--json").json()["incomplete_reflection"] == "REFLECTION_V202"

    path.write_text(filled.rstrip("\n") + "\n\nWe log per-seed timings now.\n")
    repo.commit_all("docs(ledger): complete the reflection", "--no-verify")
    assert repo.run("triggers").code == 0
    uncited = register(repo, "V203")
    assert uncited.code == 1 and "--cites REFLECTION_V202" in uncited.err
    assert register(repo, "V203", extra=("--cites", "REFLECTION_V202")).code == 0


def test_confirmed_inside_noise_needs_override_which_stays_visible(repo: Repo) -> None:
    register(repo, "V1")
    measure(repo, "V1", "recent", 10.0)
    _conclude(repo, "V1", "confirmed")
    register(repo, "V2")
    measure(repo, "V2", "recent", 10.2)  # Δ well inside 2·SE with noise_floor 1
    refused = repo.run("conclude", "V2", "--verdict", "confirmed", "--next", "x")
    assert refused.code == 1 and "within noise" in refused.err
    _conclude(repo, "V2", "confirmed", "--override", "product decision")
    shown = repo.ok("show", "V2", "--json").json()
    assert shown["override"] == "product decision"
    assert shown["evidence"][0]["outcome"] == "within noise"
    assert repo.trailers()["Ledger-Override"] == "product decision"
    status = repo.ok("status", "--json").json()
    assert status["overrides"] == [{"id": "V2", "reason": "product decision"}]


def test_clear_improvement_cannot_be_refuted_and_is_confirmed(repo: Repo) -> None:
    register(repo, "V1")
    measure(repo, "V1", "recent", 10.0)
    _conclude(repo, "V1", "confirmed")
    register(repo, "V2")
    measure(repo, "V2", "recent", 14.0)
    refused = repo.run("conclude", "V2", "--verdict", "refuted", "--next", "x")
    assert refused.code == 1 and "beyond noise" in refused.err
    _conclude(repo, "V2", "confirmed")
    evidence = repo.ok("show", "V2", "--json").json()["evidence"][0]
    for key in ("n", "n_eff", "mean", "sigma", "delta", "se", "threshold", "threshold_source"):
        assert evidence[key] is not None, key
    assert evidence["outcome"] == "improved"


def test_editing_a_registered_bet_with_no_verify_is_caught_at_conclude(repo: Repo) -> None:
    register(repo, "V1", bet="Original bet")
    path = repo.path / "training_log/V1.md"
    path.write_text(path.read_text().replace("bet: Original bet", "bet: A better-sounding bet"))
    tamper = repo.commit_all("docs: tweak wording", "--no-verify")
    path.write_text(path.read_text().replace("bet: A better-sounding bet", "bet: Original bet"))
    repo.commit_all("docs: revert tweak", "--no-verify")
    measure(repo, "V1", "recent", 10.0)
    result = repo.run("conclude", "V1", "--verdict", "confirmed", "--next", "x")
    assert result.code == 1
    assert tamper[:10] in result.err and "frozen-registration" in result.err


def test_readme_baseline_equals_baseline_json_and_shows_regressions(repo: Repo) -> None:
    register(repo, "V1")
    measure(repo, "V1", "recent", 10.0)
    _conclude(repo, "V1", "confirmed")
    register(repo, "V2")
    measure(repo, "V2", "recent", 6.0)
    _conclude(repo, "V2", "refuted")
    rows = repo.ok("baseline", "--json").json()
    assert len(rows) == 1
    row = rows[0]
    assert row["version"] == "V1" and row["latest_version"] == "V2"
    assert row["status"].startswith("REGRESSION: V2")
    readme = (repo.path / "training_log/README.md").read_text()
    block = readme.split("<!-- ledger:begin baseline -->\n")[1].split("<!-- ledger:end")[0]
    line = block.strip().splitlines()[2]
    cells = [c.strip() for c in line.strip("|").split("|")]
    assert cells[0] == row["gate"] and cells[2] == row["version"]
    assert cells[4] == str(row["n"]) and cells[6] == row["latest_version"]
    assert cells[8] == row["status"]


def test_phase_declare_parks_registration_until_resumed(repo: Repo) -> None:
    register(repo, "V1")
    measure(repo, "V1", "recent", 10.0)
    _conclude(repo, "V1", "confirmed")
    repo.ok(
        "phase",
        "declare",
        "--reason",
        "plateau",
        "--exhausted",
        "caching",
        "--resume-criterion",
        "new eval set",
        # Issue 26: none of the three conditions holds here, so it takes a stated reason.
        "--force",
        "testing the parking",
    )
    parked = register(repo, "V2")
    assert parked.code == 1 and "phase-parked" in parked.err
    assert "new eval set" in (repo.path / "training_log/CAMPAIGN_STATUS.md").read_text()
    repo.ok("phase", "resume", "--criterion", "new eval set", "--evidence", "it arrived")
    assert register(repo, "V2").code == 0


def test_effect_below_mde_is_refused_unless_forced(repo: Repo) -> None:
    register(repo, "V1")
    measure(repo, "V1", "recent", 10.0)
    _conclude(repo, "V1", "confirmed")
    small = register(repo, "V2", extra=("--effect", "0.01"))
    assert small.code == 1 and "minimum detectable effect" in small.err
    assert register(repo, "V2", extra=("--effect", "0.01", "--force", "pilot")).code == 0
    assert repo.trailers()["Ledger-Force"] == "pilot"


def test_walk_forward_single_window_is_diagnostic_only(bare_repo: Repo) -> None:
    bare_repo.write(
        "ledger.toml",
        (
            '[gates.wf]\nmetric = "pnl"\nmode = "walk-forward"\nnoise_floor = 1.0\n'
            '[gates.wf.metrics]\npnl = "$.pnl"\n'
        ),
    )
    bare_repo.ok("init")
    tmp = bare_repo.path.parent
    register(bare_repo, "V1", gate="wf")
    for w, value in (("w1", 5.0), ("w2", 6.0)):
        (tmp / f"{w}.json").write_text(json.dumps({"pnl": value}))
        bare_repo.ok("record", "V1", "--gate", "wf", "--window", w, str(tmp / f"{w}.json"))
    bare_repo.ok("conclude", "V1", "--verdict", "confirmed", "--next", "x")
    register(bare_repo, "V2", gate="wf")
    (tmp / "w1b.json").write_text(json.dumps({"pnl": 50.0}))
    bare_repo.ok("record", "V2", "--gate", "wf", "--window", "w1", str(tmp / "w1b.json"))
    refused = bare_repo.run("conclude", "V2", "--verdict", "confirmed", "--next", "x")
    assert refused.code == 1 and "diagnostic only" in refused.err


def test_a_registered_effect_decides_between_confirmed_and_refuted(repo: Repo) -> None:
    """Improved beyond noise but short of the registered effect: the bet is refuted."""
    register(repo, "V1")
    measure(repo, "V1", "recent", 10.0)
    _conclude(repo, "V1", "confirmed")
    register(repo, "V2", extra=("--effect", "8"))
    measure(repo, "V2", "recent", 14.0)  # +4: beyond noise, half the registered effect
    short = repo.run("conclude", "V2", "--verdict", "confirmed", "--next", "x")
    assert short.code == 1 and "registered effect" in short.err
    _conclude(repo, "V2", "refuted")
    register(repo, "V3", extra=("--effect", "3"))
    measure(repo, "V3", "recent", 18.0)  # +8 against V1 (V2 was refuted): reaches the effect
    reached = repo.run("conclude", "V3", "--verdict", "refuted", "--next", "x")
    assert reached.code == 1 and "reaches the registered effect" in reached.err
    _conclude(repo, "V3", "confirmed")


def test_noop_tolerance_can_be_set_per_gate(bare_repo: Repo) -> None:
    bare_repo.write(
        "ledger.toml",
        (
            '[gates.recent]\nmetric = "score"\nnoise_floor = 1.0\n[gates.recent.metrics]\nscore = "$.score"\n'
            '[gates.wide]\nmetric = "score"\nnoise_floor = 1.0\nnoop_tolerance = 50.0\n'
            '[gates.wide.metrics]\nscore = "$.score"\n[triggers]\nnoop_tolerance = 0.5\n'
        ),
    )
    bare_repo.ok("init")
    register(bare_repo, "V1")
    measure(bare_repo, "V1", "recent", 10.0)
    measure(bare_repo, "V1", "wide", 100.0)
    _conclude(bare_repo, "V1", "confirmed")
    register(bare_repo, "V2", extra=("--noop-gates", "wide"))
    measure(bare_repo, "V2", "recent", 14.0)
    measure(bare_repo, "V2", "wide", 110.0)  # moved 10: fine for this gate's own tolerance
    _conclude(bare_repo, "V2", "confirmed")
    assert bare_repo.run("triggers").code == 0
