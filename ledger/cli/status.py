"""``git ledger status`` and ``git ledger next``: where the loop stands, what to do next.

The state-derived part is cached by ledger tree and config (see
:mod:`ledger.core.statuscache`); a warm call imports neither pydantic nor scipy.
Branch, commit and running runs are read fresh every time.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from ledger.core import gitcli, machine, output, statuscache
from ledger.core.configfile import ledger_dir, read_worktree_config
from ledger.core.repobase import locate
from ledger.core.runfiles import running

if TYPE_CHECKING:
    from ledger.core.context import Context
    from ledger.core.state import LedgerState


def summary(state: LedgerState, ctx: Context) -> dict[str, Any]:
    """Everything status says that is a function of the ledger tree and config: what every
    loop has, and the loop's own part (its next step included) from its preset."""
    from ledger.core.loops import preset_for

    preset = preset_for(state.config)
    versions = [
        {
            "id": v.id,
            "gate": v.front.gate,
            "bet": v.front.bet,
            "state": "void" if v.front.void else ("concluded" if v.concluded else "open"),
            "verdict": v.verdict,
            "override": v.front.conclusion.override if v.front.conclusion else None,
        }
        for v in state.versions
    ]
    data: dict[str, Any] = {
        "schema": 1,
        "preset": state.config.ledger.preset,
        "dir": state.config.dir,
        "counts": {
            "versions": len(versions),
            "open": sum(1 for v in versions if v["state"] == "open"),
            "concluded": sum(1 for v in versions if v["state"] == "concluded"),
            "results": len(state.results),
            "reflections": len(state.reflections),
        },
        "open": [v["id"] for v in versions if v["state"] == "open"],
        "last": versions[-1] if versions else None,
        "recent": versions[-10:],
        "triggers": [],
        "reflection_due": False,
        "incomplete_reflection": None,
        "phase": state.phase.state if state.phase else "active",
        "overrides": [{"id": v["id"], "reason": v["override"]} for v in versions if v["override"]],
        "problems": [{"path": p, "error": e} for p, e in state.problems],
        "failed_runs": [
            {"path": r.path, "exit_code": r.data.exit_code}
            for r in state.results
            if r.status == "failed"
        ],
        "flagged": [],
        # The ledger dir's top level in the commit (see ledger.core.workspace).
        "top": _top(state.files, state.config.dir),
        **preset.summary(ctx, state),
    }
    if "next" not in data:
        data["next"] = preset.next_action(ctx, state)
    return data


def _top(files: Iterable[str], directory: str) -> dict[str, Any]:
    from ledger.core.workspace import committed_top

    top = committed_top([path[len(directory) + 1 :] for path in files])
    return {"files": top.files, "dirs": sorted(top.dirs)}


def status_data(cwd: Path) -> dict[str, Any]:
    """Status from the cache when the ledger tree and config are known (two git calls),
    else from the ledger itself; then what is read fresh (runs, history, machine problems)."""
    return _status(cwd)[0]


class _Where(NamedTuple):
    """Where ``status`` reads: the repository's directories, the configuration file
    (name, text) in the work tree, HEAD's ids (:func:`gitcli.head_ids`) and the key of
    the cached summary (None: a ledger without one yet)."""

    top: Path
    gitdir: Path
    common: Path
    found: tuple[str, str] | None
    ids: tuple[str, str, str] | None
    cache_key: str | None

    @property
    def state_dir(self) -> Path:
        return self.common / "ledger"


def _where(cwd: Path) -> _Where:
    where = locate(str(cwd))
    if where is None:
        gitcli.locate(cwd)  # says why, as every verb does
        raise AssertionError("unreachable: gitcli.locate raises outside a work tree")
    top, gitdir, common = (Path(p) for p in where)
    found = read_worktree_config(top)
    directory = ledger_dir(*found) if found is not None else None
    ids = gitcli.head_ids(top, directory) if directory is not None else None
    cache_key = statuscache.key(found[0], found[1], ids[1], ids[0]) if found and ids else None
    return _Where(top, gitdir, common, found, ids, cache_key)


