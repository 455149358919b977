"""A setting that judges changes with its reason on record, however it is committed.

``config set`` writes ``Ledger-Reason:``; a hand commit of ledger.toml that lowers a
noise floor or sigma_k needs the same trailer: the commit-msg hook asks for it, and a
commit made past the hooks is a ``verify`` finding (config-reason) that the server
refuses. Through git and ``git ledger``, hooks installed, a server with its hooks.
"""

from __future__ import annotations

import subprocess

from tests.helpers import Repo, git
from tests.test_i30_tamper import published, refused  # noqa: F401 (a fixture)


def _lower(repo: Repo) -> None:
    toml = repo.path / "ledger.toml"
    text = toml.read_text()
    assert "noise_floor = 1.0" in text and "sigma_k = 2.0" in text
    toml.write_text(text.replace("noise_floor = 1.0", "noise_floor = 0.1").replace(
        "sigma_k = 2.0", "sigma_k = 0.5"))  # fmt: skip
    git(repo.path, "add", "ledger.toml")


def _commit(repo: Repo, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", "commit", "-q", "-m", "chore: tune the gate", *extra],
        cwd=repo.path,
        capture_output=True,
        text=True,
        check=False,
    )


def test_a_hand_commit_that_lowers_the_noise_floor_needs_a_reason(
    published: Repo,  # noqa: F811
) -> None:
    _lower(published)
    head = published.head()
    done = _commit(published)
    assert done.returncode == 1 and "[config-reason]" in done.stderr, done.stderr
    assert "Ledger-Reason" in done.stderr and published.head() == head
    done = _commit(published, "--trailer", "Ledger-Reason: a quieter machine, measured")
    assert done.returncode == 0, done.stderr
    assert published.trailers()["Ledger-Transition"] == "config"
    assert published.run("verify").code == 0


def test_a_silent_change_past_the_hooks_is_found_and_the_server_refuses_it(
    published: Repo,  # noqa: F811
) -> None:
    _lower(published)
    assert _commit(published, "--no-verify").returncode == 0
    refused(published, "config-reason", published.head())
    nxt = published.ok("next", "--json").json()
    assert published.head()[:10] in nxt["reason"] or "config-reason" in nxt["reason"], nxt


def test_a_setting_that_does_not_judge_needs_no_reason(published: Repo) -> None:  # noqa: F811
    toml = published.path / "ledger.toml"
    toml.write_text(toml.read_text() + "\n[doctor]\nstale_lock_minutes = 30.0\n")
    git(published.path, "add", "ledger.toml")
    assert _commit(published).returncode == 0
    assert published.run("verify").code == 0


def test_a_ledger_keeps_the_rules_it_was_written_under_until_it_raises_them(
    published: Repo,  # noqa: F811
) -> None:
    """A ledger made before the rule (no [ledger] rules) is judged by the rules of its
    time; raising them is itself a change with a reason; they never go down."""
    toml = published.path / "ledger.toml"
    toml.write_text(toml.read_text().replace("rules = 2 ", "# rules = 2 "))
    git(published.path, "add", "ledger.toml")
    assert _commit(published, "--no-verify").returncode == 0
    lowered = published.head()
    refused(published, "config-frozen", lowered)
    assert "rules went down from 2 to 1" in published.run("verify").out
    published.git("reset", "-q", "--hard", "HEAD~1")
    # A legacy ledger: its ledger.toml never named rules, so a silent change stands.
    legacy = published.path.parent / "legacy"
    legacy.mkdir()
    old = Repo(legacy)
    git(legacy, "init", "-q")
    (legacy / "ledger.toml").write_text(toml.read_text().replace("rules = 2 ", "# rules "))
    old.ok("init")
    old.ok("hooks", "install")
    _lower(old)
    assert _commit(old).returncode == 0
    assert old.run("verify").code == 0
    text = (legacy / "ledger.toml").read_text().replace("# rules ", "rules = 2 ")
    (legacy / "ledger.toml").write_text(text)
    git(legacy, "add", "ledger.toml")
    done = _commit(old)
    assert done.returncode == 1 and "[config-reason]" in done.stderr, done.stderr
    assert _commit(old, "--trailer", "Ledger-Reason: keep the reasons").returncode == 0
    assert old.run("verify").code == 0
