"""``git ledger doctor [--fix]``: the first command of any session that may follow a crash.

It looks for what an interrupted session leaves behind (stale lock files, an
interrupted transition, uncommitted entry files, processes the ledger started)
and for the configuration multi-worktree work needs. ``--fix`` repairs only
what is safe: a lock is removed only when no git process works in the
repository, the ledger's own lock is free and the file is old; entry files are
committed (never discarded); processes are stopped only with ``--stop-runs``
and only those the ledger itself recorded.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from ledger.core import gitcli, output, runfiles
from ledger.core.context import load_config, open_store
from ledger.core.errors import LedgerError
from ledger.core.locks import WRITER_BUSY, classify_locks, wait_for_locks
from ledger.core.model.config import LedgerConfig
from ledger.core.store import INDEX_WAIT as STORE_INDEX_WAIT
from ledger.core.store import Snapshot, Store, Transition
from ledger.core.workspace import frozen_edit

HARDENING = {"gc.auto": "0", "core.fsmonitor": "false"}
LOCK_WAIT = 60.0  # seconds: git holds a lock for the length of one command
# How long --fix waits for an index lock before finishing an interrupted transition: as
# long as a transition itself waits for a busy index (ledger.core.store.worktree).
INDEX_WAIT = STORE_INDEX_WAIT
# How long --fix waits for another git-ledger writer to let go of the writer lock: longer
# than a transition waits for an index.lock (store.INDEX_WAIT), so that a writer stuck on
# the stale lock doctor is about to remove gives up first (exit 4, its journal left
# here), instead of doctor giving up first and leaving both.
WRITER_WAIT = STORE_INDEX_WAIT + 4.0


@dataclass
class Report:
    problems: list[str] = field(default_factory=list)
    fixed: list[str] = field(default_factory=list)
    info: list[str] = field(default_factory=list)


def check_locks(store: Store, stale_minutes: float, fix: bool, report: Report) -> list[Path]:
    """Report (and with ``fix`` remove) stale locks; the lock files left in place."""
    found = classify_locks(store, stale_minutes)
    if fix and any(lock.busy == (WRITER_BUSY,) for lock in found):
        # Another git-ledger writer at work (a transition holds the writer lock for the
        # length of its commit) is waited for, as a transition waits for it: a stale lock
        # it kept doctor from removing is stale again once it is done.
        deadline = time.monotonic() + WRITER_WAIT
        while not store.writer_lock_free() and time.monotonic() < deadline:
            time.sleep(0.05)
        found = classify_locks(store, stale_minutes)
    left = []
    for lock in found:
        reasons = [*lock.busy, *([lock.recent] if lock.recent else [])]
        if reasons:
            left.append(lock.path)
            report.info.append(
                f"lock {lock.path} is in use or recent, left alone: {'; '.join(reasons)}"
            )
        elif fix:
            lock.path.unlink(missing_ok=True)
            report.fixed.append(
                f"removed stale lock {lock.path} ({lock.age_min:.0f} min old, no git process)"
            )
        else:
            left.append(lock.path)
            report.problems.append(
                f"stale lock {lock.path} ({lock.age_min:.0f} min old, no git process): "
                "git ledger doctor --fix removes it"
            )
    return left


def check_git_responds(store: Store, report: Report) -> bool:
    why = gitcli.responds(store.workdir or store.common_dir, timeout=5)
    if why is not None:
        report.problems.append(
            f"git does not respond within 5 s ({why}): the environment needs a person"
        )
        return False
    return True


def check_journal(store: Store, fix: bool, report: Report, locked: list[Path]) -> bool:
    """An interrupted transition; with ``fix`` finished, unless an index lock it would
    wait on is ``locked`` (then what to wait for, not git's "File exists" half-way).
    False while one stands: the work tree is behind its commit, so what it shows is not
    a leftover to autosave."""
    pending = store.pending_journal()
    if pending is None:
        return True
    interrupted = f"a transition was interrupted ({str(pending.get('new'))[:10]})"
    if fix and locked:
        # An index held for a moment (an editor's git status, a git command that is
        # about to end) is waited for, as a transition waits for it.
        deadline = time.monotonic() + INDEX_WAIT
        while any(p.exists() for p in locked) and time.monotonic() < deadline:
            time.sleep(0.05)
        locked = [p for p in locked if p.exists()]
    if fix and locked:
        report.problems.append(
            f"{interrupted}; it is finished once {locked[0]} is gone: "
            "wait for the process that holds it, then run git ledger doctor --fix"
        )
        return False
    if fix:
        try:
            done = store.recover_journal()
        except LedgerError as exc:
            report.problems.append(f"{interrupted}: {exc.one_line()}")
            return False
        report.fixed.append(done or "cleared an interrupted transition")
        return True
    report.problems.append(f"{interrupted}: git ledger doctor --fix finishes it")
    return False


def check_entries(store: Store, config: LedgerConfig, fix: bool, report: Report) -> None:
    """Uncommitted ledger files, by the rule status and the pre-push hook apply
    (:mod:`ledger.core.workspace`); the loop's drafts are its work in progress, left
    for the step that records them."""
    from ledger.core.loops import preset_for
    from ledger.core.workspace import of_loop

    directory, prefix = config.dir, config.ledger.id_prefix
    found = of_loop(store.require_workdir(), directory, preset_for(config))
    for path in found.drafts:
        report.info.append(f"{path} is a draft of the loop, left for the step that records it")
    for code, path in found.entries:
        full = store.require_workdir() / path
        if "D" in code or not full.is_file():
            report.problems.append(
                f"{path} was deleted or is not a file ({code.strip()}); "
                "doctor never commits a deletion: restore or commit it yourself"
            )
            continue
        if not fix:
            report.problems.append(
                f"uncommitted ledger file {path} ({code.strip() or '??'}): "
                "git ledger doctor --fix autosaves it"
            )
            continue
        data = store.worktree_content(path)  # through git's clean filters (autocrlf)
        frozen = frozen_edit(store, path, data, directory, prefix)
        if frozen:
            report.problems.append(frozen)
            continue

        def build(snap: Snapshot, path: str = path, data: bytes = data) -> Transition:
            return Transition(
                kind="autosave",
                step=Path(path).stem,
                subject=f"docs(ledger): {path} (autosaved from interrupted session)",
                writes={path: data},
            )

        try:
            commit_id, _ = store.transact(build, check_worktree=False)
        except LedgerError as exc:
            report.problems.append(f"could not autosave {path}: {exc.one_line()}")
            continue
        report.fixed.append(f"autosaved {path} ({commit_id[:10]})")


def check_runs(store: Store, fix: bool, stop_runs: bool, report: Report) -> None:
    for run in runfiles.records(store.ledger_state_dir / "runs"):
        if unrecorded := runfiles.unrecorded_problem(run):  # kept until recorded, even by --fix
            # --fix leaves it to its own step (a transition with provenance), as it leaves
            # a run at work running: not a failure of --fix.
            (report.info if fix else report.problems).append(
                f"left for its own step: {unrecorded}" if fix else unrecorded
            )
            continue
        pid = run.get("pid")
        if not isinstance(pid, int):
            continue
        argv = run.get("argv")
        words = [str(a) for a in argv] if isinstance(argv, list) else []
        label = f"pid {pid} ({' '.join(words)[:80]}) for {run.get('step')}"
        if runfiles.alive(run):
            if fix and stop_runs:
                if runfiles.stop(run):
                    runfiles.retire(run)
                    report.fixed.append(f"stopped ledger run {label}")
                else:
                    report.info.append(f"ledger run {label} ended by itself")
            elif fix:  # a run at work is not broken: --fix leaves it (--stop-runs stops it)
                report.info.append(
                    f"ledger run still alive, left running: {label} "
                    "(git ledger wait, or doctor --fix --stop-runs)"
                )
            else:
                report.problems.append(
                    f"ledger run still alive: {label} "
                    "(git ledger wait, or doctor --fix --stop-runs)"
                )
        elif fix:
            runfiles.retire(run)
            report.fixed.append(f"cleared the record of a finished run {label}")
        else:
            report.info.append(f"recorded run {label} is gone; --fix clears its record")


def check_config(store: Store, fix: bool, report: Report) -> None:
    workdir = store.workdir or store.common_dir
    worktrees = store.common_dir / "worktrees"
    linked = worktrees.is_dir() and any(worktrees.iterdir())
    for key, value in HARDENING.items():
        current = gitcli.config_get(workdir, key)
        if current == value:
            continue
        if fix:
            gitcli.run(["config", key, value], workdir)
            report.fixed.append(f"set {key}={value}")
        elif linked:
            report.problems.append(
                f"{key} is {current or 'unset'}; multi-worktree work needs {value} "
                "(doctor --fix sets it)"
            )
        else:
            report.info.append(
                f"{key} is {current or 'unset'} (set to {value} before using worktrees)"
            )


def check_hooks(store: Store, report: Report) -> None:
    from ledger.cli.hooks import IDENTITY, IDENTITY_PREFIX
    from ledger.hooks.fast import CLIENT_STAGES, STAGES

    check_framework(store, report)
    hooks = store.common_dir / "hooks"
    found = [
        s
        for s in STAGES
        if (hooks / s).exists() and IDENTITY_PREFIX in (hooks / s).read_text(errors="replace")
    ]
    if not found:
        report.info.append("git-ledger hooks are not installed natively (git ledger hooks install)")
        return
    for stage in found:
        text = (hooks / stage).read_text(errors="replace")
        if IDENTITY not in text:
            report.problems.append(
                f"hook {stage} is from another git-ledger version: git ledger hooks install"
            )
        python = next(
            (ln.split(": ", 1)[1] for ln in text.splitlines() if ln.startswith("# interpreter: ")),
            "",
        )
        if python and not Path(python).exists():
            report.problems.append(
                f"hook {stage} names a missing interpreter {python}: git ledger hooks install"
            )
    missing = sorted(set(CLIENT_STAGES) - set(found))  # server stages: --server only
    if missing:
        report.problems.append(f"hooks missing: {', '.join(missing)}: git ledger hooks install")


def check_framework(store: Store, report: Report) -> None:
    """A committed .pre-commit-config.yaml whose git-ledger hooks run something else: the
    framework runs each entry through a shell, so a pulled config that keeps the ids and
    changes the command runs it on every commit."""
    from ledger.cli.hooks import FRAMEWORK_CONFIG, _check_framework_entries
    from ledger.core.errors import LedgerError

    workdir = store.workdir
    config = workdir / FRAMEWORK_CONFIG if workdir is not None else None
    if config is None or not config.is_file():
        return
    try:
        _check_framework_entries(config.read_text(errors="replace"))
    except LedgerError as exc:
        report.problems.append(exc.one_line())


def check_driver(store: Store, fix: bool, report: Report) -> None:
    """The views merge driver: defined when .gitattributes names it, and never unsafe.

    git runs the driver in the repository's top level on every merge of a
    generated view (a plain ``git pull`` included). 0.1 defined it as
    ``'<python>' -m ledger merge-driver ...``, which imports a ``ledger``
    package from that directory first: anyone who can push could run code on
    this machine. Such a definition is a security finding; ``--fix`` rewrites
    it to the isolated form (:mod:`ledger.core.launch`).
    """
    from ledger.hooks.mergeviews import DRIVER, configure_driver, driver_command, driver_state

    workdir = store.workdir
    if workdir is None:
        return
    state, current = driver_state(workdir)
    if state == "current":
        return
    if state == "missing":
        attributes = workdir / ".gitattributes"
        named = attributes.is_file() and f"merge={DRIVER}" in attributes.read_text(errors="replace")
        if not named:
            return
    # state -> (where an unfixed finding goes, the finding, what --fix did)
    findings = {
        "unsafe": (
            report.problems,
            f"security: the {DRIVER} merge driver in .git/config ({current}) starts Python "
            "without isolation, so a merge imports code from the repository",
            f"rewrote the {DRIVER} merge driver as {driver_command()} (it imported code "
            "from the repository)",
        ),
        # Isolated, but another installation's (a moved venv): harmless while it exists.
        "other": (
            report.info,
            f"the {DRIVER} merge driver runs another installation of git-ledger ({current})",
            f"pointed the {DRIVER} merge driver at this installation",
        ),
        "missing": (
            report.problems,
            f".gitattributes names merge={DRIVER} but .git/config does not define it "
            "(a fresh clone)",
            f"defined the {DRIVER} merge driver in .git/config",
        ),
    }
    where, finding, done = findings[state]
    if fix:
        configure_driver(workdir)
        report.fixed.append(done)
    else:
        where.append(f"{finding}: git ledger doctor --fix")


def check_parsed(store: Store, config: LedgerConfig, report: Report) -> None:
    """Every committed entry of the loop's own parses (a malformed one is listed, never
    dropped)."""
    from ledger.core.loops import preset_for

    if store.resolve(None) is None:
        return
    for path, error in preset_for(config).problems(store, config, store.snapshot()):
        report.problems.append(f"{path} does not parse: {error}")


def run(cwd: Path, fix: bool, stop_runs: bool, as_json: bool, wait_locks: bool = False) -> int:
    store = open_store(cwd)
    report = Report()
    if wait_locks:
        # What next proposes while a process at work holds a lock: every transition and
        # every repair would wait on it or fail, so waiting is the step (nothing else
        # is checked; the next 'git ledger next' says what comes after).
        loaded = load_config(store)
        stale = loaded[0].doctor.stale_lock_minutes if loaded else 10.0
        for lock in wait_for_locks(store, stale, LOCK_WAIT):
            report.problems.append(
                f"lock {lock.path} is still held after {LOCK_WAIT:g} s: {'; '.join(lock.busy)}"
            )
        if not report.problems:
            report.info.append("no lock file is held by a process at work")
    elif check_git_responds(store, report):
        loaded = load_config(store)
        stale = loaded[0].doctor.stale_lock_minutes if loaded else 10.0
        left = check_locks(store, stale, fix, report)
        # The index an interrupted transition brings up to its commit is this work tree's
        # (a linked one's lock, a matrix cell's, is not in its way).
        index = (store.git_dir / "index.lock").resolve()
        caught_up = check_journal(store, fix, report, [p for p in left if p.resolve() == index])
        if loaded is not None and store.workdir is not None and caught_up:
            check_entries(store, loaded[0], fix, report)
        if loaded is not None:
            check_parsed(store, loaded[0], report)
        check_runs(store, fix, stop_runs, report)
        check_config(store, fix, report)
        check_driver(store, fix, report)
        check_hooks(store, report)
    if as_json:
        output.emit_json(
            {
                "ok": not report.problems,
                "problems": report.problems,
                "fixed": report.fixed,
                "info": report.info,
            }
        )
    else:
        for line in report.fixed:
            output.say(f"fixed: {line}")
        for line in report.problems:
            output.say(f"problem: {line}")
        for line in report.info:
            output.say(f"info: {line}")
        if not report.problems:
            output.say("doctor: all clear")
    return 1 if report.problems else 0