def _summary(
    cwd: Path, at: _Where, lend: LedgerState | None = None
) -> tuple[dict[str, Any], Context]:
    """The state-derived part of status, read from the ledger; ``lend``: a state this
    process loaded, which lends what it built.

    Cached under ``at``'s key only when it is the answer for that key: when HEAD and the
    configuration are still what ``at`` read once the answer is made. Another process
    may commit (a detached run recording, a verb in the same work tree) between reading
    the key and reading the ledger: its commit's answer under the earlier commit's key
    would be what a later ``git checkout`` of that commit is told."""
    from ledger.core.context import open_context

    ctx = open_context(cwd)  # validates the configuration; a bad one is exit 2
    state = ctx.state(previous=lend)
    data = summary(state, ctx)
    current = at.ids is not None and state.commit_id == at.ids[0]
    if at.cache_key and current and _where(cwd).cache_key == at.cache_key:
        statuscache.put(at.state_dir, at.cache_key, data)
    return data, ctx


def warm(contexts: Iterable[Context], app: Callable[[], Any]) -> None:
    """After a verb that committed succeeded: what the next ``status`` or ``next`` reads
    from its caches at the new HEAD, made by the process that wrote the commit, which
    has already imported and loaded what a cold reader would: an agent asks ``next``
    after every step, and a cold ``next`` spent most of its time importing pydantic and
    pygit2 to say what this process knew. The summary; verify's report when the few
    commits since its cached tip are all that is new (:func:`ledger.cli.verify.extend`,
    never a replay of the whole history); then, with that report at hand, a read as
    ``next --json`` reads (:func:`_status`: the loop's fresh step and what it keeps, such
    as the batches loop's trace check) and the MCP call of the step it proposes
    (:func:`call_of`, from the click app ``app`` gives, imported already).

    Only for a context that read the ledger whole: one that loaded the state (lent to
    the summary), or any of a loop whose transitions all read their loop's state
    (``Preset.transitions_read_whole``; ``record`` reads one version of the versions
    loop, and does not read them all for this). It never fails the verb and prints
    nothing: what it cannot make costs the next reader its time, as before."""
    with contextlib.suppress(OSError, ValueError):
        sys.stdout.flush()  # what the verb said reaches a pipe before the caches are made
    from ledger.cli.verify import extend
    from ledger.core import verifycache

    try:
        for ctx in contexts:
            lend, top = ctx.loaded, ctx.store.workdir
            if top is None:
                continue
            with contextlib.suppress(Exception):
                if lend is None and not _reads_whole(ctx):
                    continue
                at = _where(Path(top))
                if at.ids is None or at.cache_key is None:
                    continue
                if statuscache.get(at.state_dir, at.cache_key) is None:
                    _summary(Path(top), at, lend)
                extend(Path(top))
                if verifycache.load(str(at.state_dir), str(at.common), at.ids[0]) is not None:
                    data, state_dir = _status(Path(top))
                    call_of(str(data["next"]["command"]), state_dir, app)
    except KeyboardInterrupt:
        return  # Ctrl-C once the verb said it is done: it is done (its exit code stands)


def _reads_whole(ctx: Context) -> bool:
    from ledger.core.loops import preset_for

    return preset_for(ctx.config).transitions_read_whole


def _status(cwd: Path) -> tuple[dict[str, Any], Path]:
    """:func:`status_data`, and the directory of the derived caches (``.git/ledger``)."""
    at = _where(cwd)
    top, gitdir, common, found, ids, cache_key = at
    state_dir = at.state_dir
    data = statuscache.get(state_dir, cache_key) if cache_key else None
    if data is None or ids is None:
        data, ctx = _summary(cwd, at)
        detached = ctx.store.repo.head_is_detached
        data["branch"] = None if detached else ctx.store.branch().removeprefix("refs/heads/")
        data["commit"] = ctx.store.resolve(None)
    else:
        data["branch"] = ids[2].removeprefix("refs/heads/") if ids[2] != "HEAD" else None
        data["commit"] = ids[0]
    data["runs"] = {"running": running(state_dir / "runs"), "failed": data.pop("failed_runs")}
    data["history"] = history_findings(cwd, state_dir, common, data["commit"])
    shallow = any(f.get("rule") == "cannot-verify" for f in data["history"])
    if data.get("counts", {}).get("versions") and not shallow:
        data["history"] = _unwitnessed(top) or data["history"]
    data["history_notes"] = history_notes(state_dir, common, data["commit"])
    data["config_file"] = found[0] if found is not None else None
    problems = machine.problems(cwd, top, gitdir, common, data)
    data["machine"] = [p.as_json() for p in problems if p.kind != "running"]
    if problems:
        data["next"] = problems[0].action
    else:
        from ledger.core.loops import by_name

        data["next"] = by_name(data["preset"]).fresh_next(cwd, top, common, data)
    # What only the loop's fresh step reads (its cache's inputs), not status's output.
    for key in (
        "code_first",
        "refuted",
        "remeasure",
        "reflection_min_words",
        "drafts",
        "top",
        "config_file",
        "config_changed",
    ):
        data.pop(key, None)
    return data, state_dir


