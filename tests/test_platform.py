"""Portability (#19): processes through psutil, reused PIDs, git's dispatch, Windows, case.

Process tests start real processes and kill only those they started.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import Repo, fingerprint

ROOT = Path(__file__).resolve().parent.parent


def git_ledger(repo: Repo, *args: str) -> subprocess.CompletedProcess[str]:
    """``git ledger ...`` as users type it: git finds ``git-ledger`` on PATH and runs it."""
    return subprocess.run(
        ["git", "ledger", *args], cwd=repo.path, capture_output=True, text=True, check=False
    )


def _age(path: Path, minutes: float) -> None:
    old = time.time() - minutes * 60
    os.utime(path, (old, old))


@contextlib.contextmanager
def sleeper() -> Iterator[subprocess.Popen[bytes]]:
    """An unrelated live process, killed at the end."""
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
    try:
        yield proc
    finally:
        proc.kill()
        proc.wait()


@contextlib.contextmanager
def commit_holding_the_index(repo: Repo) -> Iterator[subprocess.Popen[bytes]]:
    """A live ``git commit`` waiting in its editor, holding .git/index.lock."""
    repo.write("a.txt", "a\n")
    repo.git("add", "a.txt")
    repo.git("commit", "-q", "--no-verify", "-m", "chore: a")
    repo.write("a.txt", "b\n")
    env = {**os.environ, "GIT_EDITOR": "sleep 300 #"}
    proc = subprocess.Popen(
        ["git", "commit", "-a", "--no-verify"], cwd=repo.path, env=env, start_new_session=True
    )
    lock = repo.path / ".git/index.lock"
    try:
        for _ in range(500):
            if lock.exists():
                break
            time.sleep(0.02)
        assert lock.exists()
        yield proc
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


# --- doctor through git's dispatch (#16) -------------------------------------------------


def test_doctor_through_git_dispatch_removes_a_stale_lock(repo: Repo) -> None:
    lock = repo.path / ".git/index.lock"
    lock.write_bytes(b"")
    _age(lock, 30)
    found = git_ledger(repo, "doctor")
    assert found.returncode == 1, found.stdout + found.stderr
    assert "stale lock" in found.stdout
    fixed = git_ledger(repo, "doctor", "--fix")
    assert "removed stale lock" in fixed.stdout, fixed.stdout + fixed.stderr
    assert not lock.exists()
    assert git_ledger(repo, "doctor").returncode == 0


def test_doctor_through_git_dispatch_with_git_options_still_sees_through_itself(
    repo: Repo, tmp_path: Path
) -> None:
    lock = repo.path / ".git/index.lock"
    lock.write_bytes(b"")
    _age(lock, 30)
    fixed = subprocess.run(
        ["git", "-C", str(repo.path), "-c", "core.quotepath=off", "ledger", "doctor", "--fix"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert "removed stale lock" in fixed.stdout, fixed.stdout + fixed.stderr
    assert not lock.exists()


def test_doctor_through_git_dispatch_leaves_a_live_git_process_lock_alone(repo: Repo) -> None:
    with commit_holding_the_index(repo) as proc:
        lock = repo.path / ".git/index.lock"
        _age(lock, 30)
        result = git_ledger(repo, "doctor", "--fix")
        assert lock.exists()
        assert "left alone" in result.stdout and f"git process {proc.pid}" in result.stdout


def test_doctor_in_a_hook_leaves_the_lock_of_the_commit_that_runs_it(repo: Repo) -> None:
    # The git commit that runs the hook is an ancestor of doctor, but not its
    # dispatcher: it holds index.lock while the hook runs.
    report = repo.path.parent / "doctor-in-hook.txt"
    hook = repo.path / ".git/hooks/pre-commit"
    hook.parent.mkdir(exist_ok=True)
    hook.write_text(
        "#!/bin/sh\n"
        "touch -t 200001010000 .git/index.lock\n"  # POSIX touch: make the lock look stale
        f"git ledger doctor --fix > '{report}' 2>&1\n"
        "exit 0\n"
    )
    hook.chmod(0o755)
    repo.write("b.txt", "b\n")
    repo.git("add", "b.txt")
    repo.git("-c", "core.hooksPath=.git/hooks", "commit", "-q", "-m", "chore: b")
    text = report.read_text()
    assert "left alone" in text and "git process" in text, text
    assert "removed stale lock" not in text
    assert repo.git("log", "-1", "--format=%s").strip() == "chore: b"


# --- the run registry: PID and start time ------------------------------------------------


def _record(repo: Repo, name: str, pid: int, started: float | None, argv: list[str]) -> Path:
    from ledger.core import runfiles

    return runfiles.write(
        repo.path / ".git/ledger/runs",
        name,
        {
            "pid": pid,
            "pid_started": started,
            "argv": argv,
            "step": "V1",
            "gate": "recent",
            "label": f"V1 recent {name}",
            "log": str(repo.path / f"{name}.log"),
        },
    )


def test_a_reused_pid_is_not_a_live_run_and_is_never_killed(repo: Repo) -> None:
    import psutil

    with sleeper() as stranger:
        real_start = psutil.Process(stranger.pid).create_time()
        # The run that was recorded under this PID started an hour earlier; the
        # stranger now holding the PID even runs the same program.
        record = _record(
            repo, "run-reused", stranger.pid, real_start - 3600, [sys.executable, "-c", "x"]
        )
        status = repo.ok("status", "--json").json()
        assert status["runs"]["running"] == []
        waited = repo.run("wait", "--timeout", "30", "--json")
        assert waited.code == 0 and waited.json()["done"] is True
        doctor = repo.run("doctor", "--json")
        assert not any("still alive" in p for p in doctor.json()["problems"])
        assert any("is gone" in line for line in doctor.json()["info"])
        fixed = repo.run("doctor", "--fix", "--stop-runs")
        assert "cleared the record of a finished run" in fixed.out, fixed.out
        assert "stopped" not in fixed.out
        assert not record.exists()
        assert stranger.poll() is None  # never signalled
        assert psutil.Process(stranger.pid).create_time() == real_start


def test_a_recorded_live_run_is_reported_and_stopped_with_its_children(repo: Repo) -> None:
    import psutil

    from ledger.core import processes

    parent = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import subprocess, sys, time;"
            "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)']);"
            "print(child.pid, flush=True); time.sleep(300)",
        ],
        stdout=subprocess.PIPE,
    )
    try:
        assert parent.stdout is not None
        child_pid = int(parent.stdout.readline())
        child = psutil.Process(child_pid)
        started = processes.start_time(parent.pid)
        assert started is not None
        record = _record(repo, "run-live", parent.pid, started, [sys.executable])
        status = repo.ok("status", "--json").json()
        assert [r["pid"] for r in status["runs"]["running"]] == [parent.pid]
        found = repo.run("doctor", "--json")
        assert found.code == 1
        assert any(f"pid {parent.pid}" in p for p in found.json()["problems"])
        # --fix alone leaves a run at work running, and that is not a failure of --fix.
        left = repo.run("doctor", "--fix", "--json")
        assert left.code == 0, left.out
        assert any(f"left running: pid {parent.pid}" in i for i in left.json()["info"])
        assert parent.poll() is None and child.is_running() and record.exists()
        stopped = repo.run("doctor", "--fix", "--stop-runs")
        assert "stopped ledger run" in stopped.out, stopped.out
        parent.wait()
        assert parent.returncode == -signal.SIGTERM
        psutil.wait_procs([child], timeout=30)
        assert not child.is_running()
        assert not record.exists()
    finally:
        with contextlib.suppress(ProcessLookupError):
            parent.kill()
        parent.wait()


def test_a_record_without_start_time_needs_its_program(repo: Repo) -> None:
    # Records from before start times were kept: the process must at least run
    # the recorded program, or it is a stranger ...
    from ledger.core import runfiles

    with sleeper() as stranger:
        other = _record(repo, "run-old", stranger.pid, None, ["/nonexistent/eval-program"])
        same = _record(repo, "run-old2", stranger.pid, None, [sys.executable])
        assert runfiles.alive(runfiles.records(other.parent)[0]) is False
        assert runfiles.alive(runfiles.records(same.parent)[1]) is True
        assert runfiles.alive({"pid": True}) is False
        # ... or their "started" clock reading, taken just after the start.
        import psutil

        begun = psutil.Process(stranger.pid).create_time()
        assert runfiles.alive({"pid": stranger.pid, "started": begun + 0.05}) is True
        assert runfiles.alive({"pid": stranger.pid, "started": begun - 3600}) is False
        assert runfiles.alive({"pid": os.getpid() + 10**7, "pid_started": 1.0}) is False


def test_a_zombie_is_not_alive(repo: Repo) -> None:
    from ledger.core import processes, runfiles

    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    started = processes.start_time(proc.pid)
    try:
        import psutil

        for _ in range(3000):  # not reaped yet: a zombie once it has exited
            if psutil.Process(proc.pid).status() == psutil.STATUS_ZOMBIE:
                break
            time.sleep(0.01)
        assert psutil.Process(proc.pid).status() == psutil.STATUS_ZOMBIE
        assert runfiles.alive({"pid": proc.pid, "pid_started": started}) is False
    finally:
        proc.wait()


# --- the hooks' fast path ----------------------------------------------------------------


@pytest.mark.parametrize("stage", ["pre-commit", "commit-msg"])
def test_hooks_fast_path_never_imports_psutil(repo: Repo, stage: str) -> None:
    """A commit with no ledger work runs only the fast path, exactly as the hook starts it."""
    repo.write("notes.txt", "x\n")
    repo.git("add", "notes.txt")
    message = repo.path.parent / "msg.txt"
    message.write_text("docs: notes\n\nLedger-Step: V1\n")
    args = [stage] + ([str(message)] if stage == "commit-msg" else [])
    probe = (
        "import sys; sys.path.insert(0, sys.argv.pop(1));"
        "from ledger.hooks.fast import main; code = main(sys.argv[1:]);"
        "print(code, 'psutil' in sys.modules, 'ledger.core.processes' in sys.modules)"
    )
    env = {**os.environ, "GIT_DIR": str(repo.path / ".git")}
    done = subprocess.run(
        [sys.executable, "-I", "-S", "-c", probe, str(ROOT), *args],
        cwd=repo.path,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    code, psutil_loaded, processes_loaded = done.stdout.split()
    assert (psutil_loaded, processes_loaded) == ("False", "False"), done.stdout + done.stderr
    if stage == "pre-commit":
        assert code == "0", done.stderr  # a code-only commit: the fast path says yes


def test_process_modules_are_imported_lazily() -> None:
    probe = (
        "import sys; import ledger.hooks.fast, ledger.hooks.full, ledger.core.runfiles, ledger.cli.app,"
        " ledger.cli.status, ledger.cli.doctor; print('psutil' in sys.modules)"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=ROOT
    )
    assert done.stdout.strip() == "False"


# --- Windows outside WSL -----------------------------------------------------------------


@pytest.mark.parametrize(
    "entry",
    [
        # the console script's entry point (pyproject [project.scripts])
        "from ledger.__main__ import main; main()",
        # python -m ledger
        "import runpy; runpy.run_module('ledger', run_name='__main__')",
    ],
)
def test_windows_outside_wsl_is_refused_in_one_line(repo: Repo, entry: str) -> None:
    before = fingerprint(repo.path)
    done = subprocess.run(
        [sys.executable, "-c", f"import sys; sys.platform = 'win32'; {entry}", "status"],
        cwd=repo.path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert "Windows outside WSL is not supported" in lines[0]
    assert "Traceback" not in done.stderr
    assert fingerprint(repo.path) == before


# --- nothing Linux-only in what the tool runs --------------------------------------------


# What exists only on Linux (procfs, Linux-only signals and prctl) or only in GNU
# tools (the flags macOS's BSD userland lacks), in the package and the hook script.
LINUX_ONLY = (
    "/proc",
    "SIGPWR",
    "SIGSTKFLT",
    "SIGRTMIN",
    "SIGPOLL",
    "prctl",
    "pidfd",
    "readlink -f",
    "sed -i",
    "date -d",
    "stat -c",
    "--no-run-if-empty",
    "xargs -r",
)


def test_nothing_linux_only_in_what_the_tool_runs() -> None:
    files = [*sorted((ROOT / "ledger").rglob("*.py")), *sorted((ROOT / "hooks").iterdir())]
    offenders = [
        f"{path.relative_to(ROOT)}: {needle}"
        for path in files
        if path.is_file()
        for needle in LINUX_ONLY
        if needle in path.read_text()
    ]
    assert offenders == []


def test_console_script_checks_the_platform_before_importing_click() -> None:
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["scripts"]["git-ledger"] == "ledger.__main__:main"
    classifiers = project["classifiers"]
    assert "Operating System :: POSIX :: Linux" in classifiers
    assert "Operating System :: MacOS" in classifiers
    assert not any("Windows" in c for c in classifiers)


def test_doctor_reads_a_renamed_entry_as_one_entry(repo: Repo) -> None:
    repo.write("training_log/notes-old.md", "notes\n")
    repo.commit_all("docs(ledger): notes")
    repo.git("mv", "training_log/notes-old.md", "training_log/notes-new.md")
    found = repo.run("doctor", "--json")
    problems = found.json()["problems"]
    assert any("uncommitted ledger file training_log/notes-new.md (R)" in p for p in problems)
    assert not any("ining_log" in p.replace("training_log", "") for p in problems), problems
    fixed = repo.run("doctor", "--fix", "--json").json()
    assert any("autosaved training_log/notes-new.md" in line for line in fixed["fixed"])
    assert repo.git("show", "HEAD:training_log/notes-new.md") == "notes\n"


# --- names that differ only in letter case -----------------------------------------------


def test_register_refuses_an_id_that_differs_from_a_taken_one_only_in_case(repo: Repo) -> None:
    from tests.helpers import register

    assert register(repo, "V2a").code == 0
    before = fingerprint(repo.path)
    for clash in ("V2A", "v2a", "v2A"):
        refused = register(repo, clash)
        assert refused.code == 2, refused.err
        assert f"'{clash}' differs from 'V2a' only in letter case" in refused.err
        assert refused.err.count("\n") == 1  # one line
        assert fingerprint(repo.path) == before


def test_gate_names_that_differ_only_in_case_are_refused_naming_both(repo: Repo) -> None:
    config = repo.path / "ledger.toml"
    text = config.read_text()
    twin = text[text.index("[gates.recent]") : text.index("[stats]")]
    config.write_text(text + "\n" + twin.replace("gates.recent", "gates.Recent"))
    repo.commit_all("chore: a second gate")
    before = fingerprint(repo.path)
    for verb in (
        ["status"],
        ["register", "V1", "--bet", "b", "--gate", "recent", "--files", "a.py", "--falsifier", "f"],
        ["doctor"],
    ):
        refused = repo.run(*verb)
        assert refused.code == 2, (verb, refused.err, refused.out)
        assert "'recent' and 'Recent' differ only in letter case" in refused.err, refused.err
        assert fingerprint(repo.path) == before


def test_matrix_cells_that_differ_only_in_case_are_refused(repo: Repo, tmp_path: Path) -> None:
    spec = tmp_path / "cells.toml"
    cell = 'bet = "b {n}"\ngate = "recent"\nfalsifier = "f"\nfiles = ["a.py"]\n'
    spec.write_text(
        "[cells.Ab]\n"
        + cell.format(n=1)
        + "[cells.AB]\n"
        + cell.format(n=2)
        + "[cells.C]\n"
        + cell.format(n=3)
    )
    before = fingerprint(repo.path)
    worktrees = repo.git("worktree", "list", "--porcelain")
    refused = repo.run("matrix", "new", "V3", "--spec", str(spec))
    assert refused.code == 2, refused.err
    assert "cell name" in refused.err and "'Ab'" in refused.err and "'AB'" in refused.err
    flags = repo.run("matrix", "new", "V3", "--cell", "A:one", "--cell", "a:two")
    assert flags.code == 2 and "'a' differs from 'A' only in letter case" in flags.err
    assert fingerprint(repo.path) == before
    assert repo.git("worktree", "list", "--porcelain") == worktrees


def test_a_result_file_that_differs_from_a_recorded_one_only_in_case_is_refused(
    repo: Repo, tmp_path: Path
) -> None:
    from tests.helpers import register

    assert register(repo, "V1").code == 0
    results = tmp_path / "r.json"
    results.write_text('{"score": 1.0}')
    repo.ok("record", "V1", "--gate", "recent", "--seed", "a", str(results))
    before = fingerprint(repo.path)
    refused = repo.run("record", "V1", "--gate", "recent", "--seed", "A", str(results))
    assert refused.code == 2, refused.err
    assert "seed-A.json differs from" in refused.err and "seed-a.json" in refused.err
    assert fingerprint(repo.path) == before


def test_run_refuses_seeds_that_differ_only_in_case_before_running(repo: Repo) -> None:
    from tests.helpers import register

    config = repo.path / "ledger.toml"
    config.write_text(
        config.read_text().replace(
            "[gates.recent.metrics]",
            'command = ["false", "{out}", "{seed}"]\n\n[gates.recent.metrics]',
        )
    )
    repo.commit_all("chore: a gate command")
    assert register(repo, "V1").code == 0
    before = fingerprint(repo.path)
    refused = repo.run("run", "V1", "--gate", "recent", "--seeds", "x,X")
    assert refused.code == 2, refused.err
    assert "seed 'X' differs from 'x' only in letter case" in refused.err
    assert fingerprint(repo.path) == before
    assert not (repo.path / ".git/ledger/runs/out").exists()


def test_a_transition_never_writes_two_names_that_differ_only_in_case(repo: Repo) -> None:
    from ledger.core.errors import BadInput
    from ledger.core.store import Snapshot, Store, Transition

    store = Store(repo.path)

    def writes(files: dict[str, bytes | None]) -> None:
        def build(snap: Snapshot) -> Transition:
            return Transition(kind="test", step="t", subject="docs(ledger): t", writes=files)

        store.transact(build)

    writes({"training_log/notes/Topic.md": b"1\n"})
    before = fingerprint(repo.path)
    clashes = [
        {"training_log/notes/topic.md": b"2\n"},  # beside a committed file
        {"training_log/Notes/other.md": b"2\n"},  # beside a committed directory
        {"training_log/new/a.md": b"1\n", "training_log/New/b.md": b"2\n"},  # within one
    ]
    for files in clashes:
        with pytest.raises(BadInput, match="only in letter case"):
            writes(files)
        assert fingerprint(repo.path) == before
    # A rename that changes only the case, in one transition, is not a clash.
    writes({"training_log/notes/Topic.md": None, "training_log/notes/topic.md": b"1\n"})
    assert repo.git("ls-files", "training_log/notes").split() == ["training_log/notes/topic.md"]


def test_a_long_running_git_ledger_elsewhere_does_not_hold_a_stale_lock(repo: Repo) -> None:
    # The console script's process is named git-ledger (like a git helper), and
    # git's dispatcher of it is a git process: neither holds git's locks.
    script = Path(sys.executable).parent / "git-ledger"
    if not script.is_file():
        pytest.skip("the git-ledger console script is not installed next to this python")
    from ledger.core import processes

    with sleeper() as run:
        _record(repo, "run-live", run.pid, processes.start_time(run.pid), [sys.executable])
        import psutil

        waiters = [
            subprocess.Popen([str(script), "wait"], cwd=repo.path, start_new_session=True),
            subprocess.Popen(["git", "ledger", "wait"], cwd=repo.path, start_new_session=True),
        ]
        try:
            for _ in range(500):  # both started: the script by name, git with its child
                if psutil.Process(waiters[0].pid).name() == "git-ledger" and (
                    psutil.Process(waiters[1].pid).children()
                ):
                    break
                time.sleep(0.02)
            lock = repo.path / ".git/index.lock"
            lock.write_bytes(b"")
            _age(lock, 30)
            fixed = git_ledger(repo, "doctor", "--fix")
            assert "removed stale lock" in fixed.stdout, fixed.stdout + fixed.stderr
            assert all(w.poll() is None for w in waiters)  # still waiting all along
        finally:
            for waiter in waiters:
                os.killpg(waiter.pid, signal.SIGKILL)
                waiter.wait()
