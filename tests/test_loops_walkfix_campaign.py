"""Issue 25's walk, campaign loop: what ``next`` proposes after a retune, or when a
promotion could tie with another candidate, is what the command accepts (through
``git ledger``, hooks installed)."""

from __future__ import annotations

import shlex

import pytest

from tests.helpers import Repo, fingerprint
from tests.test_loops_walkfix_versions import gl, next_json, ok


@pytest.fixture
def camp(bare_repo: Repo) -> Repo:
    bare_repo.write("src/app.py", "x = 0\n")
    bare_repo.commit_all("feat(src): the app")
    ok(bare_repo, "init", "--preset", "campaign")
    ok(bare_repo, "hooks", "install")
    bare_repo.write(
        "training_log/contract.md", "# Contract\n\nWe measure speed. Only src/ may change.\n"
    )
    ok(bare_repo, "contract")
    return bare_repo


def test_config_set_refuses_the_tolerance_frozen_at_the_contract(camp: Repo) -> None:
    before = fingerprint(camp.path)
    for value in ("1e-2", "1e-4"):
        done = gl(camp, "config", "set", "campaign.correctness_tolerance", value, "--reason", "r")
        assert done.returncode == 1, done.stderr
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1, done.stderr
        assert "[config-frozen] campaign.correctness_tolerance was frozen at 0.001" in lines[0]
        assert "contract" in lines[0]
        assert fingerprint(camp.path) == before
    # The noise floor is not frozen: setting it is a configuration transition.
    ok(camp, "config", "set", "campaign.noise_floor", "2.0", "--reason", "a noisier machine")
    assert next_json(camp)["action"] == "record-base"


def test_next_restores_a_tolerance_widened_by_hand_with_a_command_that_passes(
    camp: Repo,
) -> None:
    toml = camp.path / "ledger.toml"
    text = toml.read_text()
    assert "correctness_tolerance = 1e-3" in text
    toml.write_text(text.replace("correctness_tolerance = 1e-3", "correctness_tolerance = 1e-1"))
    # With its reason (tests/test_config_reason.py): the frozen tolerance is the rule here.
    camp.commit_all("chore: widen the tolerance", "--no-verify", "--trailer", "Ledger-Reason: r")
    nxt = next_json(camp)
    assert nxt["action"] == "restore-tolerance"
    command = nxt["command"]
    assert command == "git ledger config set campaign.correctness_tolerance 0.001 --reason TEXT"
    words = shlex.split(command.replace("TEXT", "'back to the contract'"))
    ok(camp, *words[2:])
    assert next_json(camp)["action"] == "record-base"
    assert gl(camp, "verify").returncode == 0


def _code(repo: Repo, name: str) -> str:
    repo.write(f"src/{name}.py", f"# {name}\n")
    return repo.commit_all(f"perf(src): {name}")


def _fill(command: str, sha: str, speed: str) -> list[str]:
    """next's candidate command for ``sha`` promoted at ``speed`` (its tokens filled)."""
    out = []
    for word in shlex.split(command):
        if word == "CANDIDATE":
            word = sha
        elif word == "promoted|rejected|held":
            word = "promoted"
        elif word == "TEXT":
            word = "faster"
        elif word == "<NOTES>":
            word = "the less invasive change won"
        elif word.endswith("=X"):
            name = word[:-2]
            word = f"{name}=" + {"speed": speed, "correctness": "0.0001"}.get(name, "1.0")
        out.append(word)
    return out


def test_next_carries_the_notes_a_promotion_equal_to_another_needs(camp: Repo) -> None:
    base = next_json(camp)
    assert base["action"] == "record-base"
    ok(camp, *_fill(base["command"], _code(camp, "base"), "100")[2:])
    ok(camp, "arm")
    first = next_json(camp)
    assert first["action"] == "candidate" and "--notes" not in first["command"]
    ok(camp, *_fill(first["command"], _code(camp, "first"), "110")[2:])
    # A second promotion may tie with the first: only its measurement says, so next asks
    # for the notes the equal-gains rule needs, and the command passes with them.
    second = next_json(camp)
    assert "--notes '<NOTES>'" in second["command"] and "<NOTES>" in second["placeholders"]
    sha = _code(camp, "second")
    words = _fill(second["command"], sha, "110")
    at = words.index("--notes")
    refused = gl(camp, *(words[:at] + words[at + 2 :])[2:])
    assert refused.returncode == 1 and "[equal-gains]" in refused.stderr
    ok(camp, *words[2:])
