"""Running a gate's configured command: argv only (never a shell), PIDs on record, results ingested.

Every run is an argv rendered from ``[run] command`` in ledger.toml. Its PID is
written under ``.git/ledger/runs/`` as soon as it exists and removed once the
run is reaped and its outcome recorded, so a crash leaves a trail ``doctor``
can follow. stdout and stderr go to a log file whose path is printed. A run
that finishes with a results file is recorded exactly as ``record`` would; a
run that fails or is killed is recorded as a failed run with its exit code and
log tail, never as a result.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import string
import subprocess
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from ledger.core import gitcli, runfiles
from ledger.core.context import Context
from ledger.core.errors import BadInput
from ledger.core.model.ids import case_twin, check_case_unique, check_safe
from ledger.core.repobase import result_stem, results_dir
from ledger.core.state import load_version
from ledger.core.store import Snapshot, Transition
from ledger.core.verify import REMEASURE_SLOT
from ledger.presets.versions.ingest import (
    Measurement,
    build_failure,
    build_result,
    check_measurement,
    result_path,
)

PLACEHOLDERS = frozenset({"version", "gate", "seed", "window", "out", "replicate"})
PER_RUN = frozenset({"version", "seed", "window", "out", "replicate"})
OUTPUT_ENV = "LEDGER_OUTPUT_DIR"
KILL_GRACE_S = 5.0  # after SIGTERM on a timeout, SIGKILL


@dataclass(frozen=True)
class RunSpec:
    measurement: Measurement
    argv: list[str]
    out: Path
    log: Path

    @property
    def label(self) -> str:
        m = self.measurement
        key = f"seed {m.seed}" if m.seed is not None else f"window {m.window}"
        return f"{m.version} {m.gate} {key}" + (f" r{m.replicate}" if m.replicate else "")


@dataclass(frozen=True)
class Outcome:
    spec: RunSpec
    exit_code: int
    recorded: str | None
    failed: bool
    seconds: float
    reason: str = ""


def _fields(token: str) -> set[str]:
    names = set()
    for _, field, _, _ in string.Formatter().parse(token):
        if field is not None:
            names.add(field)
    return names


def check_template(template: list[str], stdout: bool = False) -> None:
    for token in template:
        try:
            names = _fields(token)
        except ValueError as exc:
            raise BadInput(f"ledger.toml: [run] command token {token!r}: {exc}") from None
        unknown = names - PLACEHOLDERS
        if unknown:
            raise BadInput(
                f"ledger.toml: [run] command uses unknown placeholder(s) {sorted(unknown)}",
                f"allowed: {', '.join('{' + p + '}' for p in sorted(PLACEHOLDERS))}",
            )
    if not stdout and not any("out" in _fields(t) for t in template):
        raise BadInput(
            "ledger.toml: [run] command has no {out}",
            'the command must write its results to {out}, or set [run] results = "stdout"',
        )


def conditions_of(template: list[str]) -> tuple[tuple[str, str], ...]:
    """Run conditions: every parameter of the template that is the same for every run.

    ``--flag value`` pairs become ``flag=value``; a pair whose value changes from
    run to run (seed, window, output path, version) is not a condition. The
    version is left out so that versions measured the same way compare.
    """
    out: dict[str, str] = {}
    words = [t for t in template[1:]]
    i = 0
    positional = []
    while i < len(words):
        token = words[i]
        value = words[i + 1] if i + 1 < len(words) else None
        if token.startswith("-") and value is not None and not value.startswith("-"):
            if not (_fields(value) & PER_RUN) and not (_fields(token) & PER_RUN):
                out[token.lstrip("-")] = value
            i += 2
            continue
        if not (_fields(token) & PER_RUN):
            positional.append(token)
        i += 1
    out["command"] = " ".join([template[0], *positional])
    return tuple(sorted(out.items()))


def output_dir(ctx: Context, override: Path | None) -> Path:
    # Absolute: the command runs at the top of the work tree, not where we started.
    if override is not None:
        return override.absolute()
    env = os.environ.get(OUTPUT_ENV)
    if env:
        return Path(env).absolute()
    if ctx.config.run.output_dir:
        configured = Path(ctx.config.run.output_dir).expanduser()
        return configured if configured.is_absolute() else ctx.store.require_workdir() / configured
    return ctx.store.ledger_state_dir / "runs" / "out"


def _no_links_below(base: Path, target: Path) -> None:
    """Refuse an output folder reached through a symbolic link below the configured one.

    The output folder may sit in the work tree, where a commit can carry a
    link (``runs/V1 -> ~``); a run would then write its files wherever it points.
    """
    current = base
    for part in target.relative_to(base).parts:
        current = current / part
        if current.is_symlink():
            raise BadInput(
                f"{current} is a symbolic link: run outputs are never written through links",
                "remove the link, or pass --out-dir DIR",
            )


def plan(
    ctx: Context,
    vid: str,
    gate: str,
    seeds: list[str],
    windows: list[str],
    replicates: int,
    out_dir: Path | None,
    replace: str | None,
    remeasure: str | None = None,
) -> list[RunSpec]:
    template = ctx.config.gate(gate).command or ctx.config.run.command
    if template is None:
        raise BadInput(
            f"no command for gate '{gate}' in ledger.toml",
            f'add [gates.{gate}] command (or [run] command) = ["python3", "eval.py", "--seed", "{{seed}}", "--out", "{{out}}"]',
        )
    check_template(template, stdout=ctx.config.run.results == "stdout")
    ctx.config.gate(gate)
    if bool(seeds) == bool(windows):
        raise BadInput("give --seeds or --windows (one of them)", "e.g. --seeds 1,2,3")
    if replicates < 1:
        raise BadInput("--replicates must be at least 1")
    # Record what ran: a fixed placeholder such as {gate} is a value, never a literal.
    conditions = conditions_of([t.replace("{gate}", gate) for t in template])
    base = output_dir(ctx, out_dir)
    root = base / vid / gate
    _no_links_below(base, root)
    snap = ctx.store.snapshot()
    # Result files are named by seed or window: refuse names that are one file
    # on a case-insensitive file system before anything runs, not after.
    recorded = snap.files(results_dir(ctx.dir, vid, gate))
    keys = seeds or windows
    for i, key in enumerate(keys):
        check_case_unique(key, keys[:i], "seed" if seeds else "window")
    if remeasure is not None and replace is not None:
        raise BadInput("--remeasure adds results and --replace replaces them: give one")
    # Refused before anything runs (a concluded version without --remeasure, an open
    # one with it), not after every seed has spent its time.
    check_measurement(
        ctx.config,
        load_version(ctx.config, snap, vid),
        Measurement(version=vid, gate=gate, seed=(seeds or ["1"])[0], remeasure=remeasure),
    )
    specs = []
    for key in seeds or windows:
        check_safe(key, "seed" if seeds else "window")
        slot = REMEASURE_SLOT
        for rep in range(1, replicates + 1):
            replicate = rep if replicates > 1 else None
            if remeasure is not None:
                # A slot of its own, past any replicate the version's own runs use,
                # so a re-measurement never lands on a file the verdict read.
                taken = Measurement(vid, gate, key if seeds else None, None if seeds else key)
                while snap.read(result_path(ctx.dir, dataclasses.replace(taken, replicate=slot))):
                    slot += 1
                replicate, slot = slot, slot + 1
            m = Measurement(
                version=vid,
                gate=gate,
                seed=key if seeds else None,
                window=None if seeds else key,
                replicate=replicate,
                conditions=conditions,
                replace=replace,
                remeasure=remeasure,
            )
            twin = case_twin(result_path(ctx.dir, m), recorded)
            if twin is not None:
                raise BadInput(
                    f"{result_path(ctx.dir, m)} differs from the recorded {twin} only in letter case",
                    "on a case-insensitive file system (macOS, Windows) they are one file",
                )
            if snap.read(result_path(ctx.dir, m)) is not None and replace is None:
                raise BadInput(
                    f"{result_path(ctx.dir, m)} is already recorded",
                    "pass --replace REASON to run it again",
                )
            stem = result_stem(m.seed, m.window, m.replicate, failed=False)
            out = root / f"{stem}.json"
            values = {
                "version": vid,
                "gate": gate,
                "seed": key if seeds else "",
                "window": "" if seeds else key,
                "out": str(out),
                "replicate": str(replicate or rep),
            }
            argv = [token.format_map(values) for token in template]
            specs.append(RunSpec(m, argv, out, root / f"{stem}.log"))
    return specs


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


alive = runfiles.alive


def log_tail(path: Path, limit: int = 2000) -> str:
    try:
        data = path.read_bytes()
    except OSError:
        return ""
    return data[-limit:].decode("utf-8", errors="replace")


@dataclass(frozen=True)
class Finished:
    """A run that has ended, not yet on record: what its PID record keeps until it is."""

    spec: RunSpec
    exit_code: int
    seconds: float
    reason: str = ""  # set when the ledger failed the run itself (a timeout)


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
        try:
            path, data = build_result(
                ctx.config,
                version,
                m,
                raw,
                spec.out.name,
                code_commit=snap.commit_id,
                dirty=dirty,
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
        code_commit=snap.commit_id,
        dirty=dirty,
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


def _measurement_record(m: Measurement) -> dict[str, object]:
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


def _finished_from(record: dict[str, object]) -> Finished | None:
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
    spec = RunSpec(
        measurement,
        [str(a) for a in argv] if isinstance(argv, list) else [],
        Path(str(record["out"])),
        Path(str(record["log"])),
    )
    code, seconds = record.get("exit_code"), record.get("seconds")
    return Finished(
        spec,
        code if isinstance(code, int) else -1,
        float(seconds) if isinstance(seconds, int | float) else 0.0,
        str(record.get("reason") or ""),
    )


def record_finished(ctx: Context, vid: str) -> list[Outcome]:
    """Ingest the finished runs of ``vid`` a killed ``run`` left unrecorded (one transition)."""
    records = runfiles.unrecorded(RunRecords(ctx).dir)
    runs = [
        (Path(str(r["file"])), f)
        for r in records
        if (f := _finished_from(r)) is not None and f.spec.measurement.version == vid
    ]
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
                    cwd=cwd,
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
                "measurement": _measurement_record(spec.measurement),
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
                notify("end", spec, Outcome(spec, code, None, bool(reason) or code != 0, seconds))
    outcomes = record_runs(ctx, [run for run, _ in finished])
    for _, record in finished:
        record.unlink(missing_ok=True)
    return outcomes


def outputs_in(ctx: Context, folders: list[Path]) -> tuple[str, ...]:
    """The output folders (these, and the configured one) that lie in the work tree, as
    work-tree paths: what runs wrote there does not make the code they measured dirty."""
    top = ctx.store.require_workdir().resolve()
    found = set()
    for folder in [*folders, output_dir(ctx, None)]:
        try:
            found.add(folder.resolve().relative_to(top).as_posix())
        except ValueError:
            continue  # outside the work tree (the default, .git/ledger/runs/out)
    return tuple(sorted(p for p in found if p != "."))


def determinism_path(dir_: str, vid: str, gate: str, slot: int | None = None) -> str:
    tail = f"-r{slot}" if slot is not None else ""
    return f"{dir_}/determinism/{vid}-{gate}{tail}.json"


def store_determinism(
    ctx: Context,
    vid: str,
    gate: str,
    report: dict[str, object],
    *,
    remeasure: str | None = None,
    slot: int | None = None,
) -> str:
    """Commit the DETERMINISM outcome (per seed: spread, first divergent field) with the
    results it judged, so show and the reports can say it later. A re-measurement's
    outcome is a file of its own (named by its first slot) beside the original's."""
    from ledger.core.model.documents import dump_json

    path = determinism_path(ctx.dir, vid, gate, slot)
    verdict = "PASS" if report.get("pass") else "FAIL"
    extra = {"remeasure": remeasure} if remeasure is not None else {}
    data = dump_json({"version": vid, "gate": gate, **extra, **report}).encode()

    def build(snap: Snapshot) -> Transition:
        return Transition(
            kind="record",
            step=vid,
            subject=f"docs(ledger): {vid} determinism {gate} {verdict}",
            writes={path: data},
        )

    commit_id, _ = ctx.store.transact(build)
    return commit_id
