"""``git ledger status`` and ``git ledger next``: where the loop stands, what to do next.

The state-derived part is cached by ledger tree and config (see
:mod:`ledger.core.statuscache`); a warm call imports neither pydantic nor scipy.
Branch, commit and running runs are read fresh every time.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from ledger.core import gitcli, output, statuscache
from ledger.core.configfile import ledger_dir, read_worktree_config
from ledger.core.repobase import cell_of
from ledger.core.runfiles import running

if TYPE_CHECKING:
    from ledger.core.context import Context
    from ledger.core.state import LedgerState


def summary(state: LedgerState, ctx: Context) -> dict[str, Any]:
    """Everything status says that is a function of the ledger tree and config."""
    from ledger.core.loops import preset_for
    from ledger.presets.versions import rules
    from ledger.presets.versions.nextstep import code_commit, next_action

    preset = preset_for(state.config)

    fired, incomplete = rules.reflection_pending(state)
    nxt = next_action(state)
    # A version that builds on another needs its code committed before it is measured;
    # whether it is, only git's history says (see fresh_next).
    version = state.version(nxt.step) if nxt.step and nxt.action == "measure" else None
    code_first = (
        code_commit(state, version).as_dict()
        if version is not None and version.front.parent and version.front.files
        else None
    )
    # After a refutation `next` offers reverting its code; whether that code is still on
    # the branch, only git's history says (see fresh_next).
    last = state.versions[-1] if state.versions else None
    refuted = (
        last.id
        if last is not None and last.verdict == "refuted" and not last.front.matrix
        else None
    )
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
    return {
        **preset.summary(ctx, state),
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
        "triggers": [{"rule": f.rule, "message": f.message} for f in fired],
        "reflection_due": bool(fired),
        "incomplete_reflection": incomplete,
        "phase": state.phase.state if state.phase else "active",
        "overrides": [{"id": v["id"], "reason": v["override"]} for v in versions if v["override"]],
        "problems": [{"path": p, "error": e} for p, e in state.problems],
        "failed_runs": [
            {"path": r.path, "exit_code": r.data.exit_code}
            for r in state.results
            if r.status == "failed"
        ],
        "next": preset.next_action(ctx, state),
        "code_first": code_first,
        "refuted": refuted,
        "flagged": _flagged(state, ctx, [v.id for v in state.versions[-10:]]),
    }


def _flagged(state: LedgerState, ctx: Context, recent: list[str]) -> list[dict[str, Any]]:
    """Versions with results measured on a dirty work tree (any version) or before any
    code commit of the version (the recent ones: that needs history); 'show ID' names
    the files."""
    from ledger.presets.versions.readiness import flags_of

    counts: dict[str, int] = {}
    for r in state.results:
        if r.status == "ok" and r.dirty:
            counts[r.version] = counts.get(r.version, 0) + 1
    before = {
        vid: len(f.before_code)
        for vid, f in flags_of(ctx.store, state, recent).items()
        if f.before_code
    }
    return [
        {"id": vid, "dirty": counts.get(vid, 0), "before_code": before.get(vid, 0)}
        for vid in [*counts, *(v for v in before if v not in counts)]
    ]


def status_data(cwd: Path) -> dict[str, Any]:
    """Status from the cache when the ledger tree and config are known (two git calls),
    else from the ledger itself."""
    top, common = gitcli.locate(cwd)
    found = read_worktree_config(top)
    directory = ledger_dir(*found) if found is not None else None
    ids = gitcli.head_ids(top, directory) if directory is not None else None
    state_dir = common / "ledger"
    cache_key = statuscache.key(found[0], found[1], ids[1]) if found and ids else None
    data = statuscache.get(state_dir, cache_key) if cache_key else None
    if data is None or ids is None:
        from ledger.core.context import open_context

        ctx = open_context(cwd)  # validates the configuration; a bad one is exit 2
        data = summary(ctx.state(), ctx)
        if cache_key:
            statuscache.put(state_dir, cache_key, data)
        detached = ctx.store.repo.head_is_detached
        data["branch"] = None if detached else ctx.store.branch().removeprefix("refs/heads/")
        data["commit"] = ctx.store.resolve(None)
    else:
        data["branch"] = ids[2].removeprefix("refs/heads/") if ids[2] != "HEAD" else None
        data["commit"] = ids[0]
    data["runs"] = {"running": running(state_dir / "runs"), "failed": data.pop("failed_runs")}
    data["history"] = history_findings(cwd, state_dir, common, data["commit"])
    data["history_notes"] = history_notes(state_dir, common, data["commit"])
    data["next"] = fresh_next(
        cwd, top, data, data.pop("code_first", None), data.pop("refuted", None)
    )
    return data


def fresh_next(
    cwd: Path,
    top: Path,
    data: dict[str, Any],
    code_first: dict[str, Any] | None,
    refuted: str | None = None,
) -> dict[str, Any]:
    """The next action, corrected by what the ledger tree cannot say (read fresh)."""
    nxt: dict[str, Any] = data["next"]
    if data["runs"]["running"]:
        labels = ", ".join(str(r["label"]) for r in data["runs"]["running"])
        return _action("wait", "git ledger wait", f"runs are still running: {labels}")
    open_ids = set(data.get("open", []))
    wedged = [
        f
        for f in data.get("history", [])
        if f.get("step") in open_ids and f.get("rule") != "cannot-verify"
    ]
    if wedged:
        # History holds a finding against the open version: conclude will refuse it
        # forever. Closing it as void lets the loop go on with the next id.
        vid = str(wedged[0]["step"])
        return _action(
            "void",
            f"git ledger void {vid} --reason '<REASON>'",
            f"{vid} cannot be concluded: [{wedged[0]['rule']}] {wedged[0]['message']} "
            "(git ledger verify lists every finding); close it as void, its id is never reused",
            step=vid,
            placeholders=["<REASON>"],
        )
    if nxt["action"] == "register" and refuted:
        standing = refuted_code(top, refuted)
        if standing:
            build_on = f"{nxt['command']} --parent {refuted}"
            return {
                **_action(
                    "revert-or-build-on",
                    f"git revert --no-edit {' '.join(standing)}",
                    f"{refuted} was refuted and its code is still on the branch: revert its "
                    f"code commits (this command), or build on it with a stated reason: "
                    f"{build_on} (say in the bet why refuted code stays)",
                    step=refuted,
                ),
                "alternatives": [{**nxt, "command": build_on}],
            }
    step = nxt.get("step")
    if nxt["action"] == "measure" and code_first is not None and step:
        grep = ["log", "--format=%H %(trailers:key=Ledger-Transition,valueonly,separator=%x2c)"]
        found = gitcli.output([*grep, f"--grep=^Ledger-Step: {step}$", "HEAD"], top)
        if not any(len(line.split()) == 1 for line in found.splitlines()):
            return code_first
    if nxt["action"] == "reflect" and step:
        rel = f"{data['dir']}/{step}.md"
        if (top / rel).exists():
            after = step.removeprefix("REFLECTION_")
            return _action(
                "complete-reflection",
                f"git ledger reflect {after} --commit",
                f"{rel} is written but not committed; fill in its six sections, then commit it",
                step=step,
                edit=[rel],
            )
    if nxt["action"] == "matrix" and step:
        return _matrix_next(cwd, step)
    if nxt["action"] == "conclude" and step and "--override" not in nxt["command"]:
        flag = next((f for f in data.get("flagged", []) if f["id"] == step), None)
        if flag:
            # conclude refuses results measured on a dirty tree or before the code was
            # committed without an override: say so, and offer the clean re-measurement
            # as the other way.
            why = "; ".join(
                text
                for n, text in (
                    (
                        flag["dirty"],
                        f"{flag['dirty']} result(s) were measured on a dirty work tree",
                    ),
                    (
                        flag.get("before_code", 0),
                        f"{flag.get('before_code', 0)} result(s) were measured before any code "
                        f"commit of {step}",
                    ),
                )
                if n
            )
            return {
                **nxt,
                "command": f"{nxt['command']} --override '<REASON>'",
                "reason": f"{nxt['reason']}; {why}, so the verdict needs a stated reason (or "
                "commit the code and re-measure from a clean tree with --replace)",
                "placeholders": [*nxt.get("placeholders", []), "<REASON>"],
            }
    return nxt


def _matrix_next(cwd: Path, mid: str) -> dict[str, Any]:
    """Each cell in turn: its worktree, its code commit, its measurement; then the winner."""
    import os
    import shlex

    from ledger.core.context import open_context
    from ledger.presets.versions.baseline import NO_RESULTS
    from ledger.presets.versions.matrix import WORKTREES, comparison
    from ledger.presets.versions.nextstep import code_commit, measure

    ctx = open_context(cwd)
    state = ctx.state()
    found = state.matrix(mid)
    if found is None:
        return _action("status", "git ledger status", f"matrix {mid} is not on this branch")
    matrix = found[1]
    _, common = gitcli.locate(cwd)
    here = cwd.resolve()
    table = comparison(ctx, state, matrix)
    for cell in matrix.cells:
        row = table[cell.name]
        cid = f"{mid}.{cell.name}"
        tree = common.parent / WORKTREES / f"{mid.lower()}-{cell.name.lower()}-{cell.slug}"
        rel = os.path.relpath(tree, here)
        if row["stat"].outcome != NO_RESULTS:
            continue
        if not tree.is_dir():
            return _action(
                "matrix-join",
                f"git ledger matrix join {mid} {cell.name}",
                f"cell {cid} has no worktree on this machine",
                step=cid,
            )
        version = state.version(cid)
        if version is None:
            continue
        log = gitcli.output(
            [
                "log",
                "--format=%H %(trailers:key=Ledger-Transition,valueonly,separator=%x2c)",
                f"--grep=^Ledger-Step: {cid.replace('.', '[.]')}$",
                cell.branch,
            ],
            tree,
        )
        if not any(len(line.split()) == 1 for line in log.splitlines()):
            action = code_commit(state, version)
            edit = [os.path.join(rel, f) for f in action.edit]
        else:
            action = measure(state, cid, cell.gate)
            edit = []
        return _action(
            action.action,
            f"cd {shlex.quote(rel)} && {action.command}",
            f"matrix {mid}, cell {cell.name}: {action.reason}",
            step=cid,
            placeholders=list(action.placeholders),
            edit=edit,
        )
    passing = [r for r in table.values() if r["pass"]]
    if passing:
        best = max(passing, key=lambda r: r["z"] or 0.0)
        name = cell_of(str(best["cell"]))
        return _action(
            "matrix-conclude",
            f"git ledger matrix conclude {mid} --winner {name}",
            f"every cell of {mid} is measured; {name} passes the adjusted threshold best",
            step=mid,
        )
    return _action(
        "matrix-conclude",
        f"git ledger matrix conclude {mid} --none",
        f"every cell of {mid} is measured; none passes the adjusted threshold",
        step=mid,
    )


def _action(
    action: str,
    command: str,
    reason: str,
    *,
    step: str | None = None,
    placeholders: list[str] | None = None,
    edit: list[str] | None = None,
) -> dict[str, Any]:
    return {
        "action": action,
        "command": command,
        "reason": reason,
        "step": step,
        "placeholders": placeholders or [],
        "edit": edit or [],
    }


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


def history_notes(state_dir: Path, common: Path, tip: str | None) -> list[Any]:
    """verify's notes that status shows: configuration transitions, void versions and
    withdrawn results (from the report ``history_findings`` just made current)."""
    from ledger.core import verifycache

    if tip is None or verifycache.load(str(state_dir), str(common), tip) is None:
        return []
    shown = ("config", "void", "withdrawn")
    return [n for n in verifycache.load_notes(str(state_dir)) if n.get("kind") in shown]


def refuted_code(top: Path, vid: str) -> list[str]:
    """The code commits of ``vid`` still on the branch (not reverted), newest first."""
    import re

    fmt = "%H %(trailers:key=Ledger-Transition,valueonly,separator=%x2c)"
    found = gitcli.output(["log", f"--format={fmt}", f"--grep=^Ledger-Step: {vid}$", "HEAD"], top)
    code = [line.split()[0] for line in found.splitlines() if len(line.split()) == 1]
    if not code:
        return []
    bodies = gitcli.output(["log", "--format=%B", "--grep=^This reverts commit ", "HEAD"], top)
    reverted = set(re.findall(r"This reverts commit ([0-9a-f]{40})", bodies))
    return [sha for sha in code if sha not in reverted]


def run_status(cwd: Path, as_json: bool) -> int:
    data = status_data(cwd)
    if as_json:
        output.emit_json(data)
        return 0
    from ledger.core.loops import headline

    output.say(headline(data))
    if data["recent"]:
        rows = [
            (
                v["id"],
                v["gate"],
                (v["verdict"] or "open") + (" (override)" if v["override"] else ""),
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
    for problem in data["problems"]:
        output.say(f"problem: {problem['path']}: {problem['error']}")
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
    nxt = data["next"]
    output.say(f"next: {nxt['command']}  # {nxt['reason']}")
    return 0


def run_next(cwd: Path, as_json: bool) -> int:
    action = status_data(cwd)["next"]
    if as_json:
        output.emit_json(action)
    else:
        output.say(action["command"])
        output.say(f"# {action['reason']}")
    return 0
