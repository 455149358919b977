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

import json
import os
import string
import subprocess
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from ledger import gitcli, runfiles
from ledger.context import Context
from ledger.errors import BadInput
from ledger.ingest import Measurement, build_failure, build_result, result_path
from ledger.model.ids import check_safe
from ledger.state import load_version
from ledger.store import Snapshot, Transition

PLACEHOLDERS = frozenset({"version", "gate", "seed", "window", "out", "replicate"})
PER_RUN = frozenset({"version", "seed", "window", "out", "replicate"})
OUTPUT_ENV = "LEDGER_OUTPUT_DIR"


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


def check_template(template: list[str]) -> None:
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
    if not any("out" in _fields(t) for t in template):
        raise BadInput(
            "ledger.toml: [run] command has no {out}", "the command must write its results to {out}"
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
    if override is not None:
        return override
    env = os.environ.get(OUTPUT_ENV)
    if env:
        return Path(env)
    if ctx.config.run.output_dir:
        configured = Path(ctx.config.run.output_dir).expanduser()
        return configured if configured.is_absolute() else ctx.store.require_workdir() / configured
    return ctx.store.ledger_state_dir / "runs" / "out"


def plan(
    ctx: Context,
    vid: str,
    gate: str,
    seeds: list[str],
    windows: list[str],
    replicates: int,
    out_dir: Path | None,
    replace: str | None,
) -> list[RunSpec]:
    template = ctx.config.gate(gate).command or ctx.config.run.command
    if template is None:
        raise BadInput(
            f"no command for gate '{gate}' in ledger.toml",
            f'add [gates.{gate}] command (or [run] command) = ["python3", "eval.py", "--seed", "{{seed}}", "--out", "{{out}}"]',
        )
    check_template(template)
    ctx.config.gate(gate)
    if bool(seeds) == bool(windows):
        raise BadInput("give --seeds or --windows (one of them)", "e.g. --seeds 1,2,3")
    if replicates < 1:
        raise BadInput("--replicates must be at least 1")
    # Record what ran: a fixed placeholder such as {gate} is a value, never a literal.
    conditions = conditions_of([t.replace("{gate}", gate) for t in template])
    root = output_dir(ctx, out_dir) / vid / gate
    snap = ctx.store.snapshot()
    specs = []
    for key in seeds or windows:
        check_safe(key, "seed" if seeds else "window")
        for rep in range(1, replicates + 1):
            m = Measurement(
                version=vid,
                gate=gate,
                seed=key if seeds else None,
                window=None if seeds else key,
                replicate=rep if replicates > 1 else None,
                conditions=conditions,
                replace=replace,
            )
            if snap.read(result_path(ctx.dir, m)) is not None and replace is None:
                raise BadInput(
                    f"{result_path(ctx.dir, m)} is already recorded",
                    "pass --replace REASON to run it again",
                )
            stem = ("seed-" + key if seeds else "window-" + key) + (
                f"-r{rep}" if replicates > 1 else ""
            )
            out = root / f"{stem}.json"
            values = {
                "version": vid,
                "gate": gate,
                "seed": key if seeds else "",
                "window": "" if seeds else key,
                "out": str(out),
                "replicate": str(rep),
            }
            argv = [token.format_map(values) for token in template]
            specs.append(RunSpec(m, argv, out, root / f"{stem}.log"))
    return specs


class RunRecords:
    """PID files under .git/ledger/runs/: written before a run is waited on, removed when reaped."""

    def __init__(self, ctx: Context) -> None:
        self.dir = ctx.store.ledger_state_dir / "runs"

    def write(self, name: str, data: dict[str, object]) -> Path:
        self.dir.mkdir(parents=True, exist_ok=True)
        path = self.dir / f"{name}.json"
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(data, sort_keys=True))
        os.replace(tmp, path)
        return path

    def all(self) -> list[dict[str, object]]:
        return runfiles.records(self.dir)


alive = runfiles.alive


def log_tail(path: Path, limit: int = 2000) -> str:
    try:
        data = path.read_bytes()
    except OSError:
        return ""
    return data[-limit:].decode("utf-8", errors="replace")


