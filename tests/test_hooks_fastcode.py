"""A campaign's code commits: the full check once per ledger tree, then the fast path.

The campaign holds every code commit to its discipline (armed, views in step, in scope),
which the pre-commit hook's full check (pygit2, pydantic) decides. Its pass for a commit
of code alone is remembered by the ledger tree at HEAD and the configuration file
(ledger.hooks.fastcode), so the next code commit at that tree is answered by the fast
path; everything the full check would say still gets said. Through real ``git commit``s
with the hooks installed, the pre-commit hook started with ``-X importtime``: whether
pydantic was imported tells which path answered.
"""

from __future__ import annotations

import subprocess

from tests.helpers import Repo, git
from tests.test_i27_campaign_finish import camp, ok, record  # noqa: F401 (fixture)


def _timed_hook(repo: Repo) -> None:
    hook = repo.path / ".git/hooks/pre-commit"
    hook.write_text(hook.read_text().replace("-I -S -c", "-X importtime -I -S -c"))


def _commit(repo: Repo, path: str) -> tuple[int, bool, str]:
    """(exit code, whether the full check ran, what the hook said besides import times)."""
    target = repo.path / path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(f"{target.read_text() if target.exists() else ''}x = 1\n")
    git(repo.path, "add", "--", path)
    done = subprocess.run(
        ["git", "commit", "-q", "-m", f"perf(src): {path}"],
        cwd=repo.path,
        capture_output=True,
        text=True,
        check=False,
    )
    said = "\n".join(ln for ln in done.stderr.splitlines() if not ln.startswith("import time"))
    if done.returncode != 0:
        git(repo.path, "reset", "-q", "--hard")
    imported = {ln.rsplit("|", 1)[-1].strip() for ln in done.stderr.splitlines()}
    return done.returncode, "pydantic" in imported, said


def test_a_code_commit_is_checked_fully_once_per_ledger_tree(camp: Repo) -> None:  # noqa: F811
    _timed_hook(camp)
    base = git(camp.path, "log", "-1", "--format=%H", "--grep=the base").strip()
    assert record(camp, base, "base", "100").code == 0
    # A base but not armed: refused by the full check, every time (a refusal is never
    # remembered).
    for _ in range(2):
        code, full, said = _commit(camp, "src/a.py")
        assert (code, full) == (1, True) and "[campaign-armed]" in said, said
    ok(camp, "arm")
    code, full, said = _commit(camp, "src/a.py")
    assert (code, full, said) == (0, True, ""), said
    code, full, said = _commit(camp, "src/b.py")
    assert (code, full, said) == (0, False, ""), "the pass at this tree answers the next"
    # A path outside [campaign] scope: the full check, which warns.
    code, full, said = _commit(camp, "tools/c.py")
    assert code == 0 and full and "[campaign-scope] tools/c.py" in said, said
    code, full, _ = _commit(camp, "src/d.py")
    assert (code, full) == (0, False)
    # The configuration edited (not staged): its file is in the key.
    toml = camp.path / "ledger.toml"
    toml.write_text(toml.read_text() + "# a comment\n")
    assert _commit(camp, "src/e.py")[:2] == (0, True)
    assert _commit(camp, "src/f.py")[:2] == (0, False)
    # A transition changes the ledger tree: checked fully again.
    head = camp.head()
    assert record(camp, head, "rejected", "90", "--reason", "no gain").code == 0
    assert _commit(camp, "src/g.py")[:2] == (0, True)


def test_a_view_edited_by_hand_refuses_the_code_commits_after_it(camp: Repo) -> None:  # noqa: F811
    """A view changed with --no-verify changes the ledger tree: the pass remembered at
    the tree before does not answer, and the full check refuses, every time."""
    _timed_hook(camp)
    base = git(camp.path, "log", "-1", "--format=%H", "--grep=the base").strip()
    assert record(camp, base, "base", "100").code == 0
    ok(camp, "arm")
    assert _commit(camp, "src/a.py")[:2] == (0, True)
    assert _commit(camp, "src/b.py")[:2] == (0, False)
    view = camp.path / "training_log/benchmark.csv"
    view.write_text(view.read_text() + "forged,row\n")
    git(camp.path, "commit", "-q", "--no-verify", "-am", "docs: a forged row")
    for _ in range(2):
        code, full, said = _commit(camp, "src/c.py")
        assert (code, full) == (1, True) and "[views-drift]" in said, said
