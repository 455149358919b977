"""The ledger README is each loop's (issue 25): the loop says which blocks it generates
(``Preset.readme_blocks``) and what they hold (``Preset.readme_views``); fencing, writing,
drift and the merge of the prose around them are the core's (``ledger.core.views``).

A campaign's or a batch loop's README used to carry the versions loop's blocks ("No
versions yet: `git ledger register ...`", a verb those loops do not have).
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from ledger.core.loops import NAMES, by_name
from ledger.core.model.config import parse_config
from ledger.core.resources import read_resource, render
from ledger.core.state import LedgerState
from ledger.core.views import apply_views, blank_views, drift
from tests.helpers import Repo, fingerprint
from tests.test_next_walk_states import register_cache, shop

BLOCK = re.compile(r"<!-- ledger:begin (\S+) -->")


def _sh(repo: Repo, command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-c", command], cwd=repo.path, capture_output=True, text=True, check=False
    )


def _init(repo: Repo, preset: str) -> Path:
    done = _sh(repo, f"git ledger init --preset {preset} && git ledger hooks install")
    assert done.returncode == 0, done.stderr
    return repo.path / "training_log" / "README.md"


@pytest.mark.parametrize("preset", NAMES)
def test_init_writes_the_loops_own_readme_with_exactly_its_blocks(
    bare_repo: Repo, preset: str
) -> None:
    readme = _init(bare_repo, preset).read_text()
    loop = by_name(preset)
    assert tuple(BLOCK.findall(readme)) == loop.readme_blocks
    config = parse_config(
        render(read_resource("templates", f"ledger-{preset}.toml"), dir="training_log"),
        "ledger.toml",
    )
    views = loop.readme_views(LedgerState(config=config, commit_id=None))
    assert tuple(views) == loop.readme_blocks, "readme_views fills exactly readme_blocks"
    assert drift(readme, views, "README") == []
    if preset != "versions":
        assert "git ledger register" not in readme, "another loop's verb in the README"
        assert "No versions yet" not in readme


@pytest.mark.parametrize("preset", ["campaign", "batches"])
def test_a_hand_edit_of_a_readme_without_blocks_is_committed_with_the_hooks(
    bare_repo: Repo, preset: str
) -> None:
    readme = _init(bare_repo, preset)
    readme.write_text(readme.read_text() + "\nNotes of the team.\n")
    done = _sh(bare_repo, "git commit -q -am 'docs(ledger): notes of the team'")
    assert done.returncode == 0, done.stderr
    assert _sh(bare_repo, "git ledger verify").returncode == 0


def test_an_edited_generated_block_of_the_versions_readme_is_refused_byte_identical(
    bare_repo: Repo,
) -> None:
    readme = _init(bare_repo, "versions")
    text = readme.read_text()
    readme.write_text(text.replace("_No versions yet", "_No bets yet", 1))
    _sh(bare_repo, "git add -A")
    # The index file itself git commit rewrites (its cache tree) before any hook runs:
    # what is staged is compared instead.
    staged = bare_repo.git("ls-files", "-s")
    before = {k: v for k, v in fingerprint(bare_repo.path).items() if k != "index"}
    done = _sh(bare_repo, "git commit -q -m 'docs(ledger): a hand edit'")
    assert done.returncode == 1
    assert "[views-drift]" in done.stderr and "generated block 'index'" in done.stderr
    assert done.stderr.count("generated block 'index'") == 1, done.stderr
    assert {k: v for k, v in fingerprint(bare_repo.path).items() if k != "index"} == before
    assert bare_repo.git("ls-files", "-s") == staged


def test_the_merge_driver_merges_prose_edited_on_both_sides_of_a_campaign_readme(
    bare_repo: Repo,
) -> None:
    readme = _init(bare_repo, "campaign")
    text = readme.read_text()
    assert _sh(bare_repo, "git checkout -q -b side").returncode == 0
    readme.write_text(text.replace("# Ledger\n", "# Ledger of the side branch\n", 1))
    assert _sh(bare_repo, "git commit -q -am 'docs(ledger): a title'").returncode == 0
    assert _sh(bare_repo, "git checkout -q main").returncode == 0
    readme.write_text(text + "\nA note at the end.\n")
    assert _sh(bare_repo, "git commit -q -am 'docs(ledger): a note'").returncode == 0
    done = _sh(bare_repo, "git merge -q --no-edit side")
    assert done.returncode == 0, done.stderr
    merged = readme.read_text()
    assert "# Ledger of the side branch\n" in merged and "A note at the end.\n" in merged
    assert _sh(bare_repo, "git ledger verify").returncode == 0


def test_blocks_are_blanked_and_written_by_name_only() -> None:
    text = "# T\n<!-- ledger:begin a -->\nold\n<!-- ledger:end a -->\nprose\n"
    assert blank_views(text, ("a", "missing")) == (
        "# T\n<!-- ledger:begin a -->\n<!-- ledger:end a -->\nprose\n"
    )
    assert apply_views(text, {"a": "new"}) == text.replace("old", "new")
    assert drift(None, {}, "README") == [], "a loop without blocks needs no README"
    assert drift(None, {"a": ""}, "README") == ["README is missing"]


def test_after_a_config_set_conclude_writes_the_views_the_hooks_expect(bare_repo: Repo) -> None:
    """V2 is judged under the configuration frozen at its registration (sigma_k 2: its
    gain is beyond noise) and the README's baseline under today's (sigma_k 100: it is
    not), as every other writer and checker of the README renders it. Before, conclude
    rendered the views under the registration's, and the next hand commit of a ledger
    file was refused as views-drift."""
    repo = shop(bare_repo)
    register_cache(repo, "V1")
    steps = [
        "git ledger run V1 --gate recent --seeds 1,2,3",
        "git ledger conclude V1 --verdict inconclusive --next 'on' --override 'the first'",
        "sed -i 's/SIZE = 64/SIZE = 128/' src/cache.py",
    ]
    for step in steps:
        assert _sh(repo, step).returncode == 0, step
    register_cache(repo, "V2")
    steps = [
        "git commit -qam 'perf(cache): a bigger cache'",
        "git ledger run V2 --gate recent --seeds 1,2,3",
        "git ledger config set stats.sigma_k 100 --reason 'a looser bar from now on'",
        "git ledger conclude V2 --verdict confirmed --next 'on'",
    ]
    for step in steps:
        done = _sh(repo, step)
        assert done.returncode == 0, f"{step}: {done.stderr}"
    assert "improved" in repo.git("show", "HEAD:training_log/V2.md"), "judged as registered"
    readme = repo.path / "training_log/README.md"
    readme.write_text(readme.read_text() + "\nNotes of the team.\n")
    done = _sh(repo, "git commit -q -am 'docs(ledger): notes of the team'")
    assert done.returncode == 0, done.stderr
    assert _sh(repo, "git ledger verify").returncode == 0


def _concluded_v1(bare_repo: Repo) -> Repo:
    repo = shop(bare_repo)
    register_cache(repo, "V1")
    for step in (
        "git ledger run V1 --gate recent --seeds 1,2,3,4",
        "git ledger conclude V1 --verdict confirmed --next 'wider'",
    ):
        assert _sh(repo, step).returncode == 0, step
    return repo


def test_a_config_set_leaves_no_hand_commit_of_the_ledger_refused(bare_repo: Repo) -> None:
    """A configuration transition changes ledger.toml alone (verify holds it to that), so
    the README's baseline block stays as the last transition rendered it; the hooks
    refuse only blocks a hand commit changed, not blocks it left alone."""
    repo = _concluded_v1(bare_repo)
    done = _sh(repo, "git ledger config set gates.recent.direction lower --reason 'lower wins'")
    assert done.returncode == 0, done.stderr
    readme = repo.path / "training_log/README.md"
    assert "score (higher)" in readme.read_text(), "the block a config change leaves stale"
    (repo.path / "training_log/notes.md").write_text("A note by hand.\n")
    readme.write_text(readme.read_text() + "\nProse by hand.\n")
    for step in (
        "git add training_log/notes.md && git commit -q -m 'docs(ledger): a note'",
        "git commit -q -am 'docs(ledger): prose around the blocks'",
        "git ledger verify",
    ):
        done = _sh(repo, step)
        assert done.returncode == 0, f"{step}: {done.stderr}"
    readme.write_text(readme.read_text().replace("score (higher)", "score (lower)"))
    done = _sh(repo, "git commit -q -am 'docs(ledger): the block as today would render it'")
    assert done.returncode == 0, "a block as the entries generate it is no hand change"
    readme.write_text(readme.read_text().replace("| recent |", "| recent (best) |", 1))
    done = _sh(repo, "git commit -q -am 'docs(ledger): a hand edit of a block'")
    assert done.returncode == 1 and "[views-drift]" in done.stderr


def test_a_merge_renders_the_readme_under_the_merged_configuration(bare_repo: Repo) -> None:
    """Branch c changes the configuration and registers; branch d registers: the merge
    driver renders the README's blocks under the merged ledger.toml (it used ours)."""
    repo = _concluded_v1(bare_repo)
    bet = "--gate recent --files src/cache.py --falsifier 'no gain'"
    for step in (
        "git checkout -q -b c",
        "git ledger config set gates.recent.direction lower --reason 'lower wins'",
        f"git ledger register V2 --bet 'Bet C' {bet}",
        "git checkout -q -b d main",
        f"git ledger register V3 --bet 'Bet D' {bet}",
        "git merge -q --no-edit c",
    ):
        done = _sh(repo, step)
        assert done.returncode == 0, f"{step}: {done.stderr}"
    text = (repo.path / "training_log/README.md").read_text()
    assert "score (lower)" in text and "V2" in text and "V3" in text, text
    readme = repo.path / "training_log/README.md"
    readme.write_text(text + "\nProse after the merge.\n")
    assert _sh(repo, "git commit -q -am 'docs(ledger): prose'").returncode == 0
