"""The pre-push hook answers from the report ``git ledger verify`` saved (ledger.hooks.fastpush):
a push whose tip verified clean passes without pygit2 or pydantic, and every push the
full check refuses is still refused, through real pushes to a bare remote with the
hooks installed (each started with ``-X importtime`` to see which path ran).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from ledger.core import repobase, verifycache
from ledger.core.loops import NAMES, by_name, owned_dirs
from ledger.core.workspace import owned
from ledger.hooks import fastpush
from tests.helpers import Repo
from tests.test_next_walk_states import register_cache, shop

HEAVY = ("pydantic", "pygit2", "click")


def _sh(repo: Repo, command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-c", command], cwd=repo.path, capture_output=True, text=True, check=False
    )


@pytest.fixture
def pushing(bare_repo: Repo, tmp_path: Path) -> Repo:
    """A versions ledger with one registration, pushed to a bare remote, its hooks profiled."""
    repo = shop(bare_repo)
    register_cache(repo, "V1")
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    assert _sh(repo, f"git remote add origin {remote} && git push -q origin main").returncode == 0
    hook = repo.path / ".git/hooks/pre-push"
    hook.write_text(
        hook.read_text().replace('"$LEDGER_PYTHON" -I -S', '"$LEDGER_PYTHON" -X importtime -I -S')
    )
    return repo


def _push(repo: Repo) -> tuple[subprocess.CompletedProcess[str], bool]:
    """Push main; whether the hook took the heavy path."""
    done = _sh(repo, "git push -q origin main")
    heavy = any(
        line.rsplit("|", 1)[1].strip().split(".")[0] in HEAVY
        for line in done.stderr.splitlines()
        if line.startswith("import time:") and "|" in line
    )
    return done, heavy


def _refusals(done: subprocess.CompletedProcess[str]) -> list[str]:
    return [line for line in done.stderr.splitlines() if "pre-push refused" in line]


def test_a_push_of_a_tip_verify_found_clean_takes_the_light_path(pushing: Repo) -> None:
    _sh(pushing, "git commit -q --allow-empty -m 'docs: a note'")
    assert _sh(pushing, "git ledger verify").returncode == 0
    done, heavy = _push(pushing)
    assert done.returncode == 0, _refusals(done)
    assert not heavy, "a verified tip needs neither pygit2 nor pydantic"


def test_a_push_of_a_tip_never_verified_takes_the_full_check(pushing: Repo) -> None:
    """The probe can fail: without a saved report the full check runs (and passes)."""
    _sh(pushing, "git commit -q --allow-empty -m 'docs: a note'")
    done, heavy = _push(pushing)
    assert done.returncode == 0, _refusals(done)
    assert heavy


def test_a_stray_untracked_result_in_a_committed_results_dir_stays_light(pushing: Repo) -> None:
    """The full check does not read untracked files in a committed directory only
    transitions write (results/ may hold thousands); neither does the light path."""
    pushing.ok("run", "V1", "--gate", "recent", "--seeds", "1")
    results = next((pushing.path / "training_log/results/V1").rglob("*.json"))
    results.with_name("stray.json").write_text("{}\n")
    assert _sh(pushing, "git ledger verify").returncode == 0
    done, heavy = _push(pushing)
    assert done.returncode == 0, _refusals(done)
    assert not heavy


def test_the_light_path_knows_each_loops_transition_only_dirs() -> None:
    for name in NAMES:
        assert owned_dirs(name) == tuple(sorted(owned(by_name(name).history_rules())))


def test_a_tampered_commit_after_the_verified_tip_is_refused(pushing: Repo) -> None:
    assert _sh(pushing, "git ledger verify").returncode == 0
    path = pushing.path / "training_log/V1.md"
    path.write_text(path.read_text().replace("bet: ", "bet: (tampered) ", 1))
    assert _sh(pushing, "git commit -q --no-verify -am 'docs: fix a typo'").returncode == 0
    done, heavy = _push(pushing)
    assert done.returncode == 1 and heavy
    assert any("frozen" in line for line in _refusals(done)), done.stderr


def test_a_tip_whose_saved_report_has_findings_is_refused(pushing: Repo) -> None:
    path = pushing.path / "training_log/V1.md"
    path.write_text(path.read_text().replace("bet: ", "bet: (tampered) ", 1))
    assert _sh(pushing, "git commit -q --no-verify -am 'docs: fix a typo'").returncode == 0
    assert _sh(pushing, "git ledger verify").returncode == 1  # saved, with its finding
    done, heavy = _push(pushing)
    assert done.returncode == 1 and heavy
    assert _refusals(done)


def test_an_uncommitted_ledger_file_is_refused_after_a_clean_verify(pushing: Repo) -> None:
    _sh(pushing, "git commit -q --allow-empty -m 'docs: a note'")  # something to push
    assert _sh(pushing, "git ledger verify").returncode == 0
    (pushing.path / "training_log/notes.md").write_text("by hand, not committed\n")
    done, heavy = _push(pushing)
    assert done.returncode == 1 and heavy
    assert any("clean-workspace" in line for line in _refusals(done)), done.stderr


def test_a_push_that_takes_the_configuration_away_is_refused(pushing: Repo) -> None:
    """From the ledger's checkout, a branch whose tip holds no ledger.toml pushed over
    the ledger's branch."""
    assert _sh(pushing, "git commit -q --allow-empty -m 'docs: a note'").returncode == 0
    assert _sh(pushing, "git ledger verify").returncode == 0
    gone = "git checkout -q -b gone && git rm -q ledger.toml && git commit -q --no-verify -m go"
    assert _sh(pushing, f"{gone} && git checkout -q main").returncode == 0
    done = _sh(pushing, "git push -q origin gone:main")
    assert done.returncode == 1
    assert any("config" in line for line in _refusals(done)), done.stderr


