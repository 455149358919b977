"""The core: init/status/next/log/show, transitions as commits, hermetic errors."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from ledger.core.store import Snapshot, Store, Transition
from tests.helpers import Repo, fingerprint, git, ledger


def test_init_makes_exactly_one_commit_with_init_trailer(bare_repo: Repo) -> None:
    result = bare_repo.ok("init")
    assert "initialised" in result.out
    assert bare_repo.git("rev-list", "--count", "HEAD").strip() == "1"
    assert bare_repo.trailers() == {"Ledger-Transition": "init", "Ledger-Step": "init"}
    files = bare_repo.git("ls-tree", "-r", "--name-only", "HEAD").split()
    assert files == [
        ".gitattributes",
        "ledger.toml",
        "training_log/README.md",
        "training_log/_template.md",
    ]
    assert bare_repo.git("status", "--porcelain") == ""


def test_init_refuses_when_already_initialised(repo: Repo) -> None:
    before = fingerprint(repo.path)
    result = repo.run("init")
    assert result.code == 1
    assert "already has a ledger" in result.err
    assert fingerprint(repo.path) == before


@pytest.mark.parametrize("preset", ["versions", "campaign", "batches"])
def test_init_presets_and_custom_dir(bare_repo: Repo, preset: str) -> None:
    bare_repo.ok("init", "--preset", preset, "--dir", "ledger_data")
    status = bare_repo.ok("status", "--json").json()
    assert status["preset"] == preset
    assert status["dir"] == "ledger_data"


def test_init_adopts_a_hand_written_ledger_toml(bare_repo: Repo) -> None:
    text = (
        '[ledger]\ndir = "log"\n\n[gates.acc]\nmetric = "acc"\n[gates.acc.metrics]\nacc = "$.acc"\n'
    )
    bare_repo.write("ledger.toml", text)
    bare_repo.ok("init")
    assert bare_repo.git("show", "HEAD:ledger.toml") == text
    assert bare_repo.git("status", "--porcelain") == ""


def test_status_and_log_json_have_documented_keys(repo: Repo) -> None:
    status = repo.ok("status", "--json").json()
    for key in (
        "schema",
        "preset",
        "dir",
        "branch",
        "commit",
        "counts",
        "open",
        "last",
        "triggers",
        "reflection_due",
        "phase",
        "overrides",
        "problems",
        "next",
    ):
        assert key in status, key
    assert status["branch"] == "main"
    assert set(status["next"]) == {
        "action",
        "command",
        "reason",
        "step",
        "placeholders",
        "meanings",
        "edit",
        "call",
    }
    assert status["next"] == repo.ok("next", "--json").json()  # the same object
    log = repo.ok("log", "--json").json()
    assert len(log) == 1
    assert set(log[0]) >= {"commit", "time", "kind", "step", "subject", "author"}
    assert log[0]["kind"] == "init"
    nxt = repo.ok("next", "--json").json()
    assert nxt["action"] == "register"
    assert nxt["command"].startswith("git ledger register V1 ")


def test_git_ledger_works_as_a_git_subcommand(repo: Repo) -> None:
    proc = subprocess.run(
        ["git", "ledger", "status", "--json"],
        cwd=repo.path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert '"preset": "versions"' in proc.stdout


def _note(path: str, data: bytes, step: str = "n1") -> object:
    def build(snap: Snapshot) -> Transition:
        return Transition(kind="note", step=step, subject=f"note {step}", writes={path: data})

    return build


def test_transition_commits_only_its_own_paths(repo: Repo) -> None:
    repo.write("src/staged.py", "x = 1\n")
    repo.write("src/unstaged.py", "y = 1\n")
    repo.commit_all("add sources")
    repo.write("src/staged.py", "x = 2\n")
    repo.git("add", "src/staged.py")
    repo.write("src/unstaged.py", "y = 2  # work in progress\n")
    repo.write("untracked.txt", "mine\n")

    store = Store(repo.path)
    store.transact(_note("training_log/notes/a.json", b'{"a": 1}\n'))  # type: ignore[arg-type]

    assert repo.git("show", "--name-only", "--format=", "HEAD").split() == [
        "training_log/notes/a.json"
    ]
    assert repo.git("diff", "--cached", "--name-only").split() == ["src/staged.py"]
    assert repo.git("diff", "--name-only").split() == ["src/unstaged.py"]
    assert (repo.path / "src/unstaged.py").read_text() == "y = 2  # work in progress\n"
    assert (repo.path / "untracked.txt").read_text() == "mine\n"
    assert (repo.path / "training_log/notes/a.json").read_bytes() == b'{"a": 1}\n'
    porcelain = repo.git("status", "--porcelain").splitlines()
    assert sorted(porcelain) == sorted(
        ["?? untracked.txt", "M  src/staged.py", " M src/unstaged.py"]
    )


def test_transition_refuses_to_overwrite_uncommitted_edits_of_its_path(repo: Repo) -> None:
    readme = repo.path / "training_log/README.md"
    readme.write_text(readme.read_text() + "\nmy notes\n")
    before = fingerprint(repo.path)
    store = Store(repo.path)
    from ledger.core.errors import Refused

    with pytest.raises(Refused, match="uncommitted changes"):
        store.transact(_note("training_log/README.md", b"replaced\n"))  # type: ignore[arg-type]
    assert fingerprint(repo.path) == before


def test_transition_on_unborn_branch_and_in_linked_worktree(
    bare_repo: Repo, tmp_path: Path
) -> None:
    store = Store(bare_repo.path)
    store.transact(_note("a.json", b"{}\n"))  # type: ignore[arg-type]
    assert bare_repo.git("rev-list", "--count", "HEAD").strip() == "1"
    wt = tmp_path / "wt"
    bare_repo.git("worktree", "add", "-q", "-b", "side", str(wt))
    Store(wt).transact(_note("b.json", b"{}\n", "n2"))  # type: ignore[arg-type]
    assert git(wt, "log", "-1", "--format=%s").strip() == "note n2"
    assert git(wt, "status", "--porcelain") == ""
    assert (wt / "b.json").exists()
    assert bare_repo.git("rev-list", "--count", "main").strip() == "1"


def test_detached_head_is_refused_with_a_clear_message(repo: Repo) -> None:
    repo.git("checkout", "-q", "--detach")
    store = Store(repo.path)
    from ledger.core.errors import BadInput

    with pytest.raises(BadInput, match="HEAD is detached"):
        store.transact(_note("x.json", b"{}\n"))  # type: ignore[arg-type]


def test_unset_identity_is_bad_input(bare_repo: Repo, monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL"):
        monkeypatch.delenv(var)
    monkeypatch.setenv("EMAIL", "")
    before = fingerprint(bare_repo.path)
    result = bare_repo.run("init")
    assert result.code == 2, result.err
    assert "identity is not set" in result.err
    assert len(result.err.strip().splitlines()) == 1
    assert fingerprint(bare_repo.path) == before


def test_two_processes_writing_100_transitions_each(repo: Repo) -> None:
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "tests.writer", str(repo.path), "100", tag],
            cwd=Path(__file__).parent.parent,
        )
        for tag in ("a", "b")
    ]
    assert [p.wait(timeout=300) for p in procs] == [0, 0]
    log = repo.git("log", "--format=%(trailers:key=Ledger-Step,valueonly)").split()
    assert len([s for s in log if s.startswith(("a-", "b-"))]) == 200
    assert len(set(log)) == len(log)
    repo.git("fsck", "--strict")
    locks = [p for p in (repo.path / ".git").rglob("*.lock") if p.name != "write.lock"]
    assert locks == []
    assert repo.git("status", "--porcelain") == ""


@pytest.mark.parametrize(
    "case",
    ["outside-repo", "corrupt-toml", "unknown-key", "traversal-id", "option-like-id", "bad-rev"],
)
def test_bad_input_exits_2_with_one_line_and_changes_nothing(
    repo: Repo, tmp_path: Path, case: str
) -> None:
    cwd = repo.path
    args: tuple[str, ...] = ("status",)
    if case == "outside-repo":
        cwd = tmp_path / "elsewhere"
        cwd.mkdir()
    elif case == "corrupt-toml":
        repo.write("ledger.toml", "[ledger\ndir = ")
    elif case == "unknown-key":
        repo.write("ledger.toml", '[ledger]\ndir = "training_log"\nbogus = 1\n')
    elif case == "traversal-id":
        args = ("show", "../../etc/x")
    elif case == "option-like-id":
        args = ("show", "--", "-rf")
    elif case == "bad-rev":
        args = ("log", "no-such-branch")
    before = fingerprint(repo.path)
    result = ledger(cwd, *args)
    assert result.code == 2, (result.code, result.err)
    assert len(result.err.strip().splitlines()) == 1, result.err
    assert "Traceback" not in result.err
    assert fingerprint(repo.path) == before


def test_unknown_key_error_names_file_key_and_allowed(repo: Repo) -> None:
    repo.write("ledger.toml", '[ledger]\ndir = "training_log"\nbogus = 1\n')
    err = repo.run("status").err
    assert "ledger.toml" in err and "ledger.bogus" in err and "allowed here: dir, preset" in err
    repo.write("ledger.toml", '[gates.g]\nmetric = "m"\nsigma = 2\n[gates.g.metrics]\nm = "$.m"\n')
    err = repo.run("status").err
    assert "gates.g.sigma" in err and "noise_floor" in err


def test_internal_error_exits_3_with_traceback_log(repo: Repo) -> None:
    # The test plants the bug itself: a wrapper process breaks one verb, then
    # runs the real entry point (the program has no crash switch).
    boom = (
        "import sys, ledger.cli.status as verb\n"
        "def broken(*args, **kwargs):\n    raise RuntimeError('a bug')\n"
        "verb.run_status = broken\n"
        "from ledger.cli.app import main\nsys.argv = ['git-ledger', 'status']\nmain()\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", boom],
        cwd=repo.path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 3
    assert "internal error" in proc.stderr and "last-error.log" in proc.stderr
    assert "Traceback" in (repo.path / ".git/ledger/last-error.log").read_text()


def test_python_dash_m_and_help(repo: Repo) -> None:
    result = repo.ok("--help")
    for verb in ("init", "status", "next", "log", "show"):
        assert verb in result.out
    assert ledger(repo.path, "no-such-verb").code == 2
