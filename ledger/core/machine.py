"""Machine problems: what an interrupted session, a crash or a skipped hook leaves behind.

They come before any step of the loop: while one stands, the loop's own step is
refused (``register`` with uncommitted entries, any transition behind a stale
lock, every push with a history finding) or builds on a state ``git status`` does
not show (an interrupted transition). ``status`` lists each as a problem and
``next`` proposes the action that clears the first, in this order, each before the
ones whose repair it would break: a lock file (every repair below would wait on it
or fail), an interrupted transition (the work tree must show what is committed
before anything is judged on it), runs still running (they record as they end),
uncommitted entries (a revert or a void needs them out of the way), finished runs
not on record, history findings (after any committed entry that does not parse,
which the loop's own step names; history that cannot be verified first among
them). An action only a person can take carries ``decide`` (what they decide):
``next`` never presents it as a command to run blindly, and every other action
succeeds when run (a lock in use is waited for, not reported).

Each check costs a file test or one ``git status`` of the ledger directory when
nothing is wrong; doctor's own classification (which lock is stale, which entry
may be autosaved) runs only when something is found, so that ``next`` and
``doctor --fix`` agree on what ``--fix`` will do.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

from ledger.core import gitcli, runfiles
from ledger.core.actions import proposal
from ledger.core.errors import Refused

TYPE_CHECKING = False  # not typing's: this module is on a warm status's path
if TYPE_CHECKING:
    from ledger.core.store import Store

JOURNAL = "ledger-pending.json"  # ledger.core.store.JOURNAL, without importing pygit2
FIX = "git ledger doctor --fix"


# NamedTuples, not dataclasses, on the path of a warm status: importing dataclasses (and
# inspect with it) cost that path about 8 ms, a tenth of it, before click was dropped.
class Problem(NamedTuple):
    kind: str
    message: str
    action: dict[str, Any]  # what clears it, as `next` proposes it

    def as_json(self) -> dict[str, str]:
        return {"kind": self.kind, "message": self.message, "fix": self.action["command"]}


class Situation(NamedTuple):
    """Where the machine problems are looked for: the repository at ``cwd`` (its work tree
    ``top``, git dir and common git dir) and ``status --json``'s data (``runs`` and
    ``history`` read fresh; the loop's uncommitted drafts are added to it as ``drafts``)."""

    cwd: Path
    top: Path
    gitdir: Path
    common: Path
    data: dict[str, Any]


def problems(
    cwd: Path, top: Path, gitdir: Path, common: Path, data: dict[str, Any]
) -> list[Problem]:
    """The machine problems of the repository, the first to clear first: every
    precondition's (:data:`PRECONDITIONS`), in its order."""
    where = Situation(cwd, top, gitdir, common, data)
    return _left_by_fix([p for check in PRECONDITIONS.values() for p in check(where)])


def require(names: tuple[str, ...], store: Store, directory: str, preset: str) -> None:
    """Refuse (exit 1) a verb whose declared preconditions (``names``) do not hold in the
    repository of ``store``, naming the first that fails and the action that clears it:
    the check, and the action, that ``next`` puts before any step of the loop."""
    if not names:
        return
    top = store.require_workdir()
    data: dict[str, Any] = {"dir": directory, "preset": preset, "branch": None}
    where = Situation(top, top, store.git_dir, store.common_dir, data)
    for name in names:
        found = PRECONDITIONS[name](where)
        if found:
            action = found[0].action
            fix = str(action["command"])
            if action.get("decide"):
                fix = f"a person decides {action['decide']}, then: {fix}"
            raise Refused(f"[{name}] {found[0].message}", fix, rule=name)


def _one(
    kind: str, message: str, action: str, command: str, reason: str, decide: str | None = None
) -> list[Problem]:
    """One machine problem, and the action that clears it as ``next`` proposes it."""
    return [Problem(kind, message, proposal(action, command, reason, decide=decide))]


def _interrupted(where: Situation) -> list[Problem]:
    if not (where.gitdir / JOURNAL).is_file():
        return []
    return _one(
        "interrupted-transition",
        "a transition was interrupted after its commit: the index and work tree do not "
        "show it yet (git status shows it undone)",
        "doctor-fix",
        FIX,
        "a transition was interrupted: doctor --fix brings the index and work tree up to "
        "its commit before anything else is done",
    )


