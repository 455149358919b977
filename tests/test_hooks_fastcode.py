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

import os
import subprocess

from tests.helpers import Repo, git
from tests.test_i27_campaign_finish import TEMPLATE, camp, ok, record  # noqa: F401 (fixture)


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


def _armed(repo: Repo) -> None:
    _timed_hook(repo)
    base = git(repo.path, "log", "-1", "--format=%H", "--grep=the base").strip()
    assert record(repo, base, "base", "100").code == 0
    ok(repo, "arm")
    assert _commit(repo, "src/a.py")[:2] == (0, True)
    assert _commit(repo, "src/b.py")[:2] == (0, False), "a pass is remembered"


def _set_scope(repo: Repo, old: str, new: str) -> None:
    """``scope`` changed in ledger.toml with its size and modification time kept (an
    edit within one tick of a coarse clock): the content is what the pass is keyed by."""
    toml = repo.path / "ledger.toml"
    before = toml.stat()
    text = toml.read_text()
    assert old in text and len(old) == len(new)
    toml.write_text(text.replace(old, new))
    os.utime(toml, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert toml.stat().st_size == before.st_size


def test_what_the_full_check_would_say_is_still_said(camp: Repo) -> None:  # noqa: F811
    """The cases a helper found where the remembered pass answered what the full check
    refuses or warns about: the configuration's content changed with its stat kept, a
    scope of one empty glob (every path warned), the configuration replaced by a link."""
    _armed(camp)
    _set_scope(camp, '"src/**"', '"lib/**"')
    code, full, said = _commit(camp, "src/c.py")
    assert code == 0 and full and "[campaign-scope] src/c.py" in said, said
    _set_scope(camp, '"lib/**"', '""      ')
    code, full, said = _commit(camp, "src/d.py")
    assert code == 0 and full and "[campaign-scope] src/d.py" in said, said
    code, full, said = _commit(camp, "src/e.py")
    assert code == 0 and full and "[campaign-scope] src/e.py" in said, "remembered, still said"
    _set_scope(camp, '""      ', '"src/**"')
    toml = camp.path / "ledger.toml"
    toml.rename(camp.path / "real.toml")
    toml.symlink_to("real.toml")
    code, full, said = _commit(camp, "src/f.py")
    assert code == 1 and full and "not a regular file" in said, said


def test_a_ledger_dir_written_with_a_dot_is_the_same_dir(bare_repo: Repo) -> None:
    """``dir = "./training_log"``: the hooks read it as the configuration's model does,
    so a ledger file staged by hand is a ledger file, never code the remembered pass
    lets through (found by a helper: the owner file deleted, the campaign un-armed)."""
    repo = bare_repo
    (repo.path / "ledger.toml").write_text(TEMPLATE.read_text().replace("${dir}", "./training_log"))
    ok(repo, "init")
    ok(repo, "hooks", "install")
    repo.write("src/app.py", "speed = 1\n")
    repo.commit_all("feat(src): the base")
    repo.write("training_log/contract.md", "# Contract\n\nSpeed of src/.\n")
    ok(repo, "contract")
    _armed(repo)
    owner = [p for p in repo.git("ls-files", "training_log").split() if "owner" in p]
    assert owner, repo.git("ls-files", "training_log")
    repo.git("rm", "-q", "--", *owner)
    done = subprocess.run(
        ["git", "commit", "-q", "-m", "chore: unarm"],
        cwd=repo.path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 1 and "[transition-only]" in done.stderr, done.stderr
