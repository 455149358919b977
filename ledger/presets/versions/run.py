"""``git ledger run``, ``wait`` and ``fields-diff``."""

from __future__ import annotations

import dataclasses
import json
import math
import os
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ledger.core import launch, output, runfiles
from ledger.core.context import Context, open_context
from ledger.core.errors import BadInput
from ledger.core.fieldsdiff import first_divergence, summarize
from ledger.core.model.documents import load_json
from ledger.core.model.ids import parse_version
from ledger.presets.versions import runner, runplan, runrecords, windows
from ledger.presets.versions.determinism import store_determinism
from ledger.presets.versions.ingest import extract_metrics
from ledger.presets.versions.register import split_list
from ledger.presets.versions.saynext import say_next


@dataclass(frozen=True)
class RunOptions:
    """``git ledger run``'s options, named once: the CLI builds this from what it parsed."""

    step_id: str
    gate: str | None = None
    seeds: str | None = None
    windows: str | None = None
    replicates: int = 1
    jobs: int = 1
    detach: bool = False
    out_dir: Path | None = None
    replace: str | None = None
    record_finished: bool = False
    remeasure: str | None = None
    as_json: bool = False


def run(cwd: Path, options: RunOptions, rerun: Sequence[str] = ()) -> int:
    """Run (or, with ``--detach``, start) the gate's command per seed.

    ``rerun`` is the command line ``run`` was given, as typed, less ``--detach``:
    what a detached worker runs, so every option reaches it.
    """
    vid, gate, replicates, as_json, remeasure = (
        options.step_id,
        options.gate,
        options.replicates,
        options.as_json,
        options.remeasure,
    )
    ctx = open_context(cwd)
    parse_version(vid, ctx.config.ledger.id_prefix)
    state = ctx.state()
    version = state.version(vid)
    if options.record_finished:  # of a version withdrawn since too (runner.record_finished)
        return _record_finished(ctx, vid, as_json)
    if version is None:
        raise state.no_version(vid, "register it first")
    # The command a run starts is the one on record, never an uncommitted edit of it.
    ctx.require_committed_config()
    if gate is None:
        raise BadInput("--gate is required", f"e.g. git ledger run {vid} --gate NAME --seeds 1,2,3")
    seeds = split_list(options.seeds)
    at = None
    if remeasure is not None and version.concluded:
        from ledger.presets.versions import owncode

        at = owncode.own_commit(ctx, state, vid)
    window_ids, dates = windows.parse(ctx, gate, options.windows)
    specs = runplan.plan(
        ctx,
        vid,
        gate,
        seeds,
        window_ids,
        replicates,
        options.out_dir,
        options.replace,
        remeasure=options.remeasure,
        command=None if at is None else owncode.frozen_command(ctx, state, vid, gate),
        dates=dates,
    )
    if options.detach:
        return _detach(ctx, vid, gate, seeds, list(rerun), as_json)
    jobs = options.jobs
    for spec in specs:
        if not as_json:
            output.say(f"{spec.label}: log {spec.log}")
    if at is None:
        outcomes = _execute_with_progress(ctx, specs, jobs, quiet=as_json)
    else:
        with owncode.checkout(ctx, at) as tree:
            own = [dataclasses.replace(s, cwd=tree, code_commit=at) for s in specs]
            outcomes = _execute_with_progress(ctx, own, jobs, quiet=as_json)
    determinism = None
    if replicates > 1:
        determinism = determinism_report(
            outcomes,
            lambda data: _mapped(ctx, gate, data),
            frozenset(ctx.config.run.volatile_fields),
        )
        slot = specs[0].measurement.replicate if remeasure is not None else None
        store_determinism(ctx, vid, gate, determinism, remeasure=remeasure, slot=slot)
    failed = [o for o in outcomes if o.failed]
    if as_json:
        output.emit_json(
            {
                "runs": [
                    {
                        "label": o.spec.label,
                        "exit_code": o.exit_code,
                        "recorded": o.recorded,
                        "failed": o.failed,
                        "reason": o.reason,
                        "seconds": round(o.seconds, 3),
                        "log": str(o.spec.log),
                    }
                    for o in outcomes
                ],
                "determinism": determinism,
            }
        )
    else:
        for outcome in outcomes:
            verb = "FAILED" if outcome.failed else "recorded"
            output.say(
                f"{verb}: {outcome.spec.label} -> {outcome.recorded}"
                + (f" ({outcome.reason}; log {outcome.spec.log})" if outcome.failed else "")
            )
        if determinism is not None:
            print_determinism(determinism)
        say_next(cwd)
    if determinism is not None and not determinism["pass"]:
        return 1
    return 1 if failed else 0


