"""The plumbing written once (ledger.core.repobase): what the hooks and the program share."""

from __future__ import annotations

import errno
import os
import stat
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from ledger.core import repobase
from ledger.core.commitrules import version_ids
from ledger.core.model.config import LedgerConfig, parse_config
from ledger.core.model.ids import try_parse_version
from ledger.core.store import Store
from tests.helpers import Repo, git
from tests.test_hooks import commit

HEAVY = ("pydantic", "click", "rich", "pygit2", "yaml", "psutil", "scipy", "numpy")
# What the fast path may import from the package: the shared plumbing, the one
# derived-cache mechanism, the hook itself and the two standard-library-only modules
# of rules it applies.
FAST_PATH_MODULES = {
    "ledger",
    "ledger.core",
    "ledger.hooks",
    "ledger.core.repobase",
    "ledger.core.caches",
    "ledger.hooks.fast",
    "ledger.core.loops",
    "ledger.core.commitrules",
}


def _profiled_commit(repo: Repo, path: str, text: str) -> tuple[int, set[str]]:
    """Commit ``path`` through the installed hooks, each started with ``-X importtime``."""
    hooks = repo.path / ".git" / "hooks"
    for hook in hooks.iterdir():
        script = hook.read_text()
        if "identity: git-ledger-hook" in script:
            hook.write_text(
                script.replace('"$LEDGER_PYTHON" -I -S', '"$LEDGER_PYTHON" -X importtime -I -S')
            )
    repo.write(path, text)
    proc = commit(repo, "docs: a note", path)
    modules = set()
    for line in proc.stderr.splitlines():
        if line.startswith("import time:") and "imported package" not in line:
            modules.add(line.rsplit("|", 1)[1].strip())
    return proc.returncode, modules


def _outside_stdlib(modules: set[str]) -> set[str]:
    return {m for m in modules if m.split(".")[0] not in sys.stdlib_module_names} - {
        *FAST_PATH_MODULES
    }


@pytest.mark.parametrize("ledger_repo", [True, False], ids=["ledger", "no-ledger"])
def test_a_commit_without_ledger_work_imports_only_repobase_and_the_standard_library(
    bare_repo: Repo, ledger_repo: bool
) -> None:
    if ledger_repo:
        bare_repo.ok("init")
    bare_repo.ok("hooks", "install")
    code, modules = _profiled_commit(bare_repo, "notes.md", "a note\n")
    assert code == 0
    assert (
        "ledger.hooks.fast" in modules and "ledger.core.repobase" in modules
    )  # the probe sees them
    assert not {m for m in modules if m.split(".")[0] in HEAVY}, sorted(modules)
    assert _outside_stdlib(modules) == set(), sorted(modules)


def test_a_code_commit_of_a_loop_without_versions_stays_light(bare_repo: Repo) -> None:
    """A batch loop's code belongs to no version: no hook looks one up (prepare-commit-msg
    did, through the full program, whenever the ledger's tree had changed)."""
    bare_repo.ok("init", "--preset", "batches")
    bare_repo.ok("hooks", "install")
    code, modules = _profiled_commit(bare_repo, "src/model.py", "WEIGHT = 1\n")
    assert code == 0
    assert "ledger.hooks.fast" in modules
    assert not {m for m in modules if m.split(".")[0] in HEAVY}, sorted(modules)


def test_the_import_probe_sees_the_heavy_path_when_there_is_ledger_work(repo: Repo) -> None:
    """The check above can fail: a commit touching the ledger dir imports pydantic."""
    repo.ok("hooks", "install")
    _, modules = _profiled_commit(repo, "training_log/notes.md", "by hand\n")
    assert "ledger.hooks.full" in modules and "pydantic" in modules


def test_repobase_itself_imports_only_the_standard_library() -> None:
    probe = (
        "import sys; sys.path.insert(0, sys.argv[1]); import ledger.core.repobase;"
        "print(' '.join(sorted(sys.modules)))"
    )
    root = str(Path(repobase.__file__).parent.parent.parent)
    done = subprocess.run(
        [sys.executable, "-I", "-S", "-c", probe, root], capture_output=True, text=True, check=True
    )
    modules = set(done.stdout.split()) - {"__main__"}
    assert _outside_stdlib(modules) == set()
    assert not {"re", "subprocess", "typing", "tomllib"} & modules


# --- finding the repository ----------------------------------------------------------


def test_locate_agrees_with_git_and_the_store_from_a_subdirectory_and_a_linked_worktree(
    repo: Repo, tmp_path: Path
) -> None:
    sub = repo.path / "src" / "deep"
    sub.mkdir(parents=True)
    top, gitdir, common = repobase.locate(str(sub)) or ("", "", "")
    assert Path(top) == repo.path and Path(gitdir) == Path(common) == repo.path / ".git"
    linked = tmp_path / "linked"
    repo.git("worktree", "add", "-q", str(linked), "-b", "side")
    top, gitdir, common = repobase.locate(str(linked)) or ("", "", "")
    assert Path(top) == linked
    assert Path(gitdir) == Path(git(linked, "rev-parse", "--absolute-git-dir").strip())
    assert Path(common) == repo.path / ".git" == Store(linked).common_dir
    assert Path(common) != Path(gitdir)


