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
from ledger.core.model.config import LedgerConfig
from ledger.core.store import Snapshot, Store, Transition

HARDENING = {"gc.auto": "0", "core.fsmonitor": "false"}


@dataclass
class Report:
    problems: list[str] = field(default_factory=list)
    fixed: list[str] = field(default_factory=list)
    info: list[str] = field(default_factory=list)


def lock_files(store: Store) -> list[Path]:
    dirs = [store.common_dir]
    worktrees = store.common_dir / "worktrees"
    if worktrees.is_dir():
        dirs += [d for d in worktrees.iterdir() if d.is_dir()]
    found: list[Path] = []
    for base in dirs:
        for name in (
            "index.lock",
            "HEAD.lock",
            "packed-refs.lock",
            "config.lock",
            "ORIG_HEAD.lock",
        ):
            if (base / name).exists():
                found.append(base / name)
    refs = store.common_dir / "refs"
    if refs.is_dir():
        found += sorted(refs.rglob("*.lock"))
    return found


def worktree_roots(store: Store) -> list[Path]:
    roots = [store.workdir] if store.workdir else []
    proc = gitcli.run(
        ["worktree", "list", "--porcelain"], store.workdir or store.common_dir, check=False
    )
    for line in proc.stdout.splitlines():
        if line.startswith("worktree "):
            roots.append(Path(line[len("worktree ") :]))
    return [r for r in roots if r is not None]


def check_locks(store: Store, stale_minutes: float, fix: bool, report: Report) -> None:
    locks = lock_files(store)
    if not locks:
        return
    from ledger.core.processes import git_processes_in

    live = git_processes_in([*worktree_roots(store), store.common_dir])
    ledger_free = store.writer_lock_free()
    now = time.time()
    for lock in locks:
        age_min = (now - lock.stat().st_mtime) / 60
        reasons = []
        if live:
            reasons.append(
                f"git process {live[0][0]} ({live[0][1][:60]}) is working in the repository"
            )
        if not ledger_free:
            reasons.append("a git-ledger writer holds its lock")
        if age_min < stale_minutes:
            reasons.append(f"only {age_min:.1f} min old (stale after {stale_minutes:g})")
        if reasons:
            report.info.append(f"lock {lock} is in use or recent, left alone: {'; '.join(reasons)}")
        elif fix:
            lock.unlink()
            report.fixed.append(
                f"removed stale lock {lock} ({age_min:.0f} min old, no git process)"
            )
        else:
            report.problems.append(
                f"stale lock {lock} ({age_min:.0f} min old, no git process): "
                "git ledger doctor --fix removes it"
            )


def check_git_responds(store: Store, report: Report) -> bool:
    why = gitcli.responds(store.workdir or store.common_dir, timeout=5)
    if why is not None:
        report.problems.append(
            f"git does not respond within 5 s ({why}): the environment needs a person"
        )
        return False
    return True


def check_journal(store: Store, fix: bool, report: Report) -> None:
    pending = store.pending_journal()
    if pending is None:
        return
    if fix:
        done = store.recover_journal()
        report.fixed.append(done or "cleared an interrupted transition")
    else:
        report.problems.append(
            f"a transition was interrupted ({str(pending.get('new'))[:10]}): "
            "git ledger doctor --fix finishes it"
        )


def uncommitted_entries(store: Store, directory: str) -> list[tuple[str, str]]:
    workdir = store.require_workdir()
    out = gitcli.output(
        ["status", "--porcelain", "--untracked-files=all", "-z", "--", directory], workdir
    )
    # git-status(1), -z: "XY PATH\0", and for a rename or copy the source path
    # follows as a field of its own ("R  NEW\0OLD\0"), not an entry.
    fields = iter(out.split("\0"))
    entries = []
    for entry in fields:
        if len(entry) < 4:
            continue
        code = entry[:2]
        if "R" in code or "C" in code:
            next(fields, None)
        entries.append((code, entry[3:]))
    return entries


def _frozen_edit(
    store: Store, path: str, data: bytes, directory: str = "", prefix: str = "V"
) -> str | None:
    """Why ``data`` must not be autosaved: it edits a registration's frozen part, it
    does not parse, or it is an entry only a transition brings into being
    (invariants 1, 5 and 6 of ``git ledger verify``)."""
    from ledger.core.errors import LedgerError as _Error
    from ledger.core.history import frozen_part
    from ledger.core.model.documents import decode_text
    from ledger.core.state import classify, parse_entry

    committed = store.snapshot().read(path)
    rel = path[len(directory) + 1 :] if directory and path.startswith(directory + "/") else path
    kind = classify(rel, prefix) if directory else None
    if kind is not None:
        try:
            parse_entry(kind, data, path)
        except _Error as exc:
            return f"{exc.message}; doctor never autosaves an entry that does not parse: fix it"
        if committed is None and kind in ("version", "matrix", "result"):
            return (
                f"{path} is a new {kind}, which only its transition writes; doctor never "
                "autosaves it: use git ledger register/record (or remove it)"
            )
    if committed is None or not path.endswith(".md"):
        return None
    try:
        old = frozen_part(decode_text(committed, path), path)
    except _Error:
        return None
    try:
        changed = frozen_part(decode_text(data, path), path) != old
    except _Error:
        changed = True
    if not changed:
        return None
    return (
        f"{path} edits the frozen part of a registration (front matter or Hypothesis); "
        f"doctor never autosaves it: restore the committed text with 'git restore {path}'"
    )


def check_entries(
    store: Store, directory: str, fix: bool, report: Report, prefix: str = "V"
) -> None:
    entries = uncommitted_entries(store, directory)
    if not entries:
        return
    for code, path in entries:
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
        frozen = _frozen_edit(store, path, data, directory, prefix)
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
            report.problems.append(unrecorded)
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
                    Path(str(run["file"])).unlink(missing_ok=True)
                    report.fixed.append(f"stopped ledger run {label}")
                else:
                    report.info.append(f"ledger run {label} ended by itself")
            else:
                report.problems.append(
                    f"ledger run still alive: {label} "
                    "(git ledger wait, or doctor --fix --stop-runs)"
                )
        elif fix:
            Path(str(run["file"])).unlink(missing_ok=True)
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
    from ledger.hooks.fast import STAGES

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
    missing = sorted(set(STAGES) - set(found))
    if missing:
        report.problems.append(f"hooks missing: {', '.join(missing)}: git ledger hooks install")


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


def run(cwd: Path, fix: bool, stop_runs: bool, as_json: bool) -> int:
    store = open_store(cwd)
    report = Report()
    if check_git_responds(store, report):
        loaded = load_config(store)
        stale = loaded[0].doctor.stale_lock_minutes if loaded else 10.0
        check_locks(store, stale, fix, report)
        check_journal(store, fix, report)
        if loaded is not None and store.workdir is not None:
            check_entries(store, loaded[0].dir, fix, report, loaded[0].ledger.id_prefix)
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
