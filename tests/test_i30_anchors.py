"""Issue 30: every history rule reads its settings from the commit it judges. A later
ledger.toml-only commit that relaxes [hooks] never erases an earlier finding."""

from __future__ import annotations

import pytest

from tests.helpers import Repo
from tests.test_i30_tamper import published, refused  # noqa: F401
from tests.test_tamper import hand_commit


@pytest.mark.parametrize(
    "relax",
    ["\n[hooks]\nrequire_open_version = false\n", '\n[hooks]\nfree_paths = ["src/**"]\n'],
    ids=["require_open_version", "free_paths"],
)
def test_a_later_hooks_setting_never_erases_a_one_bet_finding(
    published: Repo,  # noqa: F811
    relax: str,
) -> None:
    published.write("src/other.py", "y = 1\n")
    sneaked = hand_commit(published, "feat(src): unrelated", "src/other.py")
    assert published.run("verify").code == 1
    toml = published.path / "ledger.toml"
    toml.write_text(toml.read_text() + relax)
    hand_commit(published, "chore: relax the hooks", "ledger.toml")
    refused(published, "one-bet-per-version", sneaked)


def test_a_relaxed_setting_applies_to_later_commits(published: Repo) -> None:  # noqa: F811
    toml = published.path / "ledger.toml"
    toml.write_text(toml.read_text() + '\n[hooks]\nfree_paths = ["src/**"]\n')
    hand_commit(published, "chore: src is free", "ledger.toml")
    published.write("src/other.py", "y = 1\n")
    hand_commit(published, "feat(src): free now", "src/other.py")
    assert published.run("verify").code == 0, published.run("verify").out