def test_locate_from_a_hooks_environment_needs_no_git_and_gives_the_same_answer(
    repo: Repo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    linked = tmp_path / "linked"
    repo.git("worktree", "add", "-q", str(linked), "-b", "side")
    asked = repobase.locate(str(linked))
    monkeypatch.chdir(linked)
    monkeypatch.setenv("GIT_INDEX_FILE", str(Path(asked[1] if asked else "") / "index"))
    monkeypatch.setenv("PATH", str(tmp_path / "no-git-here"))  # git cannot be asked
    assert repobase.locate() == asked


def test_locate_outside_a_work_tree_is_none(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    assert repobase.locate(str(plain)) is None
    git(tmp_path, "init", "-q", "--bare", "server.git")
    assert repobase.locate(str(tmp_path / "server.git")) is None


# --- ledger.toml ----------------------------------------------------------------------

NON_DEFAULT = """\
[ledger]
dir = "log/"
id_prefix = "Exp"
preset = "campaign"
[hooks]
conventional_commits = false
require_open_version = false
max_files_warning = 9
warn_outside_plan = false
free_paths = ["*.txt"]
"""


def _program_view(config: LedgerConfig, name: str) -> dict[str, str]:
    """What the full program reads for the keys the hooks read, as the hooks store them."""
    out = {"config_file": name}
    for table, keys in repobase.HOOK_KEYS.items():
        for key in keys:
            value = getattr(getattr(config, table), key)
            if isinstance(value, list):
                out[key] = "\x1f".join(value)
            elif isinstance(value, bool):
                out[key] = "1" if value else "0"
            else:
                out[key] = str(value)
    return out


@pytest.mark.parametrize("text", ["", NON_DEFAULT], ids=["defaults", "every-key-set"])
@pytest.mark.parametrize("name", [repobase.CONFIG_FILE, repobase.PYPROJECT])
def test_the_hooks_and_the_program_read_the_same_settings(text: str, name: str) -> None:
    if name == repobase.PYPROJECT:
        text = "[tool.ledger]\n" + text.replace("[ledger]", "[tool.ledger.ledger]").replace(
            "[hooks]", "[tool.ledger.hooks]"
        )
    table = repobase.ledger_table(tomllib.loads(text), name)
    assert table is not None
    assert repobase.hook_settings(table, name) == _program_view(parse_config(text, name), name)


def test_the_hooks_settings_cache_is_keyed_by_the_code_that_parsed_it(repo: Repo) -> None:
    from ledger.hooks import fast as hookrun

    top, common = str(repo.path), str(repo.path / ".git")
    fresh = hookrun.settings(top, common)
    assert fresh is not None and fresh["dir"] == "training_log"
    cache = repo.path / ".git" / "ledger" / hookrun.SETTINGS_CACHE
    key = cache.read_text().splitlines()[0]
    # The cache is consulted: an entry under this key is taken as it stands...
    cache.write_text(f"{key}\ndir=elsewhere\n")
    assert hookrun.settings(top, common) == {"dir": "elsewhere"}
    # ...but the same file read by other code (another version, an edited
    # checkout) is parsed again.
    other = "0.0.1:1:1:2:2 " + key.split(" ", 1)[1]
    cache.write_text(f"{other}\ndir=elsewhere\n")
    assert hookrun.settings(top, common) == fresh


def test_pyproject_without_a_ledger_table_is_no_configuration() -> None:
    assert (
        repobase.ledger_table(tomllib.loads("[tool.black]\nline = 1\n"), "pyproject.toml") is None
    )
    assert repobase.ledger_table({"tool": "x"}, "pyproject.toml") is None


# --- version ids and result names -----------------------------------------------------

IDS = ["V1", "V200", "V200a", "V200ab", "V213.A", "V213a.Cell9", "V123456789"]
NOT_IDS = [
    "V",
    "V200abc",
    "V200A",
    "V1234567890",
    "V1.",
    "V1.a",
    "V1.A-b",
    "V1\n",
    "V٣",  # a digit, but not an ASCII one
    "X1",
    "v1",
    "V1.ABCDEFGHIJKLMNOPQ",
]


@pytest.mark.parametrize("value", IDS + NOT_IDS)
def test_one_grammar_of_version_ids_for_the_hooks_and_the_program(value: str) -> None:
    parsed = try_parse_version(value, "V")
    assert (parsed is not None) == (value in IDS)
    # the commit-msg hook names the same ids in a subject (a word, less its punctuation)
    word = value.strip().strip(".")
    named = {word} if try_parse_version(word, "V") else set()
    assert version_ids(f"feat(x): {value} — a bet", "V") == named
    if parsed is not None:
        assert str(parsed) == value
        assert (repobase.base_id(value), repobase.cell_of(value)) == (str(parsed.base), parsed.cell)


def test_a_result_file_is_named_in_one_place() -> None:
    assert repobase.result_stem("42", None, None, False) == "seed-42"
    assert repobase.result_stem(None, "w3", 2, True) == "window-w3-r2-failed"
    assert repobase.result_path("training_log", "V1", "recent", "seed-1") == (
        "training_log/results/V1/recent/seed-1.json"
    )
    assert repobase.result_path("", "V1", "recent", "seed-1") == "results/V1/recent/seed-1.json"


# --- the atomic writer ----------------------------------------------------------------


def _leftovers(directory: Path, keep: set[str]) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name not in keep)


def test_a_write_that_fails_midway_leaves_the_old_file_and_no_temporary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "state.json"
    target.write_text("old\n")
    real_write = os.write
    calls = []

    def disk_full_after_a_few_bytes(fd: int, data: bytes) -> int:
        calls.append(fd)
        if len(calls) == 1:
            return real_write(fd, bytes(data)[:3])  # part of it reaches the file
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "write", disk_full_after_a_few_bytes)
    with pytest.raises(OSError) as caught:
        repobase.write_atomic(target, "new content that does not fit\n")
    monkeypatch.undo()
    assert caught.value.errno == errno.ENOSPC and len(calls) == 2
    assert target.read_text() == "old\n"
    assert _leftovers(tmp_path, {"state.json"}) == []


