"""Issue 30: a committed ``.ledger`` symlink never carries matrix worktrees outside the
repository: ``matrix new`` is bad input, with nothing written."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.helpers import Repo, fingerprint
from tests.test_run_matrix import SPEC, _establish_baseline, evalrepo  # noqa: F401


@pytest.mark.parametrize("link", [".ledger", ".ledger/worktrees"])
def test_a_symlinked_ledger_dir_is_refused_for_worktrees(
    evalrepo: Repo,  # noqa: F811
    tmp_path: Path,
    link: str,
) -> None:
    _establish_baseline(evalrepo)
    outside = tmp_path / "outside"
    outside.mkdir()
    path = evalrepo.path / link
    path.parent.mkdir(parents=True, exist_ok=True)
    os.symlink(outside, path)
    evalrepo.git("add", "-f", link)
    evalrepo.git("commit", "-q", "--no-verify", "-m", "chore: a collaborator's link")
    spec = tmp_path / "cells.toml"
    spec.write_text(SPEC)
    before = fingerprint(evalrepo.path)
    done = evalrepo.run("matrix", "new", "V2", "--spec", str(spec))
    assert done.code == 2, done.out + done.err
    errors = [line for line in done.err.splitlines() if line.startswith("git-ledger: error")]
    assert len(errors) == 1 and "symlink" in errors[0], done.err
    assert list(outside.iterdir()) == []
    assert fingerprint(evalrepo.path) == before
