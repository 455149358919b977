"""Issue 26: a phase is declared on its three conditions and resumed on its criterion."""

from __future__ import annotations

import yaml

from tests.helpers import Repo, measure, register

SECTIONS = (
    "Eval stability",
    "Variance estimate",
    "Subsystem audit",
    "Revert-and-branch option",
    "Untouched dimensions",
    "Observability-gap audit",
)


def _reflect(repo: Repo, after: str, binding: str | None) -> None:
    repo.ok("reflect", after)
    path = repo.path / f"training_log/REFLECTION_{after}.md"
    text = path.read_text()
    _, front, body = text.split("---\n", 2)
    data = yaml.safe_load(front)
    if binding:
        data["binding_constraint"] = binding
    for title in SECTIONS:
        body = body.replace(f"## {title}\n", f"## {title}\n\nWe studied {title.lower()} here.\n")
    body = body.replace(  # a Goodhart reflection's audit of its target (when it has one)
        "## Target audit\n", "## Target audit\n\nTypical of its regime: keep as target\n"
    )
    path.write_text(f"---\n{yaml.safe_dump(data, sort_keys=False)}---\n{body}")
    repo.ok("reflect", after, "--commit")


def _declare(repo: Repo, *extra: str) -> object:
    return repo.run(
        "phase", "declare", "--reason", "plateau", "--resume-criterion",
        "independent windows >= 10", *extra,
    )  # fmt: skip


def test_phase_declare_checks_its_conditions_and_resume_names_its_criterion(repo: Repo) -> None:
    register(repo, "V1")
    measure(repo, "V1", "recent", 10.0)
    repo.ok("conclude", "V1", "--verdict", "confirmed", "--next", "go on")
    # Nothing fired yet: no phase transition without --force.
    early = _declare(repo)
    assert early.code == 1 and "trigger-and-reflection not held" in early.err  # type: ignore[attr-defined]
    assert "--force" in early.err  # type: ignore[attr-defined]
    for vid in ("V2", "V3", "V4"):
        register(repo, vid)
        measure(repo, vid, "recent", 10.0)
        repo.ok("conclude", vid, "--verdict", "refuted", "--next", "go on")
    # The tripwire fired, but the reflection did not find the instrument binding.
    _reflect(repo, "V4", None)
    refused = _declare(repo)
    assert refused.code == 1 and "binding_constraint: instrument" in refused.err  # type: ignore[attr-defined]
    register(repo, "V5", extra=("--cites", "REFLECTION_V4"))
    measure(repo, "V5", "recent", 10.0)
    repo.ok("conclude", "V5", "--verdict", "refuted", "--next", "go on")
    _reflect(repo, "V5", "instrument")
    done = repo.ok(
        "phase", "declare", "--reason", "plateau", "--resume-criterion",
        "independent windows >= 10", "--json",
    )  # fmt: skip
    status = (repo.path / "training_log/CAMPAIGN_STATUS.md").read_text()
    front = yaml.safe_load(status.split("---\n", 2)[1])
    assert set(front["conditions"]) == {
        "trigger-and-reflection",
        "near-misses-inside-noise",
        "effective-n-capped",
    }
    assert all(v.startswith("held: ") for v in front["conditions"].values()), front
    assert "REFLECTION_V5 concluded the binding constraint is the instrument" in status
    assert front.get("force") is None and done.code == 0
    # Resume names the criterion it meets, with its evidence; anything else is refused.
    nxt = repo.ok("next", "--json").json()
    assert "--criterion" in nxt["command"] and "<EVIDENCE>" in nxt["placeholders"]
    assert repo.run("phase", "resume").code == 2
    wrong = repo.run("phase", "resume", "--criterion", "a hunch", "--evidence", "felt right")
    assert wrong.code == 1 and "independent windows >= 10" in wrong.err
    repo.ok("phase", "resume", "--criterion", "1", "--evidence", "independent windows now 12")
    status = (repo.path / "training_log/CAMPAIGN_STATUS.md").read_text()
    front = yaml.safe_load(status.split("---\n", 2)[1])
    assert front["state"] == "active"
    assert front["resumed_on"] == "independent windows >= 10"
    assert front["resume_evidence"] == "independent windows now 12"


def test_a_forced_phase_records_its_reason(repo: Repo) -> None:
    register(repo, "V1")
    measure(repo, "V1", "recent", 10.0)
    repo.ok("conclude", "V1", "--verdict", "confirmed", "--next", "go on")
    repo.ok(
        "phase", "declare", "--reason", "r", "--resume-criterion", "c", "--force", "deadline",
    )  # fmt: skip
    status = (repo.path / "training_log/CAMPAIGN_STATUS.md").read_text()
    assert "forced: deadline" in status
    repo.ok("phase", "resume", "--force", "the deadline moved")
    repo.ok("verify")