def test_a_rename_that_fails_leaves_the_target_and_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "view"
    target.mkdir()
    (target / "inside").write_text("kept\n")
    with pytest.raises(OSError):
        repobase.write_atomic(target, b"data")
    assert (target / "inside").read_text() == "kept\n"
    assert _leftovers(tmp_path, {"view"}) == []


def test_the_file_and_its_directory_reach_the_disk_before_the_writer_returns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    flushed: list[str] = []
    real_fsync = os.fsync

    def spy(fd: int) -> None:
        mode = os.fstat(fd).st_mode
        flushed.append("dir" if stat.S_ISDIR(mode) else "file")
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", spy)
    repobase.write_atomic(tmp_path / "sub" / "journal.json", "{}")
    assert flushed == ["file", "dir"]
    flushed.clear()
    repobase.write_atomic(tmp_path / "cache", "{}", durable=False)
    assert flushed == []


def test_the_writer_keeps_permissions_and_never_follows_a_planted_link(tmp_path: Path) -> None:
    private = tmp_path / "private"
    private.write_text("old")
    private.chmod(0o640)
    repobase.write_atomic(private, "new")
    assert stat.S_IMODE(private.stat().st_mode) == 0o640 and private.read_text() == "new"

    umask = os.umask(0o022)
    try:
        repobase.write_atomic(tmp_path / "fresh", "x")
        repobase.write_atomic(tmp_path / "hook", "#!/bin/sh\n", mode=0o755)
    finally:
        os.umask(umask)
    assert stat.S_IMODE((tmp_path / "fresh").stat().st_mode) == 0o644
    assert stat.S_IMODE((tmp_path / "hook").stat().st_mode) == 0o755

    # A link at the target is replaced, not written through.
    outside = tmp_path / "outside"
    outside.write_text("untouched")
    link = tmp_path / "link"
    link.symlink_to(outside)
    repobase.write_atomic(link, "replaced")
    assert outside.read_text() == "untouched" and not link.is_symlink()
    assert link.read_text() == "replaced"


def test_no_writer_in_the_package_bypasses_the_atomic_writer() -> None:
    """Every file that holds state is written by repobase.write_atomic.

    Allowed elsewhere: run logs appended to on purpose (created O_EXCL|O_NOFOLLOW), the
    entry cache's log of new entries (derived data; a torn line is skipped),
    the writer lock (opened, never written), and moving a damaged file aside.
    """
    import ast

    allowed = {
        ("ledger/core/repobase.py", "os.open"),
        ("ledger/core/repobase.py", "os.replace"),
        ("ledger/presets/versions/runner.py", "os.open"),  # a run's log, O_EXCL|O_NOFOLLOW
        ("ledger/presets/versions/run.py", "open"),  # the detached batch's log
        ("ledger/core/caches.py", "os.open"),  # a cache log's appended lines (derived data)
        ("ledger/core/store/write.py", "os.open"),  # write.lock: flock only
        # A partial file moved aside after a crash, nothing written:
        ("ledger/core/store/worktree.py", "os.replace"),
        # The epoch's benchmark script laid over a throwaway worktree the run made:
        ("ledger/presets/campaign/runner.py", "write_bytes"),
    }
    root = Path(repobase.__file__).parent.parent
    found = set()
    for path in root.rglob("*.py"):
        rel = f"ledger/{path.relative_to(root).as_posix()}"
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            name = ast.unparse(func)
            if isinstance(func, ast.Attribute) and func.attr in ("write_text", "write_bytes"):
                found.add((rel, func.attr))
            elif name in ("os.replace", "os.rename", "os.open", "shutil.move"):
                found.add((rel, name))
            elif name == "open" and any(
                isinstance(a, ast.Constant)
                and isinstance(a.value, str)
                and set(a.value) & set("wax")
                for a in [*node.args[1:2], *(k.value for k in node.keywords if k.arg == "mode")]
            ):
                found.add((rel, "open"))
    assert found - allowed == set()
    assert allowed - found == set()  # the allowance is not stale either
