"""``git ledger status`` and ``git ledger next``: where the loop stands, what to do next."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ledger import output, rules
from ledger.context import open_context
from ledger.nextstep import next_action
from ledger.state import LedgerState, load_state


def status_data(
    state: LedgerState, branch: str | None, records: list[dict[str, object]] | None = None
) -> dict[str, Any]:
    fired, incomplete = rules.reflection_pending(state)
    from ledger.runner import alive

    running = [
        {"label": r.get("label"), "pid": r.get("pid"), "log": r.get("log")}
        for r in records or []
        if isinstance(r.get("pid"), int) and alive(int(str(r["pid"])))
    ]
    runs = {
        "running": running,
        "failed": [
            {"path": r.path, "exit_code": r.data.exit_code}
            for r in state.results
            if r.data.status == "failed"
        ],
    }
    versions = [
        {
            "id": v.id,
            "gate": v.front.gate,
            "bet": v.front.bet,
            "state": "concluded" if v.concluded else "open",
            "verdict": v.verdict,
            "override": v.front.conclusion.override if v.front.conclusion else None,
        }
        for v in state.versions
    ]
    overrides = [{"id": v["id"], "reason": v["override"]} for v in versions if v["override"]]
    return {
        "schema": 1,
        "preset": state.config.ledger.preset,
        "dir": state.config.dir,
        "branch": branch,
        "commit": state.commit_id,
        "counts": {
            "versions": len(state.versions),
            "open": sum(1 for v in versions if v["state"] == "open"),
            "concluded": sum(1 for v in versions if v["state"] == "concluded"),
            "results": len(state.results),
            "reflections": len(state.reflections),
        },
        "open": [v["id"] for v in versions if v["state"] == "open"],
        "last": versions[-1] if versions else None,
        "triggers": [{"rule": f.rule, "message": f.message} for f in fired],
        "reflection_due": bool(fired),
        "incomplete_reflection": incomplete,
        "phase": state.phase.state if state.phase else "active",
        "overrides": overrides,
        "problems": [{"path": p, "error": e} for p, e in state.problems],
        "runs": runs,
        "next": next_action(state).as_dict(),
    }


def _load(cwd: Path) -> tuple[LedgerState, str | None, list[dict[str, object]]]:
    from ledger.runner import RunRecords

    ctx = open_context(cwd)
    snap = ctx.store.snapshot()
    branch = (
        None if ctx.store.repo.head_is_detached else ctx.store.branch().removeprefix("refs/heads/")
    )
    return load_state(ctx.store, ctx.config, snap), branch, RunRecords(ctx).all()


def run_status(cwd: Path, as_json: bool) -> int:
    state, branch, records = _load(cwd)
    data = status_data(state, branch, records)
    if as_json:
        output.emit_json(data)
        return 0
    counts = data["counts"]
    output.say(
        f"{data['preset']} ledger in {data['dir']}/ on {branch or 'detached HEAD'}: "
        f"{counts['versions']} versions ({counts['open']} open, {counts['concluded']} concluded), "
        f"{counts['results']} results"
    )
    if state.versions:
        rows = []
        for version in state.versions[-10:]:
            verdict = version.verdict or "open"
            if version.front.conclusion and version.front.conclusion.override:
                verdict += " (override)"
            rows.append((version.id, version.front.gate, verdict, version.front.bet))
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
    nxt = data["next"]
    output.say(f"next: {nxt['command']}  # {nxt['reason']}")
    return 0


def run_next(cwd: Path, as_json: bool) -> int:
    state, _, _ = _load(cwd)
    action = next_action(state)
    if as_json:
        output.emit_json(action.as_dict())
    else:
        output.say(action.command)
        output.say(f"# {action.reason}")
    return 0
