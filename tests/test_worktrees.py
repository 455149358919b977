"""The working trees users have: CRLF checkouts, sparse checkouts, split and sparse indexes.

Every transition must leave such a tree as git would: clean to ``git status``
and to ``git diff-index HEAD`` (real stat data, no refresh), nothing written
outside a sparse checkout, the skip-worktree bits right.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.helpers import Repo, measure, register


def _clean(repo: Repo) -> None:
    assert repo.git("status", "--porcelain", "--untracked-files=all") == ""
    # No --refresh first: the index entries a transition writes carry real stat data.
    assert repo.git("diff-index", "HEAD") == ""


def _code_commit(repo: Repo, vid: str) -> None:
    repo.write("src/model.py", f"# {vid}\nscore = 1\n")
    repo.git("add", "src/model.py")
    proc = subprocess.run(
        ["git", "commit", "-q", "-m", f"feat(model): {vid} — wider cache"],
        cwd=repo.path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr


def _walk_the_loop(repo: Repo) -> None:
    """Register, commit code, record, conclude: clean after every step."""
    repo.ok("hooks", "install")
    assert register(repo, "V1").code == 0
    _clean(repo)
    _code_commit(repo, "V1")
    _clean(repo)
    measure(repo, "V1", "recent", 10.0)
    _clean(repo)
    repo.ok("conclude", "V1", "--verdict", "confirmed", "--next", "continue")
    _clean(repo)
    assert repo.git(
        "log", "-1", "--format=%(trailers:key=Ledger-Transition,valueonly)"
    ).strip() == ("conclude")


def _fresh_checkout(repo: Repo) -> None:
    """Re-check out every file, as a clone with the new settings would have them."""
    repo.git("rm", "-q", "-r", "--cached", ".")
    for path in repo.git("ls-tree", "-r", "--name-only", "HEAD").split():
        (repo.path / path).unlink()
    repo.git("reset", "-q", "--hard", "HEAD")


def test_autocrlf_checkout_is_clean_and_transitions_write_crlf(repo: Repo) -> None:
    repo.git("config", "core.autocrlf", "true")
    _fresh_checkout(repo)
    readme = repo.path / "training_log/README.md"
    assert b"\r\n" in readme.read_bytes(), "the checkout is CRLF"
    _clean(repo)
    _walk_the_loop(repo)
    assert b"\r\n" in (repo.path / "training_log/V1.md").read_bytes(), "written through smudge"
    assert b"\r" not in repo.git("show", "HEAD:training_log/V1.md").encode(), "committed as LF"


def test_eol_crlf_attribute_checkout_is_clean(repo: Repo) -> None:
    repo.write(".gitattributes", "* text eol=crlf\n")
    repo.git("add", ".gitattributes")
    repo.git("commit", "-q", "-m", "chore: line endings")
    _fresh_checkout(repo)
    assert b"\r\n" in (repo.path / "ledger.toml").read_bytes()
    _clean(repo)
    _walk_the_loop(repo)
    assert b"\r\n" in (repo.path / "training_log/V1.md").read_bytes()


def test_reflection_written_in_a_crlf_checkout_is_committed_as_lf(repo: Repo) -> None:
    repo.git("config", "core.autocrlf", "true")
    _fresh_checkout(repo)
    assert register(repo, "V1").code == 0
    measure(repo, "V1", "recent", 10.0)
    repo.ok("conclude", "V1", "--verdict", "confirmed", "--next", "continue")
    repo.ok("reflect", "V1")
    path = repo.path / "training_log/REFLECTION_V1.md"
    lines = []
    for line in path.read_text().splitlines():
        lines.append(line)
        if line.startswith("## "):
            lines += ["", f"Checked: {line[3:].lower()}."]
    path.write_bytes("\r\n".join(lines).encode() + b"\r\n")  # as a Windows editor saves it
    repo.ok("reflect", "V1", "--commit")
    committed = repo.git("show", "HEAD:training_log/REFLECTION_V1.md")
    assert "\r" not in committed and "Checked: eval stability." in committed
    _clean(repo)


@pytest.mark.parametrize("cone", [True, False], ids=["cone", "non-cone"])
def test_sparse_checkout_transitions_never_write_outside_it(repo: Repo, cone: bool) -> None:
    repo.write("src/model.py", "score = 0\n")
    repo.git("add", "src/model.py")
    repo.git("commit", "-q", "-m", "chore: code")
    if cone:
        repo.git("sparse-checkout", "set", "--cone", "src")
    else:
        repo.git("sparse-checkout", "set", "--no-cone", "/*", "!/training_log/")
    assert not (repo.path / "training_log").exists()
    _walk_the_loop(repo)
    assert not (repo.path / "training_log").exists(), "nothing written outside the sparse checkout"
    tags = repo.git("ls-files", "-t", "training_log").split("\n")
    assert tags and all(line.startswith("S ") for line in tags if line), tags
    assert "training_log/V1.md" in repo.git("ls-tree", "-r", "--name-only", "HEAD")
    repo.git("sparse-checkout", "disable")
    assert (repo.path / "training_log/V1.md").is_file()
    _clean(repo)


def test_sparse_checkout_without_the_config_file_still_works(repo: Repo) -> None:
    repo.write("src/model.py", "score = 0\n")
    repo.git("add", "src/model.py")
    repo.git("commit", "-q", "-m", "chore: code")
    repo.git("sparse-checkout", "set", "--no-cone", "/src/")
    assert not (repo.path / "ledger.toml").exists()
    _walk_the_loop(repo)
    assert sorted(p.name for p in repo.path.iterdir()) == [".git", "src"]


def test_plain_checkout_is_clean_to_diff_index_after_transitions(repo: Repo) -> None:
    _clean(repo)
    _walk_the_loop(repo)


def test_sparse_checkout_that_includes_the_ledger_writes_it(repo: Repo) -> None:
    repo.git("sparse-checkout", "set", "--cone", "training_log", "src")
    _walk_the_loop(repo)
    assert (repo.path / "training_log/V1.md").is_file()
    assert "S training_log/V1.md" not in repo.git("ls-files", "-t", "training_log")


def test_sparse_index_works(repo: Repo) -> None:
    repo.write("src/model.py", "score = 0\n")
    repo.write("data/a.txt", "a\n")
    repo.git("add", ".")
    repo.git("commit", "-q", "-m", "chore: code")
    repo.git("sparse-checkout", "set", "--cone", "--sparse-index", "src")
    assert "S data/" in repo.git("ls-files", "-t", "--sparse"), "the index is sparse"
    _walk_the_loop(repo)
    assert not (repo.path / "training_log").exists()
    assert not (repo.path / "data").exists()


def test_split_index_works(repo: Repo) -> None:
    repo.git("update-index", "--split-index")
    assert list((repo.path / ".git").glob("sharedindex.*")), "the index is split"
    _walk_the_loop(repo)
    repo.git("update-index", "--no-split-index")
    _clean(repo)


def test_touched_or_copied_tree_with_stale_stat_data_is_updated(repo: Repo) -> None:
    """A file whose stat data changed but not its content (a copied repository, a
    touch) is refreshed, as git checkout would, not reported as a conflict."""
    import os

    readme = repo.path / "training_log/README.md"
    readme.write_bytes(readme.read_bytes())
    os.utime(readme, (1, 1))
    assert repo.git("diff-files", "--name-only") == "training_log/README.md\n"
    assert register(repo, "V1").code == 0
    _clean(repo)


def test_a_transition_first_finishes_an_interrupted_one(repo: Repo) -> None:
    """A failed index update never lets the next transition build on a stale index
    (which a plain git commit would then turn into deletions)."""
    repo.write(".git/info/attributes", "training_log/README.md filter=broken\n")
    repo.git("config", "filter.broken.smudge", "false")
    repo.git("config", "filter.broken.clean", "cat")
    repo.git("config", "filter.broken.required", "true")
    failed = register(repo, "V1")
    # Exit 4: the registration is committed, the work tree is behind (git's reason named).
    assert failed.code == 4 and "committed as" in failed.err and "doctor --fix" in failed.err
    assert "smudge filter broken" in failed.err
    repo.git("config", "filter.broken.smudge", "cat")
    measure(repo, "V1", "recent", 10.0, seeds=(1,))
    _clean(repo)
    assert "training_log/V1.md" in repo.git("ls-files", "training_log")


def test_transition_keeps_what_the_user_staged_and_their_edits(repo: Repo) -> None:
    repo.write("notes.txt", "draft\n")
    repo.git("add", "notes.txt")
    repo.write("notes.txt", "draft, edited\n")
    assert register(repo, "V1").code == 0
    assert repo.git("status", "--porcelain") == "AM notes.txt\n"
    assert repo.git("show", ":notes.txt") == "draft\n"


def test_untracked_copy_of_an_entry_is_autosaved_by_doctor(repo: Repo) -> None:
    """An entry file written before a crash (untracked, identical or not) is committed
    and the index follows, though git never overwrites an untracked file."""
    repo.write("training_log/notes/n1.md", "a note\n")
    repo.ok("doctor", "--fix")
    assert repo.git("show", "HEAD:training_log/notes/n1.md") == "a note\n"
    _clean(repo)
    repo.write("training_log/notes/n1.md", "a note, edited\n")  # tracked, modified
    repo.ok("doctor", "--fix")
    assert repo.git("show", "HEAD:training_log/notes/n1.md") == "a note, edited\n"
    _clean(repo)


def test_git_add_racing_transitions_is_never_lost(repo: Repo, tmp_path: Path) -> None:
    """Transitions racing 800 ``git add``s (real processes): every add that git
    reports done is still staged at the end."""
    _race(repo, tmp_path, adds=800)


@pytest.mark.soak
def test_git_add_race_soak(repo: Repo, tmp_path: Path) -> None:
    import os

    if os.environ.get("LEDGER_SOAK") != "1":
        pytest.skip("opt-in: LEDGER_SOAK=1")
    _race(repo, tmp_path, adds=5000)


_WRITER = """
import sys
from pathlib import Path
from tests.writer import write_notes
from ledger.core.store import Store
store, stop, n = Store(Path(sys.argv[1])), Path(sys.argv[2]), 0
while not stop.exists() or n < 5:
    write_notes(store, 1, f"race{n}")
    n += 1
