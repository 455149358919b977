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
