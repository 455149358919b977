"""Issue 29: after a squash merge of a ledger branch, verify's fix text names the way out
that works (a merge commit instead, or ``void`` with its consequence), never a
rebase-merge (which rewrites the registration too, and the README advises against)."""

from __future__ import annotations

from tests.helpers import Repo, measure, register
from tests.test_tamper import hooked_commit


def test_squash_merge_fix_names_a_merge_commit_or_void_never_a_rebase(repo: Repo) -> None:
    repo.ok("hooks", "install")
    repo.git("checkout", "-q", "-b", "feature")
    assert register(repo, "V1").code == 0
    repo.write("src/model.py", "x = 1\n")
    assert hooked_commit(repo, "feat(model): V1 — the change", "src/model.py").returncode == 0
    measure(repo, "V1", "recent", 10.0, seeds=(1, 2, 3))
    repo.git("checkout", "-q", "main")
    repo.git("merge", "-q", "--squash", "feature")
    repo.git("commit", "-q", "--no-verify", "-m", "feat: V1 (squashed)")
    result = repo.run("verify", "--json")
    assert result.code == 1, result.err
    findings = result.json()["findings"]
    squashed = [f for f in findings if f["rule"] == "transitions-only"]
    assert squashed, findings
    for finding in squashed:
        fix = finding["fix"]
        assert "rebase" not in fix, fix
        assert "merge commit" in fix and "git merge --no-ff" in fix, fix
        assert "git ledger void V1" in fix and "never count" in fix, fix
