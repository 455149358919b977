"""Issue 30, the adversary's pass: history is replayed with the tip's configuration, so
moving the ledger (another ``[ledger] dir``, or a ``[tool.ledger]`` in pyproject.toml
taking over from a removed ledger.toml) would leave every entry written before the move
unjudged. The ledger's place never changes: verify names the commit, the server refuses."""

from __future__ import annotations

from tests.helpers import Repo, git
from tests.test_i30_tamper import published  # noqa: F401 (a fixture)
from tests.test_server import push
from tests.test_tamper import hand_commit


def refused(repo: Repo, commit: str) -> None:
    result = repo.run("verify")
    assert result.code == 1, result.out
    assert f"{commit[:10]} ledger.toml: [config-frozen] the ledger's place changed" in result.out
    remote = repo.path.parent / "remote.git"
    before = git(remote, "rev-parse", "main").strip()
    done = push(repo, "HEAD:refs/heads/main")
    assert done.returncode != 0 and "[config-frozen]" in done.stderr, done.stderr
    assert git(remote, "rev-parse", "main").strip() == before


def test_a_ledger_dropped_and_started_over_elsewhere_is_refused(published: Repo) -> None:  # noqa: F811
    published.git("rm", "-q", "-r", "training_log")
    toml = published.path / "ledger.toml"
    toml.write_text(toml.read_text().replace('dir = "training_log"', 'dir = "log2"'))
    refused(published, hand_commit(published, "chore: a fresh ledger", "ledger.toml"))


def test_pyproject_taking_over_from_a_removed_ledger_toml_is_refused(published: Repo) -> None:  # noqa: F811
    published.write("pyproject.toml", '[tool.ledger.ledger]\ndir = "elsewhere"\n')
    published.git("rm", "-q", "ledger.toml")
    refused(published, hand_commit(published, "build: one configuration file", "pyproject.toml"))


def test_config_set_of_a_gate_still_passes(published: Repo) -> None:  # noqa: F811
    published.ok("config", "set", "gates.recent.noise_floor", "3", "--reason", "measured")
    assert published.run("verify").code == 0
    assert push(published, "HEAD:refs/heads/main").returncode == 0