def test_a_clean_report_of_a_tip_without_the_configuration_is_not_enough(
    pushing: Repo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The light path itself: a saved report with no finding, for a tip that takes
    ledger.toml away, still goes to the full check (which refuses it, above)."""
    gone = "git checkout -q -b gone && git rm -q ledger.toml && git commit -q --no-verify -m go"
    assert _sh(pushing, f"{gone} && git checkout -q main").returncode == 0
    tip = pushing.git("rev-parse", "gone").strip()
    head = pushing.git("rev-parse", "HEAD").strip()
    common = str(pushing.path / ".git")
    state_dir = str(pushing.path / ".git" / repobase.STATE_DIR)
    monkeypatch.chdir(pushing.path)
    values = {"config_file": "ledger.toml", "dir": "training_log"}
    for sha in (tip, head):
        verifycache.save(state_dir, common, sha, [], [])
    line = f"refs/heads/main {head} refs/heads/main {'0' * 40}\n"
    assert fastpush.verified(common, values, line), "the probe: a clean HEAD passes"
    line = f"refs/heads/gone {tip} refs/heads/main {head}\n"
    assert not fastpush.verified(common, values, line)


def test_an_uncommitted_configuration_goes_to_the_full_check(pushing: Repo) -> None:
    """The full check validates the work tree's ledger.toml; the light path defers."""
    _sh(pushing, "git commit -q --allow-empty -m 'docs: a note'")
    assert _sh(pushing, "git ledger verify").returncode == 0
    toml = pushing.path / "ledger.toml"
    toml.write_text(toml.read_text().replace('metric = "score"', 'metric = "hit"', 1))
    done, heavy = _push(pushing)
    assert done.returncode == 1 and heavy
    assert any("hit" in line for line in _refusals(done)), done.stderr


def test_an_up_to_date_push_takes_the_light_path(pushing: Repo) -> None:
    """git runs pre-push for a push with nothing to send too (empty stdin): only the
    work tree is the hook's business then, and a clean one needs no full check."""
    done, heavy = _push(pushing)
    assert done.returncode == 0, _refusals(done)
    assert not heavy


def test_an_up_to_date_push_with_an_uncommitted_ledger_file_is_refused(pushing: Repo) -> None:
    (pushing.path / "training_log/notes.md").write_text("by hand, not committed\n")
    done, heavy = _push(pushing)
    assert done.returncode == 1 and heavy
    assert any("clean-workspace" in line for line in _refusals(done)), done.stderr


def test_pre_commits_push_with_no_stdin_goes_to_the_full_check(
    pushing: Repo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Under the pre-commit framework what is pushed is in its environment, not on
    stdin: the light path cannot see it, so it never answers."""
    common = str(pushing.path / ".git")
    values = {"config_file": "ledger.toml", "dir": "training_log"}
    monkeypatch.chdir(pushing.path)
    assert fastpush.verified(common, values, ""), "the probe: nothing pushed, clean tree"
    monkeypatch.setenv("PRE_COMMIT_TO_REF", pushing.head())
    assert not fastpush.verified(common, values, "")
