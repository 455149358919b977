"""What a run leaves under ``.git/ledger/runs/``: its PID record, and once it has
ended, its outcome, until the outcome is on record.

A record is written as soon as the process exists and marked finished the moment
it ends, so a ``run`` killed before its commit leaves a trail: ``doctor`` lists
it, and ``run --record-finished`` rebuilds each finished run from its record
(:func:`finished_from`) and records it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from ledger.core import runfiles
from ledger.core.context import Context
from ledger.presets.versions.ingest import Measurement
from ledger.presets.versions.runplan import RunSpec


class RunRecords:
    """PID files under .git/ledger/runs/: written before a run is waited on, removed when reaped.

    Each names its process by PID and start time (see :mod:`ledger.core.runfiles`).
    """

    def __init__(self, ctx: Context) -> None:
        self.dir = ctx.store.ledger_state_dir / "runs"

    def write(self, name: str, data: dict[str, object]) -> Path:
        return runfiles.write(self.dir, name, data)

    def finish(self, path: Path, run: Finished) -> None:
        """Mark the run of ``path`` finished (not yet on record) with its outcome."""
        data = json.loads(path.read_text())
        data.update(
            finished=True, exit_code=run.exit_code, seconds=round(run.seconds, 3), reason=run.reason
        )
        self.write(path.stem, data)

    def all(self) -> list[dict[str, object]]:
        return runfiles.records(self.dir)

    def evidence(self) -> list[dict[str, object]]:
        """The records, and what retired records started (for seeds started, unmeasured)."""
        return runfiles.evidence(self.dir)


alive = runfiles.alive


@dataclass(frozen=True)
class Finished:
    """A run that has ended, not yet on record: what its PID record keeps until it is."""

    spec: RunSpec
    exit_code: int
    seconds: float
    reason: str = ""  # set when the ledger failed the run itself (a timeout)


def measurement_record(m: Measurement) -> dict[str, object]:
    return {
        "version": m.version,
        "gate": m.gate,
        "seed": m.seed,
        "window": m.window,
        "replicate": m.replicate,
        "conditions": [list(pair) for pair in m.conditions],
        "replace": m.replace,
        "remeasure": m.remeasure,
    }


def finished_from(record: dict[str, object]) -> Finished | None:
    """The finished run a PID record describes (None: not a finished single run)."""
    m = record.get("measurement")
    if not record.get("finished") or not isinstance(m, dict):
        return None
    conditions = m.get("conditions")
    replicate = m.get("replicate")
    measurement = Measurement(
        version=str(m["version"]),
        gate=str(m["gate"]),
        seed=None if m.get("seed") is None else str(m["seed"]),
        window=None if m.get("window") is None else str(m["window"]),
        replicate=replicate if isinstance(replicate, int) else None,
        conditions=tuple(
            (str(pair[0]), str(pair[1]))
            for pair in (conditions if isinstance(conditions, list) else [])
            if isinstance(pair, list) and len(pair) == 2
        ),
        replace=None if m.get("replace") is None else str(m["replace"]),
        remeasure=None if m.get("remeasure") is None else str(m["remeasure"]),
    )
    argv = record.get("argv")
    at = record.get("code_commit")
    spec = RunSpec(
        measurement,
        [str(a) for a in argv] if isinstance(argv, list) else [],
        Path(str(record["out"])),
        Path(str(record["log"])),
        code_commit=at if isinstance(at, str) else None,
    )
    code, seconds = record.get("exit_code"), record.get("seconds")
    return Finished(
        spec,
        code if isinstance(code, int) else -1,
        float(seconds) if isinstance(seconds, int | float) else 0.0,
        str(record.get("reason") or ""),
    )