def _record(ctx: Context, spec: RunSpec, exit_code: int, seconds: float) -> tuple[str, bool, str]:
    """Commit the run's outcome; returns (path, failed, reason)."""
    m = replace(spec.measurement, wall_time_s=round(seconds, 3))
    dirty_check = gitcli.DirtyCheck(ctx.store.require_workdir(), ctx.dir)
    raw = spec.out.read_bytes() if exit_code == 0 and spec.out.is_file() else None
    reason = (
        ""
        if raw is not None
        else (f"exit code {exit_code}" if exit_code != 0 else f"no results file at {spec.out}")
    )
    failed = raw is None

    def build(snap: Snapshot) -> Transition:
        nonlocal failed, reason
        version = load_version(ctx.config, snap, m.version)
        if not failed and raw is not None:
            try:
                path, data = build_result(
                    ctx.config,
                    version,
                    m,
                    raw,
                    spec.out.name,
                    code_commit=snap.commit_id,
                    dirty=dirty_check.result(),
                    existing=snap.read(result_path(ctx.dir, m)),
                )
                key = f"seed={m.seed}" if m.seed is not None else f"window={m.window}"
                return Transition(
                    kind="record",
                    step=m.version,
                    subject=f"docs(ledger): {m.version} result {m.gate} {key} (run)",
                    writes={path: data},
                )
            except BadInput as exc:
                failed, reason = True, exc.message
        tail = log_tail(spec.log)
        if reason and not tail.endswith(reason):
            tail = f"{tail}\n[git-ledger] {reason}".strip()
        path, data = build_failure(
            ctx.config,
            version,
            m,
            exit_code=exit_code,
            log_tail=tail,
            code_commit=snap.commit_id,
            dirty=dirty_check.result(),
        )
        return Transition(
            kind="run-failed",
            step=m.version,
            subject=f"docs(ledger): {m.version} failed run {m.gate} ({reason})",
            writes={path: data},
        )

    _, transition = ctx.store.transact(build)
    return next(iter(transition.writes)), failed, reason


Notify = Callable[[str, RunSpec, "Outcome | None"], None]


def execute(
    ctx: Context, specs: list[RunSpec], jobs: int, notify: Notify | None = None
) -> list[Outcome]:
    """Run ``specs`` with at most ``jobs`` at a time; record each outcome as it ends."""
    records = RunRecords(ctx)
    pending = list(specs)
    running: dict[int, tuple[subprocess.Popen[bytes], RunSpec, float, Path]] = {}
    outcomes: list[Outcome] = []
    cwd = ctx.store.require_workdir()
    while pending or running:
        while pending and len(running) < max(jobs, 1):
            spec = pending.pop(0)
            spec.out.parent.mkdir(parents=True, exist_ok=True)
            spec.out.unlink(missing_ok=True)
            with open(spec.log, "wb") as log:
                proc = subprocess.Popen(
                    spec.argv,
                    cwd=cwd,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                )
            name = f"run-{uuid.uuid4().hex[:12]}"
            record = records.write(
                name,
                {
                    "pid": proc.pid,
                    "argv": spec.argv,
                    "step": spec.measurement.version,
                    "gate": spec.measurement.gate,
                    "label": spec.label,
                    "log": str(spec.log),
                    "out": str(spec.out),
                    "started": time.time(),
                    "ledger_pid": os.getpid(),
                },
            )
            running[proc.pid] = (proc, spec, time.perf_counter(), record)
            if notify:
                notify("start", spec, None)
        time.sleep(0.02)
        for pid in list(running):
            proc, spec, started, record = running[pid]
            code = proc.poll()
            if code is None:
                continue
            seconds = time.perf_counter() - started
            path, failed, reason = _record(ctx, spec, code, seconds)
            record.unlink(missing_ok=True)
            del running[pid]
            outcome = Outcome(spec, code, path, failed, seconds, reason)
            outcomes.append(outcome)
            if notify:
                notify("end", spec, outcome)
    return outcomes
