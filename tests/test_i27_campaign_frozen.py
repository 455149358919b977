"""Issue 27, campaign: the noise floor and the directions are frozen when the campaign
is armed, as the tolerance is at the contract: ``config set`` refuses them, the hooks
refuse a hand edit, and after one made with ``--no-verify`` ``next`` restores it and
every candidate is refused until then. Through ``git ledger``, hooks installed."""

from __future__ import annotations

import shlex
import subprocess

from tests.helpers import Repo, fingerprint, git
from tests.test_i27_campaign_finish import camp, code, gl, ok, record  # noqa: F401 (fixture)


def _armed(repo: Repo) -> None:
    ok(repo, "config", "set", "campaign.noise_floor", "2.0", "--reason", "before arming: allowed")
    base = git(repo.path, "log", "-1", "--format=%H", "--grep=the base").strip()
    assert record(repo, base, "base", "100").code == 0
    ok(repo, "arm")


def test_config_set_refuses_the_noise_floor_and_directions_once_armed(camp: Repo) -> None:  # noqa: F811
    _armed(camp)
    before = fingerprint(camp.path)
    for key, value in (
        ("campaign.noise_floor", "50.0"),
        ("campaign.noise_floor", "0"),
        ("campaign.directions.speed", "lower"),
    ):
        done = gl(camp, "config", "set", key, value, "--reason", "make it pass")
        assert done.code == 1, (key, done.err)
        assert f"[config-frozen] {key} was frozen" in done.err and "armed" in done.err
        assert fingerprint(camp.path) == before


def test_a_noise_floor_widened_by_hand_is_refused_and_restored(camp: Repo) -> None:  # noqa: F811
    _armed(camp)
    toml = camp.path / "ledger.toml"
    toml.write_text(toml.read_text().replace("noise_floor = 2.0", "noise_floor = 50.0"))
    git(camp.path, "add", "ledger.toml")
    hooked = subprocess.run(
        ["git", "commit", "-q", "-m", "chore: noisier"],
        cwd=camp.path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert hooked.returncode == 1 and "config-frozen" in hooked.stderr, hooked.stderr
    # With its reason (tests/test_config_reason.py): the frozen floor is the rule here.
    git(camp.path, "commit", "-q", "--no-verify", "-m", "chore: noisier", "--trailer",
        "Ledger-Reason: noisier")  # fmt: skip
    slow = code(camp, "slow")
    refused = record(camp, slow, "held", "60", "--reason", "within the new floor")
    assert refused.code == 1 and "[config-frozen]" in refused.err, refused.err
    nxt = ok(camp, "next", "--json").json()
    assert nxt["action"] in ("restore-tolerance", "verify"), nxt
    assert "campaign.noise_floor" in nxt["reason"] or "config-frozen" in nxt["reason"], nxt
    restore = "git ledger config set campaign.noise_floor 2.0 --reason TEXT"
    words = shlex.split(restore.replace("TEXT", "'back to the armed floor'"))
    ok(camp, *words[2:])


def _writers(candidate: str, verdict: str, speed: str) -> list[list[str]]:
    """A call of each of the campaign's writing verbs (finish aside)."""
    return [
        ["candidate", "record", "--commit", candidate, "--verdict", verdict, "--reason", "r",
         "--measure", f"speed={speed}", "--measure", "accel_mem_gb=N/A: none",
         "--measure", "peak_cpu_gb=1", "--measure", "correctness=0"],
        ["benchmark", "adjust", "--reason", "r"],
        ["mistake", "add", "x", "--caught-by", "y", "--should-have-caught", "z"],
        ["close", "--summary", "s"],
    ]  # fmt: skip


def test_every_writing_verb_checks_the_owner(camp: Repo) -> None:  # noqa: F811
    base = git(camp.path, "log", "-1", "--format=%H", "--grep=the base").strip()
    assert record(camp, base, "base", "100").code == 0
    ok(camp, "arm")  # the git user
    fast = code(camp, "fast")
    before = fingerprint(camp.path)
    env = {**__import__("os").environ, "LEDGER_OWNER": "mallory"}
    for args in (*_writers(fast, "rejected", "1"), ["finish"]):
        done = subprocess.run(
            ["git", "ledger", *args], cwd=camp.path, capture_output=True, text=True, env=env
        )
        assert done.returncode == 1 and "[owner]" in done.stderr, (args, done.stderr)
        assert fingerprint(camp.path) == before


def test_every_writer_refuses_while_a_verdict_forged_past_the_hooks_stands(
    camp: Repo,  # noqa: F811
) -> None:
    """A rejection flipped to a promotion with --no-verify: no verb judges against the
    forged head (the batches loop refused already); each names the commit and the rule,
    and ``next`` proposes the repair first (finish and deliver list it among their
    outstanding items: tests/test_i27_campaign_finish.py)."""
    base = git(camp.path, "log", "-1", "--format=%H", "--grep=the base").strip()
    assert record(camp, base, "base", "100").code == 0
    ok(camp, "arm")
    slow = code(camp, "slow")
    assert record(camp, slow, "rejected", "60", "--reason", "slower").code == 0
    fast = code(camp, "fast")  # before the forgery: the hooks refuse a commit after it
    entry = next(
        p
        for p in (camp.path / "training_log").rglob("*.json")
        if slow[:10] in p.name or slow in p.read_text()
    )
    entry.write_text(entry.read_text().replace('"rejected"', '"promoted"'))
    git(camp.path, "add", "-A")
    git(camp.path, "commit", "-q", "--no-verify", "-m", "chore: flip it")
    forged = git(camp.path, "rev-parse", "HEAD").strip()
    assert gl(camp, "verify").code == 1
    before = fingerprint(camp.path)
    for args in _writers(fast, "promoted", "200"):
        done = gl(camp, *args)
        assert done.code == 1 and "[history-findings]" in done.err, (args, done.err)
        assert forged[:10] in done.err, (args, done.err)
        assert fingerprint(camp.path) == before
    nxt = ok(camp, "next", "--json").json()
    assert forged[:10] in nxt["reason"], nxt
