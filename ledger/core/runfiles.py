"""The run registry: one JSON record per started run under .git/ledger/runs/.

A record names its process by PID and start time (``pid_started``), so a PID
the system has since given to another process is never taken for the run (see
:mod:`ledger.core.processes`). Reading records needs only the standard library;
psutil is imported only when a record's process has to be looked at, so a
``status`` with nothing on record pays nothing for it.
"""

from __future__ import annotations

import json
from pathlib import Path

from ledger.core.repobase import write_atomic

START_KEY = "pid_started"
# What retired records started (one JSON object a line): the evidence a verdict reads
# of seeds that were started and never measured, after the records themselves go.
GONE = "gone.jsonl"
KEPT = ("step", "gate", "seeds", "label", "argv", "batch")


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


def retire(record: dict[str, object]) -> None:
    """Remove the record of a run that is over and was never recorded (killed, stopped,
    or a detached worker that ended), keeping what it started in :data:`GONE`: clearing
    the registry must not clear the fact that seeds were started (a verdict then would
    stand on fewer seeds than were started, and nobody would know)."""
    path = Path(str(record["file"]))
    kept = {key: record[key] for key in KEPT if key in record}
    if kept.get("step"):
        gone = path.parent / GONE
        try:
            before = gone.read_text(encoding="utf-8")
        except OSError:
            before = ""
        write_atomic(gone, before + json.dumps(kept, sort_keys=True) + "\n")
    path.unlink(missing_ok=True)


def evidence(runs_dir: Path) -> list[dict[str, object]]:
    """The records, and what retired ones started (no process: never alive)."""
    found = records(runs_dir)
    try:
        lines = (runs_dir / GONE).read_text(encoding="utf-8").splitlines()
    except OSError:
        return found
    for line in lines:
        try:
            data = json.loads(line)
        except ValueError:
            continue  # a line cut short by a crash: the others stand
        if isinstance(data, dict):
            found.append({key: data[key] for key in KEPT if key in data})
    return found


def write(runs_dir: Path, name: str, data: dict[str, object]) -> Path:
    """Record a started run, stamped with its process's start time; returns the file."""
    from ledger.core import processes

    pid = data.get("pid")
    if isinstance(pid, int) and START_KEY not in data:
        data = {**data, START_KEY: processes.start_time(pid)}
    path = runs_dir / f"{name}.json"
    write_atomic(path, json.dumps(data, sort_keys=True))
    return path


def _seconds(value: object) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
        return float(value)
    return None


def identity(record: dict[str, object]) -> tuple[int, float | None, str] | None:
    """(pid, start time, program) of a record, or None when it names no process.

    Records written before ``pid_started`` existed carry ``started``, the
    clock read right after the process was started: close enough to its start
    time to tell it from a process that got the PID later.
    """
    pid = record.get("pid")
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
        return None
    argv = record.get("argv")
    argv0 = str(argv[0]) if isinstance(argv, list) and argv else ""
    stamp = _seconds(record.get(START_KEY))
    if stamp is None:
        stamp = _seconds(record.get("started"))
    return pid, stamp, argv0


def alive(record: dict[str, object]) -> bool:
    """Is the process this record names still running (and still the same process)?"""
    found = identity(record)
    if found is None:
        return False
    from ledger.core import processes

    return processes.is_running(*found)


def stop(record: dict[str, object]) -> bool:
    """Stop the run this record names, with everything it started; False if it was not running."""
    found = identity(record)
    if found is None:
        return False
    from ledger.core import processes

    return processes.stop(*found)


def running(runs_dir: Path) -> list[dict[str, object]]:
    return [
        {"label": r.get("label"), "pid": r.get("pid"), "log": r.get("log")}
        for r in records(runs_dir)
        if alive(r)
    ]


def is_unrecorded(record: dict[str, object]) -> bool:
    """A run that finished but whose ``git ledger run`` died before committing it."""
    owner = {"pid": record.get("ledger_pid"), START_KEY: record.get("ledger_started")}
    return bool(record.get("finished")) and not alive(owner)


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