def history_findings(cwd: Path, state_dir: Path, common: Path, tip: str | None) -> list[Any]:
    """``git ledger verify``'s findings for HEAD (from its report cache when current)."""
    from ledger.core import verifycache

    if tip is None:
        return []
    cached = verifycache.load(str(state_dir), str(common), tip)
    if cached is not None:
        return cached
    from ledger.core.context import open_context
    from ledger.core.errors import BadInput
    from ledger.core.verify import verify

    ctx = open_context(cwd)
    try:
        report = verify(ctx.store, ctx.config, ctx.config_file, tip)
    except BadInput as exc:
        return [
            {
                "commit": tip,
                "path": "",
                "rule": "cannot-verify",
                "message": exc.message,
                "fix": exc.hint or "",
                "step": "",
            }
        ]
    return [f.as_json() for f in report.findings]


def _unwitnessed(top: Path) -> list[Any]:
    """verify's exit 2 in a clone that never fetched the witnesses (issue 30), as the
    finding that comes first: without them no registration can be checked."""
    from ledger.core.witnessrefs import fetch_command, witnesses_absent

    remote = witnesses_absent(top)
    if remote is None:
        return []
    message = "this clone has no refs/ledger/witness/* (a plain git clone does not fetch them)"
    fix = fetch_command(remote)
    return [
        {"commit": "", "path": "", "rule": "cannot-verify", "message": message, "fix": fix}
        | {"step": ""}
    ]


def history_notes(state_dir: Path, common: Path, tip: str | None) -> list[Any]:
    """verify's notes that status shows: configuration transitions, void versions and
    withdrawn results (from the report ``history_findings`` just made current)."""
    from ledger.core import verifycache

    if tip is None or verifycache.load(str(state_dir), str(common), tip) is None:
        return []
    shown = ("config", "void", "withdrawn")
    return [n for n in verifycache.load_notes(str(state_dir)) if n.get("kind") in shown]


def run_status(cwd: Path, as_json: bool) -> int:
    data, state_dir = _status(cwd)
    call = call_of(str(data["next"]["command"]), state_dir, _root) if as_json else None
    return show_status(data, as_json, call)


def _root() -> Any:
    """The click app this command runs in (its verbs give the MCP calls)."""
    import click

    return click.get_current_context().find_root().command


def at_hand(cwd: Path, verb: str, as_json: bool, app: Callable[[], Any]) -> int | None:
    """``status`` or ``next`` (``verb``) without the click app, as ``ledger.__main__``
    asks first: the same reading and printing as :func:`run_status` and :func:`run_next`
    (``app`` imports the app, for a call not remembered). None when anything goes wrong
    before a line is printed (not a repository, a bad configuration, a bug): the app
    then runs the verb and says so, as it always has."""
    try:
        data, state_dir = _status(cwd)
        call = call_of(str(data["next"]["command"]), state_dir, app) if as_json else None
    except Exception:  # the app reports it, with its exit code
        return None
    if verb == "next":
        return show_next(data["next"], as_json, call)
    return show_status(data, as_json, call)


