"""``git ledger status`` and ``git ledger next``: where the loop stands, what to do next.

The state-derived part is cached by ledger tree and config (see
:mod:`ledger.statuscache`); a warm call imports neither pydantic nor scipy.
Branch, commit and running runs are read fresh every time.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from ledger import gitcli, output, statuscache
from ledger.configfile import ledger_dir, read_worktree_config
from ledger.runfiles import running

if TYPE_CHECKING:
    from ledger.context import Context
    from ledger.state import LedgerState


def summary(state: LedgerState, ctx: Context) -> dict[str, Any]:
    """Everything status says that is a function of the ledger tree and config."""
    from ledger import rules
    from ledger.presets import preset_for

    preset = preset_for(state.config)

    fired, incomplete = rules.reflection_pending(state)
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
            if r.data.status == "failed"
        ],
        "next": preset.next_action(ctx, state),
    }


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
        from ledger.context import open_context

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
    return data


def history_findings(cwd: Path, state_dir: Path, common: Path, tip: str | None) -> list[Any]:
    """``git ledger verify``'s findings for HEAD (from its report cache when current)."""
    from ledger import verifycache

    if tip is None:
        return []
    cached = verifycache.load(str(state_dir), str(common), tip)
    if cached is not None:
        return cached
    from ledger.context import open_context
    from ledger.errors import BadInput
    from ledger.verify import verify

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


def run_status(cwd: Path, as_json: bool) -> int:
    data = status_data(cwd)
    if as_json:
        output.emit_json(data)
        return 0
    counts = data["counts"]
    output.say(
        f"{data['preset']} ledger in {data['dir']}/ on {data['branch'] or 'detached HEAD'}: "
        f"{counts['versions']} versions ({counts['open']} open, {counts['concluded']} concluded), "
        f"{counts['results']} results"
    )
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
    for problem in data["problems"]:
        output.say(f"problem: {problem['path']}: {problem['error']}")
    for finding in data["history"]:
        output.say(
            f"problem: {finding['commit'][:10]} {finding['path']}: [{finding['rule']}] "
            f"{finding['message']} (fix: {finding['fix']})"
        )
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