def _running(where: Situation) -> list[Problem]:
    running = where.data["runs"]["running"]
    if not running:
        return []
    line = f"runs are still running: {', '.join(str(r['label']) for r in running)}"
    return _one("running", line, "wait", "git ledger wait", line)


def _unrecorded(where: Situation) -> list[Problem]:
    """A killed run's finished seeds before leftovers: recording them is a transition of
    its own that leftovers do not block, while doctor --fix, which autosaves the
    leftovers, leaves them to this step and exits 1 while they stand."""
    out = []
    for record in runfiles.unrecorded(where.common / "ledger" / "runs"):
        step = str(record.get("step"))
        line = runfiles.unrecorded_problem(record) or ""
        out.append(
            Problem(
                "unrecorded-run",
                line,
                proposal(
                    "record-finished",
                    f"git ledger run {step} --record-finished",
                    f"a run of {step} finished but its 'git ledger run' died before "
                    "recording it: record what finished",
                    step=step,
                ),
            )
        )
    return out


def _committed_history(where: Situation) -> list[Problem]:
    # An entry that does not parse comes first: the loop's own step names it
    # (fix-entry), and verify reads the entry as fixed.
    return [] if where.data.get("problems") else _history(where.cwd, where.data)


def _left_by_fix(out: list[Problem]) -> list[Problem]:
    """``doctor --fix`` runs every repair, and exits 1 while an uncommitted entry it never
    autosaves stands (a frozen part edited, a deletion): a repair that comes before that
    entry's own step (a lock, an interrupted transition) is proposed with its decision."""
    if not out or out[0].action["command"] != FIX:
        return out
    left = next((p for p in out[1:] if p.action["action"] == "restore-entry"), None)
    if left is None:
        return out
    decide = left.action.get("decide") or f"how to settle {left.message}"
    action = {
        **out[0].action,
        "reason": f"{out[0].action['reason']}; it then stops at exit 1 on what only a person "
        f"settles ({left.message}), which the step after it restores",
        "decide": decide,
    }
    return [Problem(out[0].kind, out[0].message, action), *out[1:]]


def _locks(where: Situation) -> list[Problem]:
    """A lock file git or a transition would wait on (the index, HEAD, the branch).

    Each kind has its own action, and each action succeeds: a stale lock is removed by
    ``doctor --fix``; a lock a process at work holds is waited for (``doctor
    --wait-for-locks``: every other repair would wait on it or fail); a recent lock
    with no process at work may be a killed git's, or a live writer doctor cannot
    see: only a person can say, so removing it carries ``decide``.
    """
    cwd, gitdir, common, branch = where.cwd, where.gitdir, where.common, where.data.get("branch")
    candidates = [gitdir / "index.lock", gitdir / "HEAD.lock", common / "packed-refs.lock"]
    if branch:
        candidates.append(common / "refs" / "heads" / f"{branch}.lock")
    # A linked work tree's index too: a matrix cell is measured, and recorded, in its
    # own (the batches walk's seed 25: a run killed there left its index.lock, and the
    # run --record-finished next proposed exited 4 on it).
    linked = common / "worktrees"
    if linked.is_dir():
        candidates += [d / "index.lock" for d in linked.iterdir()]
    if not any(p.exists() for p in candidates):
        return []
    from ledger.core.context import load_config, open_store
    from ledger.core.locks import classify_locks

    store = open_store(cwd)
    loaded = load_config(store)
    locks = classify_locks(store, loaded[0].doctor.stale_lock_minutes if loaded else 10.0)
    stale = [lock for lock in locks if lock.stale]
    # doctor --fix finishes an interrupted transition only into a free index: a recent
    # index lock no process holds stops it (exit 1) after it removed the stale ones, so
    # that lock, a person's call, comes first (the batches walk's seed 25, step 108).
    index = (gitdir / "index.lock").resolve()
    blocking = [
        lock for lock in locks if lock.path.resolve() == index and not lock.stale and not lock.busy
    ]
    if not (gitdir / JOURNAL).is_file():
        blocking = []
    if stale and not blocking:
        line = f"stale lock {stale[0].path} ({stale[0].age_min:.0f} min old, no git process)"
        reason = f"{line}: every transition would wait on it; doctor --fix removes it"
        return _one("stale-lock", line, "doctor-fix", FIX, reason)
    busy = [lock for lock in locks if lock.busy]
    if busy:
        held = f"lock {busy[0].path} is held: {busy[0].busy[0]}"
        reason = (
            f"{held}; every transition and repair would wait on it: wait until it is "
            "released, then ask git ledger next again"
        )
        return _one("lock", held, "wait-for-lock", "git ledger doctor --wait-for-locks", reason)
    if not locks:
        return []  # released while it was looked at
    lock = blocking[0] if blocking else locks[0]
    held = f"lock {lock.path} is {lock.recent}, and no process at work holds it"
    reason = (
        f"{held}: a git that was killed leaves it; doctor --fix removes it once it is "
        "stale, or a person removes it now"
    )
    decide = f"whether the git that wrote {lock.path.name} has ended"
    return _one("lock", held, "remove-lock", f"rm -f -- {lock.path}", reason, decide=decide)