print(n)
"""


def _race(repo: Repo, tmp_path: Path, *, adds: int) -> None:
    import sys

    for i in range(adds):
        repo.write(f"user/f{i:04d}.txt", f"{i}\n")
    stop = tmp_path / "stop"
    # The adder retries an add git refuses (index.lock is held), as a script would;
    # an add that exits 0 must stay staged.
    adder = tmp_path / "adder.sh"
    adder.write_text(
        "#!/bin/sh\n"
        f"i=0; while [ $i -lt {adds} ]; do\n"
        "  f=$(printf 'user/f%04d.txt' $i)\n"
        '  until git add -- "$f" 2>/dev/null; do :; done\n'
        "  i=$((i+1))\n"
        "done\n"
        f"touch '{stop}'\n"
    )
    adder.chmod(0o755)
    writer = subprocess.Popen(
        [sys.executable, "-c", _WRITER, str(repo.path), str(stop)],
        cwd=Path(__file__).resolve().parent.parent,
        stdout=subprocess.PIPE,
        text=True,
    )
    add_proc = subprocess.Popen([str(adder)], cwd=repo.path)
    assert add_proc.wait() == 0
    out, _ = writer.communicate()
    assert writer.returncode == 0
    transitions = int(out.strip())
    staged = set(repo.git("diff", "--cached", "--name-only").split())
    lost = [f"user/f{i:04d}.txt" for i in range(adds) if f"user/f{i:04d}.txt" not in staged]
    assert not lost, f"{len(lost)} of {adds} git adds were unstaged: {lost[:5]}"
    notes = repo.git("ls-files", "training_log/notes").split()
    assert len(notes) == transitions
    assert repo.git("status", "--porcelain", "--", "training_log") == ""
    print(f"git add race: {adds} adds, {transitions} transitions, 0 lost")