def _record_finished(ctx: Context, vid: str, as_json: bool) -> int:
    """Record the runs of ``vid`` that finished under a ``run`` killed before its commit."""
    outcomes = runner.record_finished(ctx, vid)
    if as_json:
        output.emit_json(
            {
                "recorded": [
                    {"label": o.spec.label, "path": o.recorded, "failed": o.failed}
                    for o in outcomes
                ]
            }
        )
    elif not outcomes:
        output.say(f"no finished runs of {vid} are waiting to be recorded")
    else:
        for o in outcomes:
            output.say(
                f"{'FAILED' if o.failed else 'recorded'}: {o.spec.label} -> {o.recorded}"
                + (f" ({o.reason})" if o.failed else "")
            )
    return 0


def _execute_with_progress(
    ctx: Context, specs: list[runplan.RunSpec], jobs: int, quiet: bool
) -> list[runner.Outcome]:
    """Run ``specs``; unless ``quiet``, say each run's metric values as it ends (before the
    run as a whole is recorded), under a progress bar with time left when stderr is a terminal."""
    if quiet:
        return runner.execute(ctx, specs, jobs)
    import sys

    if not sys.stderr.isatty():

        def plain(event: str, spec: runplan.RunSpec, outcome: runner.Outcome | None) -> None:
            if outcome is not None:
                output.say(finished_line(ctx, outcome))
                sys.stdout.flush()

        return runner.execute(ctx, specs, jobs, plain)
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    with Progress(
        TextColumn("[bold]runs"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("left"),
        TimeRemainingColumn(),
        TextColumn("{task.description}"),
        # The bar is on stderr; stdout is the command's output (a pipe keeps it plain).
        console=Console(stderr=True),
        redirect_stdout=False,
    ) as progress:
        task = progress.add_task("", total=len(specs))
        to_stdout = sys.stdout.isatty()

        def notify(event: str, spec: runplan.RunSpec, outcome: runner.Outcome | None) -> None:
            if outcome is None:
                progress.update(task, description=f"running {spec.label}")
                return
            line = finished_line(ctx, outcome)
            if to_stdout:
                progress.console.print(line, markup=False, highlight=False)
            else:
                output.say(line)
                sys.stdout.flush()
            progress.advance(task)

        return runner.execute(ctx, specs, jobs, notify)


def finished_line(ctx: Context, outcome: runner.Outcome) -> str:
    """One run that just ended, with the metric values it reported (recorded with the rest)."""
    spec = outcome.spec
    took = f"{outcome.seconds:.1f} s"
    if outcome.failed:
        why = outcome.reason or f"exit code {outcome.exit_code}"
        return f"finished: {spec.label}: FAILED ({why}; {took}; log {spec.log})"
    try:
        data = json.loads(spec.out.read_text())
    except (OSError, ValueError):
        return f"finished: {spec.label}: no results JSON at {spec.out} ({took})"
    values = _mapped(ctx, spec.measurement.gate, data)
    primary = ctx.config.gate(spec.measurement.gate).metric
    order = sorted(values, key=lambda k: (k != primary, k))  # the verdict's metric first
    shown = ", ".join(f"{k} = {values[k]:.6g}" for k in order) or "no mapped metrics"
    return f"finished: {spec.label}: {shown} ({took})"


def determinism_report(
    outcomes: list[runner.Outcome],
    metrics_of: Callable[[Any], dict[str, float]],
    volatile: frozenset[str],
) -> dict[str, Any]:
    """Per seed: do the replicates agree? Spread per mapped metric, first divergent field.

    Volatile fields ([run] volatile_fields, e.g. a wall time) never make a FAIL.
    """
    groups: dict[str, list[runner.Outcome]] = {}
    for o in outcomes:
        m = o.spec.measurement
        groups.setdefault(str(m.seed if m.seed is not None else m.window), []).append(o)
    seeds = []
    all_pass = True
    for key, group in sorted(groups.items()):
        ok = [o for o in group if not o.failed]
        datas = [json.loads(o.spec.out.read_text()) for o in ok]
        recorded = [metrics_of(d) for d in datas]
        spread: dict[str, float] = {}
        for metric in sorted({k for r in recorded for k in r}):
            values = [r[metric] for r in recorded if metric in r]
            spread[metric] = max(values) - min(values)
        divergence = None
        for other in datas[1:]:
            found = first_divergence(datas[0], other, ignore=volatile)
            if found:
                divergence = found.describe()
                break
        passed = len(ok) == len(group) and divergence is None
        all_pass = all_pass and passed
        seeds.append(
            {
                "seed": key,
                "replicates": len(group),
                "pass": passed,
                "spread": spread,
                "first_divergence": divergence,
            }
        )
    return {"pass": all_pass, "seeds": seeds}


def _mapped(ctx: Context, gate: str, data: Any) -> dict[str, float]:
    """The metrics the ledger records from ``data`` (the gate's JSON paths)."""
    try:
        return extract_metrics(ctx.config, gate, data, "results")
    except BadInput:
        return {}


def print_determinism(report: dict[str, Any]) -> None:
    output.say(f"DETERMINISM: {'PASS' if report['pass'] else 'FAIL'}")
    for item in report["seeds"]:
        spread = ", ".join(f"{k} spread {v:.6g}" for k, v in item["spread"].items()) or "no metrics"
        line = f"  seed {item['seed']}: {'PASS' if item['pass'] else 'FAIL'} ({spread})"
        if item["first_divergence"]:
            line += f"; first divergent field {item['first_divergence']}"
        output.say(line)


def _detach(
    ctx: Context, vid: str, gate: str, seeds: list[str], args: list[str], as_json: bool
) -> int:
    """Start the same run in a background worker and return at once.

    The worker gets the same command line without ``--detach``, in the same
    directory, so a relative ``--out-dir`` or any option added later means
    there what it means here.
    """
    # The installed program, isolated: ``python -m ledger`` would import a
    # ledger/ package from the repository.
    args = launch.argv("run", *args, *([] if "--json" in args else ["--json"]))
    records = runrecords.RunRecords(ctx)
    records.dir.mkdir(parents=True, exist_ok=True)
    name = f"batch-{os.getpid()}-{int(time.time() * 1000)}"
    log = records.dir / f"{name}.log"
    with open(log, "wb") as handle:
        proc = subprocess.Popen(
            args,
            cwd=Path.cwd(),
            stdout=handle,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    records.write(
        name,
        {
            "pid": proc.pid,
            "argv": args,
            "step": vid,
            "gate": gate,
            "seeds": seeds,
            "label": f"{vid} {gate} (detached)",
            "log": str(log),
            "batch": True,
            "started": time.time(),
        },
    )
    if as_json:
        output.emit_json({"detached": True, "pid": proc.pid, "log": str(log)})
    else:
        output.say(f"running in the background (pid {proc.pid}); log {log}")
        output.say("see 'git ledger status', or block with 'git ledger wait'")
    return 0


def wait(cwd: Path, timeout: float | None, as_json: bool) -> int:
    """Block until every run the ledger recorded has ended."""
    ctx = open_context(cwd)
    records = runrecords.RunRecords(ctx)
    deadline = time.monotonic() + timeout if timeout else math.inf
    while True:
        live = [r for r in records.all() if runrecords.alive(r)]
        for r in records.all():
            if r.get("batch") and not runrecords.alive(r):
                runfiles.retire(r)
        if not live:
            break
        if time.monotonic() > deadline:
            if as_json:
                output.emit_json({"done": False, "running": [str(r.get("label")) for r in live]})
            else:
                output.say(f"still running: {', '.join(str(r.get('label')) for r in live)}")
            return 1
        time.sleep(0.2)
    state = ctx.state()
    failed = [r.path for r in state.results if r.status == "failed"]
    if as_json:
        output.emit_json({"done": True, "failed": failed})
    else:
        output.say(
            "all runs have ended" + (f"; failed runs on record: {len(failed)}" if failed else "")
        )
    return 0


def fields_diff(a: Path, b: Path, as_json: bool, key: tuple[str, ...] = ()) -> int:
    datas = []
    for path in (a, b):
        if not path.is_file():
            raise BadInput(f"no such file: {path}")
        datas.append(load_json(path.read_bytes(), str(path), max_bytes=64 << 20))
    # Counted and listed, not only the first (issue 26): one drift or many tell apart.
    seen = summarize(datas[0], datas[1], key=key)
    found = seen.first[0] if seen.first else None
    if as_json:
        output.emit_json(
            {
                "identical": found is None,
                "first_divergence": None
                if found is None
                else {"path": found.path, "a": repr(found.left), "b": repr(found.right)},
                "divergent_fields": seen.fields,
                "divergent_rows": seen.rows,
                "divergences": [
                    {"path": d.path, "a": repr(d.left), "b": repr(d.right)} for d in seen.first
                ],
            }
        )
    else:
        output.say("identical" if found is None else f"first divergent field {found.describe()}")
        if found is not None:
            output.say(f"{seen.fields} divergent field(s) in {seen.rows} row(s); the first:")
            for d in seen.first:
                output.say(f"  {d.describe()}")
    return 0 if found is None else 1
