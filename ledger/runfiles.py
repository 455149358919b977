"""The PID records of ledger runs under .git/ledger/runs/ (standard library only)."""

from __future__ import annotations

import json
import os
from pathlib import Path


def records(runs_dir: Path) -> list[dict[str, object]]:
    found = []
    if runs_dir.is_dir():
        for path in sorted(runs_dir.glob("*.json")):
            try:
                data = json.loads(path.read_text())
            except (OSError, ValueError):
                continue
            if isinstance(data, dict):
                data["file"] = str(path)
                found.append(data)
    return found


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie is not alive for our purposes
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().split(") ", 1)[1][:1] != "Z"
    except (OSError, IndexError):
        return True


def running(runs_dir: Path) -> list[dict[str, object]]:
    return [
        {"label": r.get("label"), "pid": r.get("pid"), "log": r.get("log")}
        for r in records(runs_dir)
        if isinstance(r.get("pid"), int) and alive(int(str(r["pid"])))
    ]


def is_unrecorded(record: dict[str, object]) -> bool:
    """A run that finished but whose ``git ledger run`` died before committing it."""
    owner = record.get("ledger_pid")
    return bool(record.get("finished")) and not (isinstance(owner, int) and alive(owner))


def unrecorded(runs_dir: Path) -> list[dict[str, object]]:
    return [r for r in records(runs_dir) if is_unrecorded(r)]


def unrecorded_problem(record: dict[str, object]) -> str | None:
    """doctor's line for a finished run that is not on record (None: not such a run)."""
    if not is_unrecorded(record):
        return None
    return (
        f"finished run not on record: {record.get('label')} (exit code {record.get('exit_code')}): "
        f"git ledger run {record.get('step')} --record-finished"
    )