def show_status(data: dict[str, Any], as_json: bool, call: Any) -> int:
    if as_json:
        output.emit_json({**data, "next": {**data["next"], "call": call}})
        return 0
    from ledger.core.loops import headline

    output.say(headline(data))
    if data["recent"]:
        rows = [
            (
                v["id"],
                v["gate"],
                # A voided version is void, whatever verdict it had before.
                ("void" if v["state"] == "void" else v["verdict"] or "open")
                + (" (override)" if v["override"] else ""),
                v["bet"],
            )
            for v in data["recent"]
        ]
        output.table("recent versions", ("version", "gate", "verdict", "bet"), rows)
    for trigger in data["triggers"]:
        output.say(f"trigger: [{trigger['rule']}] {trigger['message']}")
    if data["phase"] == "parked":
        output.say("phase: parked (registration blocked; see CAMPAIGN_STATUS.md)")
    for run in data["runs"]["running"]:
        output.say(f"running: {run['label']} (pid {run['pid']}, log {run['log']})")
    if data["runs"]["failed"]:
        output.say(f"failed runs on record: {len(data['runs']['failed'])}")
    for flag in data.get("flagged", []):
        if flag["dirty"]:
            output.say(
                f"flagged: {flag['id']} has {flag['dirty']} result(s) measured on a dirty work tree"
            )
        if flag.get("before_code"):
            output.say(
                f"flagged: {flag['id']} has {flag['before_code']} result(s) measured before "
                f"any code commit of {flag['id']} (see git ledger show {flag['id']})"
            )
        if flag.get("mixed"):
            output.say(
                f"flagged: {flag['id']} has {flag['mixed']} result(s) measured at another code "
                f"commit or under other conditions (see git ledger show {flag['id']})"
            )
    queued = data.get("backlog", {}).get("queued", [])
    if queued:  # the observability backlog (reflection section 6)
        output.say(f"observability backlog: {len(queued)} queued (ship with register --ships ID)")
        for d in queued:
            output.say(f"  {d['id']} [{d['effort']}] {d['what']} ({d['where'] or '—'})")
    for flag in data.get("yellow", []):
        output.say(f"yellow flag: {flag['text']}")
    for problem in data["problems"]:
        output.say(f"problem: {problem['path']}: {problem['error']}")
    for problem in data["machine"]:
        if problem["kind"] != "history":  # listed below, from verify's own report
            output.say(f"problem: {problem['message']} (fix: {problem['fix']})")
    for item in data.get("unmeasured", []):
        output.say(f"unmeasured: {item['id']} has no results on {', '.join(item['gates'])}")
    for item in data.get("unjudged", []):
        output.say(f"problem: {item['why']}")
    for finding in data["history"]:
        output.say(
            f"problem: {finding['commit'][:10]} {finding['path']}: [{finding['rule']}] "
            f"{finding['message']} (fix: {finding['fix']})"
        )
    notes = data.get("history_notes", [])
    configs = [n for n in notes if n["kind"] == "config"]
    for note in configs[-3:]:
        output.say(f"config change: {note['commit'][:10]} {note['text']}")
    if len(configs) > 3:
        output.say(f"  ({len(configs) - 3} earlier; git ledger verify lists them all)")
    for note in notes:
        if note["kind"] == "withdrawn":
            output.say(f"{note['step'] or 'entry'} {note['text']} ({note['path']})")
    if data.get("brief"):  # the latest concluded entry's Next steps (issue 26)
        output.say(f"brief (next steps of {data['brief']['from']}): {data['brief']['text']}")
    nxt = data["next"]
    output.say(f"next: {nxt['command']}  # {nxt['reason']}")
    if nxt.get("decide"):
        output.say(f"  a person decides first: {nxt['decide']}")
    return 0


def call_of(command: str, state_dir: Path, app: Callable[[], Any]) -> dict[str, Any] | None:
    """The MCP tool call that takes the step ``command`` (the server runs that command):
    :func:`ledger.mcp.tools.call_for` over the app's verbs, a function of the command
    and this program's code, so remembered as a derived cache (``calls.json``). The
    app (click and every loop's verbs, ~40 ms) is imported only for a command not seen
    before: a warm ``status --json`` needs neither."""
    from ledger.core import caches

    file, key = caches.path(state_dir, CALLS), caches.key(CALLS)
    found = caches.recall(file, key, command, dict)
    if found is not None and "call" in found:
        call: dict[str, Any] | None = found["call"]
        return call
    import click

    from ledger.mcp.tools import call_for

    root = app()
    call = call_for(root, command) if isinstance(root, click.Group) else None
    caches.remember(file, key, command, {"call": call}, KEEP_CALLS)
    return call


CALLS = "calls.json"
KEEP_CALLS = 32


def run_next(cwd: Path, as_json: bool) -> int:
    data, state_dir = _status(cwd)
    call = call_of(str(data["next"]["command"]), state_dir, _root) if as_json else None
    return show_next(data["next"], as_json, call)


def show_next(action: dict[str, Any], as_json: bool, call: Any) -> int:
    if as_json:
        output.emit_json({**action, "call": call})
    else:
        output.say(action["command"])
        output.say(f"# {action['reason']}")
        if action.get("brief"):
            output.say(f"# brief: {action['brief']}")
        if action.get("decide"):
            output.say(f"# a person decides first: {action['decide']}")
    return 0
