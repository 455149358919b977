"""Other processes, through psutil: the one boundary to the operating system's process table.

psutil reads procfs on Linux and ``sysctl``/``libproc`` on macOS, so doctor
and the run registry behave the same on both. Only the verbs that look at
processes import this module (doctor, status and wait when runs are on record,
the runner); the hooks' fast path never does.

A PID alone does not name a process: the kernel hands a freed PID to the next
process that asks (after a wrap-around on Linux, sooner on macOS). A run is
therefore identified by its PID *and* its start time, recorded the moment it
is started. A recorded run is alive only while a process with that PID exists,
is not a zombie and started at the recorded time; a process that merely
inherited the PID is a stranger, and nothing here ever signals a stranger.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import psutil

# create_time() is computed, not stored: on Linux from the boot time and the
# start tick (10 ms), so two readings in different processes can differ by a
# tick, and by more if the wall clock was stepped in between. A PID is reused
# only after the counter wraps, which takes far longer than this on any system.
START_TOLERANCE_S = 1.0
STOP_GRACE_S = 5.0

# git's own options that take their value as the next word (git.c handle_options).
_GIT_VALUE_OPTIONS = frozenset(
    {"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--config-env", "--attr-source"}
)


def start_time(pid: int) -> float | None:
    """When ``pid`` started (seconds since the epoch), or None when there is no such process."""
    try:
        return psutil.Process(pid).create_time()
    except (psutil.Error, ValueError):
        return None


def _process(pid: int, started: float | None, argv0: str) -> psutil.Process | None:
    """The live process that is the recorded run, or None (gone, a zombie, or a stranger).

    ``started`` is the recorded start time. Records written before start times
    were kept have none; for those the process must at least run the recorded
    program (``argv0`` in its command line).
    """
    if pid <= 0 or pid == os.getpid():
        return None
    try:
        proc = psutil.Process(pid)
        if proc.status() == psutil.STATUS_ZOMBIE:
            return None
        if started is not None:
            return proc if abs(proc.create_time() - started) <= START_TOLERANCE_S else None
        if not argv0:
            return None
        cmdline = proc.cmdline()
    except (psutil.Error, ValueError):
        # NoSuchProcess, ZombieProcess, or AccessDenied: another user's process
        # is never one of our runs.
        return None
    return proc if any(argv0 in word for word in cmdline) else None


def is_running(pid: int, started: float | None, argv0: str = "") -> bool:
    return _process(pid, started, argv0) is not None


def stop(pid: int, started: float | None, argv0: str = "") -> bool:
    """Stop the recorded run and every process it started; False if it was not running.

    SIGTERM first (psutil's terminate), then SIGKILL for whatever is still
    there after a grace period: both are POSIX, the same on Linux and macOS.
    """
    proc = _process(pid, started, argv0)
    if proc is None:
        return False
    try:
        family = [proc, *proc.children(recursive=True)]
    except psutil.Error:
        family = [proc]
    for member in family:
        try:
            member.terminate()
        except psutil.Error:
            continue
    _, alive = psutil.wait_procs(family, timeout=STOP_GRACE_S)
    for member in alive:
        try:
            member.kill()
        except psutil.Error:
            continue
    psutil.wait_procs(alive, timeout=STOP_GRACE_S)
    return True


def git_subcommand(argv: Sequence[str]) -> str | None:
    """The subcommand of a ``git`` command line: ``ledger`` in ``git -C dir ledger doctor``."""
    words = iter(argv[1:])
    for word in words:
        if word in _GIT_VALUE_OPTIONS:
            next(words, None)
        elif not word.startswith("-"):
            return word
    return None


def git_processes_in(roots: Sequence[Path]) -> list[tuple[int, str]]:
    """Live git processes whose working directory is inside one of ``roots``.

    Left out: this process, every ``git ledger ...`` process and every
    ``git-ledger`` process. The first kind is git's dispatcher for this program
    (``git ledger doctor`` is a ``git`` process waiting for its ``git-ledger``
    child, issue #16): it holds no lock. The second is this program (the
    console script's process is named after it): it holds git's index lock
    only for the milliseconds of an index write, far below the stale age, and
    its transitions hold its writer lock, which doctor checks separately; the
    git processes it starts are counted as themselves. A
    ``git commit`` that runs a hook which runs doctor is still counted even
    though it is an ancestor: it may hold ``index.lock``.
    """
    resolved = [Path(r).resolve() for r in roots]
    me = os.getpid()
    found = []
    for proc in psutil.process_iter(["name"]):
        name = proc.info.get("name") or ""
        if proc.pid == me or not name.startswith("git") or name.startswith("git-ledger"):
            continue
        try:
            cmdline = proc.cmdline()
            cwd = Path(proc.cwd())
        except (psutil.Error, OSError, ValueError):
            continue
        if name == "git" and git_subcommand(cmdline) == "ledger":
            continue
        if any(cwd == r or r in cwd.parents for r in resolved):
            found.append((proc.pid, " ".join(cmdline).strip()))
    return found
