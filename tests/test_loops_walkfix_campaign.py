"""Issue 25's walk, campaign loop: what ``next`` proposes after a retune, or when a
promotion could tie with another candidate, is what the command accepts (through
``git ledger``, hooks installed)."""

from __future__ import annotations

import json
import shlex
import subprocess
from typing import Any

import pytest

from tests.helpers import Repo, fingerprint


def gl(repo: Repo, *args: str) -> subprocess.CompletedProcess[str]:
    """``git ledger ARGS`` through git's dispatch, as a user's shell runs it."""
    return subprocess.run(
        ["git", "ledger", *args], cwd=repo.path, capture_output=True, text=True, check=False
    )


def ok(repo: Repo, *args: str) -> str:
    done = gl(repo, *args)
    assert done.returncode == 0, (
        f"git ledger {shlex.join(args)} -> {done.returncode}\n{done.stderr}"
    )
    return done.stdout


def next_json(repo: Repo) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(ok(repo, "next", "--json"))
    return data


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
    camp.commit_all("chore: widen the tolerance", "--no-verify")
    nxt = next_json(camp)
    assert nxt["action"] == "restore-tolerance"
    command = nxt["command"]
    assert command == "git ledger config set campaign.correctness_tolerance 0.001 --reason TEXT"
    words = shlex.split(command.replace("TEXT", "'back to the contract'"))
    ok(camp, *words[2:])
    assert next_json(camp)["action"] == "record-base"
    assert gl(camp, "verify").returncode == 0