def _entries(where: Situation) -> list[Problem]:
    """Ledger files changed in the work tree and not committed, the loop's drafts aside
    (:func:`ledger.core.workspace.uncommitted`: the rule the pre-push hook and doctor
    apply too). The commit's top level comes from the cache (``top``)."""
    from ledger.core import workspace
    from ledger.core.loops import by_name

    cwd, top, data = where.cwd, where.top, where.data
    cached = data.get("top")
    committed = (
        workspace.Committed(int(cached["files"]), frozenset(cached["dirs"])) if cached else None
    )
    config = data.get("config_file")
    also = (config,) if config else ()
    found = workspace.of_loop(top, str(data["dir"]), by_name(str(data["preset"])), committed, also)
    if config:  # asked in the same git status: _configuration reads it
        data["config_changed"] = bool(found.also)
    if found.drafts:
        data.setdefault("drafts", []).extend(found.drafts)
    entries = found.entries
    if not entries:
        return []
    message = found.line()
    kept = _not_autosaved(cwd, entries)
    if kept is None:
        reason = (
            f"{message}: registration and pushes are refused while they stand; doctor --fix "
            "commits them as they are (an autosave)"
        )
        return _one("uncommitted-entries", message, "doctor-fix", FIX, reason)
    code, path, why = kept
    restore = f"git restore --staged --worktree -- {path}"
    if "D" in code:  # what the work tree lost is in the commit: restoring it loses nothing
        reason = f"{why}: restore it from the commit (a ledger entry is never deleted)"
        return _one("uncommitted-entries", f"{message}; {why}", "restore-entry", restore, reason)
    reason = (
        f"{why}: only a person can say whether that work is to be kept elsewhere before the "
        "committed state is restored"
    )
    return _one(
        "uncommitted-entries",
        f"{message}; {why}",
        "restore-entry",
        restore if "?" not in code else f"rm -- {path}",  # untracked: nothing to restore
        reason,
        decide=f"whether to discard the uncommitted change to {path}",
    )


def _configuration(where: Situation) -> list[Problem]:
    """The configuration file changed in the work tree and not committed: every
    transition that relies on its numbers is refused until it is (Context's
    ``require_committed_config``). Whether the change is meant is a person's call:
    committed on its own, or discarded."""
    from ledger.core import workspace

    name = where.data.get("config_file")
    if not name:
        return []
    changed = where.data.get("config_changed")  # _entries asked git already
    if changed is None:  # asked alone: the same git status, for this file only
        changed = bool(workspace.porcelain(where.top, "--untracked-files=no", f":(literal){name}"))
    if not changed:
        return []
    message = f"{name} has uncommitted changes"
    reason = (
        f"{message}: a transition uses the configuration on record, so register, conclude "
        f"and config set are refused until it is committed (git commit {name}) or restored"
    )
    return _one(
        "uncommitted-config",
        message,
        "restore-config",
        f"git restore --staged --worktree -- {name}",
        reason,
        decide=f"whether to keep the change to {name} (commit it on its own) or discard it",
    )


