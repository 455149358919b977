"""`next` after a delivery or a closed report is reverted, in the campaign loop.

A reverted delivery keeps its branch, so next names a branch no branch has (the
one deliver's refusal names); a reverted report leaves the campaign disarmed while
finish no longer passes, so next re-arms it instead of proposing a delivery that
deliver refuses on the same rule. Through git's dispatch, hooks installed.
"""

from __future__ import annotations

import shlex
import subprocess

from tests.helpers import Repo
from tests.test_campaign_batches import _code, _record, camp  # noqa: F401 (fixture)


def _next(repo: Repo) -> dict[str, str]:
    nxt: dict[str, str] = repo.ok("next", "--json").json()
    return nxt


def _follow(repo: Repo, command: str) -> None:
    command = command.replace("--summary TEXT", "--summary 'fast promoted'")
    words = shlex.split(command)
    assert words[:2] == ["git", "ledger"], command
    done = subprocess.run(words, cwd=repo.path, capture_output=True, text=True, check=False)
    assert done.returncode == 0, f"{command}: {done.stderr}"


def _finished(repo: Repo) -> None:
    base = _code(repo, "base")
    assert _record(repo, base, "base").returncode == 0
    repo.ok("arm")
    fast = _code(repo, "fast")
    assert _record(repo, fast, "promoted", "130", "--reason", "fused kernel").returncode == 0
    repo.ok("close", "--summary", "fast promoted")
    repo.ok("finish")


def test_a_reverted_delivery_is_delivered_again_on_a_free_branch(camp: Repo) -> None:  # noqa: F811
    _finished(camp)
    nxt = _next(camp)
    assert nxt["command"] == "git ledger deliver --branch campaign/deliver", nxt
    _follow(camp, nxt["command"])
    camp.git("revert", "--no-edit", "HEAD")
    nxt = _next(camp)
    assert nxt["command"] == "git ledger deliver --branch campaign/deliver-2", nxt
    refused = camp.run("deliver", "--branch", "campaign/deliver")
    assert refused.code == 2 and "pass --branch campaign/deliver-2" in refused.err
    _follow(camp, nxt["command"])
    assert "perf(src): fast" in camp.git("log", "--format=%s", "campaign/deliver-2")


def test_a_reverted_report_rearms_instead_of_a_refused_delivery(camp: Repo) -> None:  # noqa: F811
    _finished(camp)
    report = camp.git("log", "--format=%H", "--grep=closed report", "-1").strip()
    camp.git("revert", "--no-edit", report)
    assert camp.run("deliver").code == 1  # finish no longer passes
    nxt = _next(camp)
    assert nxt["action"] == "arm" and "[report]" in nxt["reason"], nxt
    _follow(camp, nxt["command"])  # armed again: the loop's own steps go on
    camp.ok("close", "--summary", "fast promoted")
    camp.ok("finish")
    nxt = _next(camp)
    assert nxt["action"] == "deliver", nxt
    _follow(camp, nxt["command"])
