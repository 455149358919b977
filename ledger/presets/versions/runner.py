"""Running a gate's configured command: argv only (never a shell), PIDs on record, results ingested.

Every run is an argv planned by :mod:`.runplan` from ``[run] command`` in
ledger.toml. Its PID is written under ``.git/ledger/runs/`` (:mod:`.runrecords`)
as soon as it exists and removed once the run is reaped and its outcome
recorded, so a crash leaves a trail ``doctor`` can follow. stdout and stderr go
to a log file whose path is printed. A run that finishes with a results file is
recorded exactly as ``record`` would; a run that fails or is killed is recorded
as a failed run with its exit code and log tail, never as a result.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from ledger.core import gitcli, runfiles
from ledger.core.context import Context
from ledger.core.errors import BadInput
from ledger.core.state import load_version
from ledger.core.store import Snapshot, Transition
from ledger.presets.versions.ingest import build_failure, build_result, result_path
from ledger.presets.versions.runplan import RunSpec, outputs_in
from ledger.presets.versions.runrecords import (
    Finished,
    RunRecords,
    finished_from,
    measurement_record,
)

KILL_GRACE_S = 5.0  # after SIGTERM on a timeout, SIGKILL


@dataclass(frozen=True)
class Outcome:
    spec: RunSpec
    exit_code: int
    recorded: str | None
    failed: bool
    seconds: float
    reason: str = ""


def log_tail(path: Path, limit: int = 2000) -> str:
    try:
        data = path.read_bytes()
    except OSError:
        return ""
    return data[-limit:].decode("utf-8", errors="replace")


def _entry(
    ctx: Context, snap: Snapshot, run: Finished, dirty: bool
) -> tuple[str, bytes, bool, str]:
    """The entry for one finished run: (path, bytes, failed, reason), with its own provenance."""
    spec = run.spec
    m = replace(spec.measurement, wall_time_s=round(run.seconds, 3))
    version = load_version(ctx.config, snap, m.version)
    raw = (
        spec.out.read_bytes()
        if run.exit_code == 0 and not run.reason and spec.out.is_file()
        else None
    )
    if raw is not None and not raw.strip() and ctx.config.run.results == "stdout":
        raw = None  # printed nothing
    missing = (
        'the command printed no results JSON on stdout ([run] results = "stdout")'
        if ctx.config.run.results == "stdout"
        else f"no results file at {spec.out}"
    )
    reason = run.reason or (
        "" if raw is not None else (f"exit code {run.exit_code}" if run.exit_code != 0 else missing)
    )
    if raw is not None:
        from ledger.core.verify import ingest_config

        try:
            path, data = build_result(
                ingest_config(ctx.store, ctx.config, ctx.config_file, m.version),
                version,
                m,
                raw,
                spec.out.name,
                code_commit=spec.code_commit or snap.commit_id,
                dirty=dirty and spec.code_commit is None,
                existing=snap.read(result_path(ctx.dir, m)),
            )
            return path, data, False, ""
        except BadInput as exc:
            reason = exc.message
    tail = log_tail(spec.log)
    if reason and not tail.endswith(reason):
        tail = f"{tail}\n[git-ledger] {reason}".strip()
    path, data = build_failure(
        ctx.config,
        version,
        m,
        exit_code=run.exit_code,
        log_tail=tail,
        code_commit=spec.code_commit or snap.commit_id,
        dirty=dirty and spec.code_commit is None,
    )
    return path, data, True, reason


def record_runs(ctx: Context, runs: list[Finished]) -> list[Outcome]:
    """Commit every finished run as one transition: one commit per ``run``, not per seed."""
    if not runs:
        return []
    workdir = ctx.store.require_workdir()
    # <out-dir>/<version>/<gate>/<seed>.json: the run's output folder is out's grandparent.
    folders = [run.spec.out.parents[2] for run in runs]
    dirty_check = gitcli.DirtyCheck(workdir, ctx.dir, outputs_in(ctx, folders))
    entries: list[tuple[str, bool, str]] = []

    def build(snap: Snapshot) -> Transition:
        entries.clear()
        writes: dict[str, bytes | None] = {}
        lines = []
        for run in runs:
            path, data, failed, reason = _entry(ctx, snap, run, dirty_check.result())
            writes[path] = data
            entries.append((path, failed, reason))
            lines.append(f"- {run.spec.label}: " + (f"FAILED ({reason})" if failed else "recorded"))
        first = runs[0].spec.measurement
        vid, gate, remeasure = first.version, first.gate, first.remeasure
        failures = sum(1 for _, failed, _ in entries if failed)
        what = "re-measurement(s)" if remeasure else "result(s)"
        summary = f"{len(runs) - failures} {what}" + (f", {failures} failed" if failures else "")
        return Transition(
            kind="run" if failures < len(runs) else "run-failed",
            step=vid,
            subject=f"docs(ledger): {vid} run {gate}: {summary}",
            body="\n".join(lines),
            writes=writes,
            trailers=(("Ledger-Remeasure", remeasure),) if remeasure else (),
        )

    ctx.store.transact(build)
    return [
        Outcome(run.spec, run.exit_code, path, failed, run.seconds, reason)
        for run, (path, failed, reason) in zip(runs, entries, strict=True)
    ]


def record_finished(ctx: Context, vid: str) -> list[Outcome]:
    """Ingest the finished runs of ``vid`` a killed ``run`` left unrecorded (one transition)."""
    records = runfiles.unrecorded(RunRecords(ctx).dir)
    runs = [
        (Path(str(r["file"])), f)
        for r in records
        if (f := finished_from(r)) is not None and f.spec.measurement.version == vid
    ]
    state = ctx.state()
    version = state.version(vid)
    if version is None and not runs:
        raise state.no_version(vid, "register it first")
    if version is None or version.front.void or version.concluded:
        # Closed while the runs went on: a void version's results never count, a
        # concluded one takes only re-measurements (record's own rule, ingest), and a
        # withdrawn one (its registration reverted) has nowhere to put them. The runs'
        # outputs stay where they ran; only their pending records go.
        gone = version is None or version.front.void
        closed = [(f, r) for f, r in runs if gone or not r.spec.measurement.remeasure]
        for file, _ in closed:
            file.unlink(missing_ok=True)
        runs = [pair for pair in runs if pair not in closed]
    outcomes: list[Outcome] = []
    by_gate: dict[str, list[tuple[Path, Finished]]] = {}
    for file, run in runs:
        by_gate.setdefault(run.spec.measurement.gate, []).append((file, run))
    for group in by_gate.values():
        outcomes += record_runs(ctx, [run for _, run in group])
        for file, _ in group:
            file.unlink(missing_ok=True)
    return outcomes


Notify = Callable[[str, RunSpec, "Outcome | None"], None]


def execute(
    ctx: Context, specs: list[RunSpec], jobs: int, notify: Notify | None = None
) -> list[Outcome]:
    """Run ``specs`` with at most ``jobs`` at a time, then record them all as one transition.

    A run that ends is marked finished in its PID record at once, so when this
    process is killed before the commit, ``doctor`` lists what finished and
    ``run --record-finished`` records it. A run longer than ``[run]
    timeout_seconds`` is stopped (SIGTERM, then SIGKILL) and recorded as failed.
    """
    records = RunRecords(ctx)
    pending = list(specs)
    running: dict[int, tuple[subprocess.Popen[bytes], RunSpec, float, Path]] = {}
    stopping: dict[int, float] = {}  # pid -> when it was sent SIGTERM
    limit = ctx.config.run.timeout_seconds
    finished: list[tuple[Finished, Path]] = []
    cwd = ctx.store.require_workdir()
    from ledger.core import processes

    # This process, by PID and start time: doctor tells a live `run` from a dead one.
    ledger_started = processes.start_time(os.getpid())
    while pending or running:
        while pending and len(running) < max(jobs, 1):
            spec = pending.pop(0)
            spec.out.parent.mkdir(parents=True, exist_ok=True)
            spec.out.unlink(missing_ok=True)
            spec.log.unlink(missing_ok=True)
            # O_NOFOLLOW|O_EXCL: the log is a new file of ours, never a link that a
            # commit placed in the output folder (it would aim the run's output at
            # any file of the user's).
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
            with contextlib.ExitStack() as files:
                log = files.enter_context(os.fdopen(os.open(spec.log, flags, 0o644), "wb"))
                # [run] results = "stdout": what the command prints is its results file
                # (its stderr is the log), so a gate need not know about {out}.
                stdout = (
                    files.enter_context(os.fdopen(os.open(spec.out, flags, 0o644), "wb"))
                    if ctx.config.run.results == "stdout"
                    else log
                )
                proc = subprocess.Popen(
                    spec.argv,
                    cwd=spec.cwd or cwd,
                    stdout=stdout,
                    stderr=log if stdout is not log else subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                )
            name = f"run-{uuid.uuid4().hex[:12]}"
            data: dict[str, object] = {
                "pid": proc.pid,
                "argv": spec.argv,
                "step": spec.measurement.version,
                "gate": spec.measurement.gate,
                "label": spec.label,
                "log": str(spec.log),
                "out": str(spec.out),
                "started": time.time(),
                "ledger_pid": os.getpid(),
                "ledger_started": ledger_started,
                "measurement": measurement_record(spec.measurement),
                "code_commit": spec.code_commit,
            }
            record = records.write(name, data)
            running[proc.pid] = (proc, spec, time.perf_counter(), record)
            if notify:
                notify("start", spec, None)
        time.sleep(0.02)
        for pid in list(running):
            proc, spec, started, record = running[pid]
            code = proc.poll()
            seconds = time.perf_counter() - started
            if code is None:
                if limit is not None and seconds > limit:
                    if pid not in stopping:
                        proc.terminate()
                        stopping[pid] = seconds
                    elif seconds - stopping[pid] > KILL_GRACE_S:
                        proc.kill()
                continue
            reason = (
                f"timed out after {limit:g} s ([run] timeout_seconds)" if pid in stopping else ""
            )
            run = Finished(spec, code, seconds, reason)
            records.finish(record, run)
            finished.append((run, record))
            del running[pid]
            stopping.pop(pid, None)
            if notify:
                notify(
                    "end",
                    spec,
                    Outcome(spec, code, None, bool(reason) or code != 0, seconds, reason),
                )
    outcomes = record_runs(ctx, [run for run, _ in finished])
    for _, record in finished:
        record.unlink(missing_ok=True)
    return outcomes