def _not_autosaved(cwd: Path, entries: list[tuple[str, str]]) -> tuple[str, str, str] | None:
    """(status code, path, why) of the first entry ``doctor --fix`` would not autosave
    (doctor's own rule); None: it autosaves them all."""
    from ledger.core.context import load_config, open_store
    from ledger.core.workspace import frozen_edit

    store = open_store(cwd)
    loaded = load_config(store)
    if loaded is None:
        return None
    config = loaded[0]
    for code, path in entries:
        full = store.require_workdir() / path
        if "D" in code or not full.is_file():
            return code, path, f"{path} was deleted or is not a file; doctor never commits that"
        data = store.worktree_content(path)
        frozen = frozen_edit(store, path, data, config.dir, config.ledger.id_prefix)
        if frozen:
            return code, path, frozen
    return None


def _history(cwd: Path, data: dict[str, Any]) -> list[Problem]:
    """verify's findings: each stays in history, and refuses every push, until cleared.
    History that cannot be verified (a shallow clone) refuses every transition: it comes
    first, with the fetch that completes it."""
    findings = data.get("history", [])
    if not findings:
        return []
    if findings[0].get("rule") == "cannot-verify":
        message, fix = str(findings[0]["message"]), str(findings[0]["fix"])
        fetch = "git fetch --unshallow" if "--unshallow" in fix else None
        if "refs/ledger/witness/" in fix:
            fetch = fix  # the witnesses' fetch (a plain clone), as verify names it
        return [
            Problem(
                "history",
                f"[cannot-verify] {message}",
                proposal(
                    ("fetch-witnesses" if "witness" in fix else "unshallow") if fetch else "verify",
                    fetch or "git ledger verify",
                    f"{message}: every transition and push is refused until history is "
                    f"complete ({fix})",
                    decide=None if fetch else f"how to complete history: {fix}",
                ),
            )
        ]
    from ledger.core.context import open_context
    from ledger.core.loops import preset_for

    ctx = open_context(cwd)
    preset = preset_for(ctx.config)
    out = []
    for finding in findings:
        message = f"[{finding['rule']}] {finding['message']}"
        cleared = preset.finding_action(ctx, finding) or _drop(cwd, finding, data, message)
        out.append(
            Problem(
                "history",
                message,
                cleared
                or proposal(
                    "verify",
                    "git ledger verify",
                    f"history does not verify: {message} (fix: {finding['fix']}); every push "
                    "is refused until a person repairs it",
                    decide=f"how to repair history: {finding['fix']}",
                ),
            )
        )
    return out


def _drop(cwd: Path, finding: dict[str, Any], data: dict[str, Any], message: str) -> Any:
    """Dropping the offending commit, when it is HEAD and no remote has it (a hand edit
    committed past the hooks a moment ago): the one repair that clears the finding, as
    a finding stays with its commit (a revert is one more commit past the rule). Whether
    that edit goes is a person's decision; None when it is not the tip or was pushed."""
    commit = str(finding.get("commit") or "")
    if not commit or commit != data.get("commit"):
        return None
    pushed = gitcli.run(
        ["for-each-ref", "--contains", commit, "--format=%(refname)", "refs/remotes/"],
        cwd,
        check=False,
    )
    if pushed.returncode != 0 or pushed.stdout.strip():
        return None
    return proposal(
        "drop-commit",
        f"git reset --keep {commit[:12]}~1",
        f"history does not verify: {message}; the commit that did it ({commit[:10]}) is "
        "the branch tip and no remote has it: dropping it clears the finding (--keep "
        "keeps every uncommitted change)",
        decide=f"whether to drop {commit[:10]} and what it changed (git reflog keeps it), "
        f"the commit that broke the rule; else: {finding['fix']}",
    )


# The preconditions of the loop's steps, in the order their problems are cleared, each
# before the ones whose repair it would break (see the module's docstring): a step of the
# loop holds every one of them, as ``next`` proposes one only when no machine problem
# stands. A verb declares those it needs besides (``clikit.declare(requires=...)``) and
# is refused by the same check, naming the action that clears it (:func:`require`).
PRECONDITIONS: dict[str, Callable[[Situation], list[Problem]]] = {
    "no-lock": _locks,
    "transition-complete": _interrupted,
    "runs-ended": _running,
    "runs-recorded": _unrecorded,
    "entries-committed": _entries,
    "config-committed": _configuration,
    "history-verifies": _committed_history,
}
