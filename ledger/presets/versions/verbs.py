"""The versions loop's verbs, declared here with the loop that owns them.

``ledger.cli.app`` adds :data:`COMMANDS` to its root group. Each wrapper only
parses and calls one command module of this package, imported inside it, so
``git ledger --help`` never pays for pygit2, pydantic or scipy. The matrix
group is in :mod:`ledger.presets.versions.matrixverbs`, the verbs that read one entry or
the reflection triggers in :mod:`ledger.presets.versions.readverbs`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from ledger.core.clikit import Ctx, KeepsArgs, args_without, declare, json_option, pass_ctx
from ledger.presets.versions.matrixverbs import matrix
from ledger.presets.versions.readverbs import baseline, show, triggers


# It pushes the registration and its witness when [sync] push_on_register says so.
@declare("write", loop="versions", requires=("entries-committed",), open_world=True)
@click.command()
@click.argument("step_id", required=False)
@click.option("--bet", required=True, help="The one bet, in one sentence.")
@click.option("--gate", required=True, help="The one targeted gate (a table in ledger.toml).")
@click.option(
    "--files", required=True, help="The plan: files the bet will change, comma-separated."
)
@click.option("--falsifier", required=True, help="What result would refute the bet.")
@click.option("--subsystem", default=None, help="The subsystem the bet patches.")
@click.option(
    "--parent", default=None, help="The version this one builds on (default: the latest)."
)
@click.option("--noop-gates", default=None, help="Gates expected unaffected, comma-separated.")
@click.option(
    "--effect", type=float, default=None, help="The effect the bet predicts (metric units)."
)
@click.option("--cites", default=None, help="The reflection this registration answers.")
@click.option("--force", default=None, metavar="REASON", help="Register below the MDE; recorded.")
@click.option(
    "--ships",
    default=None,
    metavar="IDS",
    help="Queued observability deltas this version ships (e.g. OBS-V6-2), comma-separated; "
    "the reflection's ship-now deltas ride along anyway.",
)
@json_option
@click.pass_context
def register(ctx: click.Context, /, **options: Any) -> int:
    """Pre-register a version (the hypothesis, before any code) in one commit."""
    from ledger.core import clikit
    from ledger.presets.versions import register as command

    # Each option is named once, above; RegisterOptions gives them their types.
    return command.run(
        ctx.obj.cwd, command.RegisterOptions(**options, requires=clikit.requires(ctx))
    )


def _home(cwd: Path, step_id: str) -> Path:
    """Where ``record`` and ``run`` of ``step_id`` act (:func:`ledger.presets.versions.matrix.cells.home`). The
    matrix package (its adjudication, statistics, templates) is imported for a cell
    only: for any other id it is a fifth of a ``record`` spent to return ``cwd``."""
    from ledger.core.repobase import cell_of

    if not cell_of(step_id):
        return cwd
    from ledger.presets.versions.matrix.cells import home

    return home(cwd, step_id)


@declare(
    "write",
    loop="versions",
    note="FILE is a path inside the repository; or pass the results inline as result.",
)
@click.command()
@click.argument("step_id")
@click.argument("file", type=click.Path(path_type=Path), required=False)
@click.option(
    "--result",
    "inline",
    default=None,
    metavar="JSON",
    help="The results as one JSON object, instead of FILE (nothing is written but the entry).",
)
@click.option("--gate", required=True, help="The gate these results are for.")
@click.option("--seed", default=None, help="The seed of this run.")
@click.option("--window", default=None, help="The walk-forward window of this run.")
@click.option("--window-start", default=None, help="Window start date (ISO), for effective N.")
@click.option("--window-end", default=None, help="Window end date (ISO), for effective N.")
@click.option(
    "--condition",
    "conditions",
    multiple=True,
    metavar="KEY=VALUE",
    help="A run condition other than seed/window (repeatable).",
)
@click.option("--wall-time", type=float, default=None, help="Wall time of the run, in seconds.")
@click.option("--replace", default=None, metavar="REASON", help="Replace an existing result.")
@click.option(
    "--remeasure",
    default=None,
    metavar="REASON",
    help="Re-measure a concluded version (never changes its verdict; feeds the reflection).",
)
@json_option
@pass_ctx
def record(
    obj: Ctx,
    step_id: str,
    file: Path | None,
    inline: str | None,
    gate: str,
    seed: str | None,
    window: str | None,
    window_start: str | None,
    window_end: str | None,
    conditions: tuple[str, ...],
    wall_time: float | None,
    replace: str | None,
    remeasure: str | None,
    as_json: bool,
) -> int:
    """Ingest one results JSON as its own entry, with provenance."""
    from ledger.presets.versions import record as command
    from ledger.presets.versions.ingest import Measurement

    measurement = Measurement(
        version=step_id,
        gate=gate,
        seed=seed,
        window=window,
        window_start=window_start,
        window_end=window_end,
        conditions=command.parse_conditions(conditions),
        wall_time_s=wall_time,
        replace=replace,
        remeasure=remeasure,
    )
    return command.run(_home(obj.cwd, step_id), step_id, file, measurement, as_json, inline=inline)


@declare(
    "destructive",
    loop="versions",
    args={
        "verdict": "The verdict: confirmed, refuted or inconclusive (the numbers must allow it)."
    },
)
@click.command()
@click.argument("step_id")
@click.option(
    "--verdict", default=None, type=click.Choice(["confirmed", "refuted", "inconclusive"])
)
@click.option("--next", "next_text", default=None, help="What the loop does next.")
@click.option("--note", default=None, help="A note kept with the conclusion.")
@click.option(
    "--override",
    default=None,
    metavar="REASON",
    help="Conclude against the statistics; recorded and shown forever.",
)
@click.option(
    "--dry-run",
    is_flag=True,
    help="Print, per gate, the verdicts the numbers allow; write nothing.",
)
@click.option("--wait", is_flag=True, help="Wait for runs of this version still running.")
@json_option
@pass_ctx
def conclude(
    obj: Ctx,
    step_id: str,
    verdict: str | None,
    next_text: str | None,
    note: str | None,
    override: str | None,
    dry_run: bool,
    wait: bool,
    as_json: bool,
) -> int:
    """Conclude a version: verdict, statistics, next steps, baseline update; one commit."""
    from ledger.presets.versions import conclude as command

    if dry_run:
        return command.dry_run(obj.cwd, step_id, as_json)
    if verdict is None or next_text is None:
        from ledger.core.errors import BadInput

        raise BadInput(
            "--verdict and --next are required", "or --dry-run to see what the numbers allow"
        )
    return command.run(
        obj.cwd,
        step_id,
        verdict=verdict,
        next_text=next_text,
        note=note,
        override=override,
        as_json=as_json,
        wait=wait,
    )


@declare(
    "write",
    loop="versions",
    args={"after": "The version the reflection follows (default: the latest concluded)."},
)
@click.command()
@click.argument("after", required=False)
@click.option("--commit", is_flag=True, help="Commit the filled reflection (checks every section).")
@click.option(
    "--refresh",
    is_flag=True,
    help="Rebuild the evidence of an uncommitted reflection (what you wrote is kept).",
)
@json_option
@pass_ctx
def reflect(obj: Ctx, after: str | None, commit: bool, as_json: bool, refresh: bool) -> int:
    """Write REFLECTION_<ID>.md with its required sections (default: after the latest version)."""
    from ledger.presets.versions import reflect as command

    return command.run_reflect(obj.cwd, after, commit, as_json, refresh)


@declare(
    "write",
    loop="versions",
    args=dict(action="declare: park registration at a phase transition; resume: lift it."),
)
@click.command()
@click.argument("action", type=click.Choice(["declare", "resume"]))
@click.option("--reason", default=None, help="Why the loop is parked.")
@click.option("--exhausted", multiple=True, help="A direction that is exhausted (repeatable).")
@click.option(
    "--resume-criterion",
    "resume_criteria",
    multiple=True,
    help="What must hold before registration resumes (repeatable).",
)
@click.option(
    "--force",
    default=None,
    metavar="REASON",
    help="Declare (or resume) although a condition (criterion) does not hold; recorded.",
)
@click.option("--criterion", default=None, help="resume: the recorded criterion met (text or N).")
@click.option("--evidence", default=None, help="resume: the evidence that it is met.")
@json_option
@pass_ctx
def phase(
    obj: Ctx,
    action: str,
    reason: str | None,
    exhausted: tuple[str, ...],
    resume_criteria: tuple[str, ...],
    force: str | None,
    criterion: str | None,
    evidence: str | None,
    as_json: bool,
) -> int:
    """Declare a phase transition (parks registration) or resume; writes CAMPAIGN_STATUS.md."""
    from ledger.presets.versions import phase as command

    return command.run(
        obj.cwd,
        action,
        reason=reason,
        exhausted=exhausted,
        resume_criteria=resume_criteria,
        as_json=as_json,
        force=force,
        criterion=criterion,
        evidence=evidence,
    )


@declare(
    "read",
    loop="versions",
    hidden=frozenset({"fmt_name"}),
    args={
        "a": "The version compared against, e.g. V11.",
        "b": "The version whose deltas are shown, e.g. V12.",
    },
)
@click.command()
@click.argument("a")
@click.argument("b")
@click.option("--format", "fmt_name", type=click.Choice(["table", "md", "json"]), default="table")
@json_option
@pass_ctx
def diff(obj: Ctx, a: str, b: str, fmt_name: str, as_json: bool) -> int:
    """Gate deltas of version B against version A."""
    from ledger.presets.versions import compare as command

    return command.run_diff(obj.cwd, a, b, fmt_name, as_json)


@declare("read", loop="versions", hidden=frozenset({"as_md"}))
@click.command()
@click.option(
    "--gate", default=None, help="The gate whose metrics are shown (default: the latest version's)."
)
@click.option(
    "--verdict",
    default=None,
    type=click.Choice(["confirmed", "refuted", "inconclusive", "open", "void"]),
    help="Only the versions in this state.",
)
@click.option(
    "--branch",
    default=None,
    help="Only the versions registered on BRANCH since the default branch.",
)
@click.option(
    "--sort",
    "sort_by",
    default=None,
    help="Sort by a column: status, a metric (best first) or a parameter.",
)
@click.option("--md", "as_md", is_flag=True, help="A GitHub markdown table (for a pull request).")
@json_option
@pass_ctx
def compare(
    obj: Ctx,
    gate: str | None,
    verdict: str | None,
    branch: str | None,
    sort_by: str | None,
    as_md: bool,
    as_json: bool,
) -> int:
    """Versions side by side: the parameters that differ against every metric of a gate."""
    from ledger.presets.versions import compare_table as command

    filters = command.Filters(gate=gate, verdict=verdict, branch=branch, sort=sort_by)
    return command.run(obj.cwd, filters, "json" if as_json else "md" if as_md else "table")


@declare(
    "write",
    loop="versions",
    hidden=frozenset({"detach"}),
    fixed=("--detach",),
    note="Always detached: returns at once; then call 'wait' and 'status'.",
    # It starts the gate's configured command: the one verb that reaches past the ledger.
    open_world=True,
)
@click.command("run", cls=KeepsArgs)
@click.argument("step_id")
@click.option(
    "--gate",
    default=None,
    help="The gate whose command to run (required unless --record-finished).",
)
@click.option("--seeds", default=None, help="Comma-separated seeds, e.g. 1,2,3,42.")
@click.option(
    "--windows",
    default=None,
    help="Comma-separated walk-forward windows, each ID or ID=START..END (ISO dates; "
    "a bare ID takes its dates from the gate's windows_manifest).",
)
@click.option(
    "--replicates",
    type=click.IntRange(min=1),
    default=1,
    help="Run each seed N times and check determinism.",
)
@click.option("--jobs", type=click.IntRange(min=1), default=1, help="Runs at a time.")
@click.option("--detach", is_flag=True, help="Return at once; see 'status' and 'wait'.")
@click.option(
    "--out-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Where run artifacts go (default: $LEDGER_OUTPUT_DIR, [run] output_dir, .git/ledger).",
)
@click.option(
    "--replace", default=None, metavar="REASON", help="Run seeds that already have results."
)
@click.option(
    "--record-finished",
    is_flag=True,
    help="Record the runs that finished under a run that was killed (see 'doctor').",
)
@click.option(
    "--remeasure",
    default=None,
    metavar="REASON",
    help="Re-measure a concluded version (never changes its verdict; feeds the reflection).",
)
@json_option
@click.pass_context
def run_(ctx: click.Context, /, **options: Any) -> int:
    """Run the gate's configured command per seed, record results (DETERMINISM with --replicates)."""
    from ledger.presets.versions import run as command

    # Each option is named once, above; RunOptions gives them their types.
    return command.run(
        _home(ctx.obj.cwd, options["step_id"]),
        command.RunOptions(**options),
        rerun=args_without(ctx, "--detach"),
    )


# Every ledger lists it: the runs it waits for may be any loop's.
@declare("write", note="Blocks until the runs end or the timeout passes.", after_runs=True)
@click.command()
@click.option(
    "--timeout", type=float, default=None, help="Give up after this many seconds (exit 1)."
)
@json_option
@pass_ctx
def wait(obj: Ctx, timeout: float | None, as_json: bool) -> int:
    """Block until every run the ledger started has ended."""
    from ledger.presets.versions import run as command

    return command.wait(obj.cwd, timeout, as_json)


# Not a tool: a helper for a gate's own scripts, comparing two output files.
@declare("read", loop="versions", served=False)
@click.command("fields-diff")
@click.argument("a", type=click.Path(path_type=Path))
@click.argument("b", type=click.Path(path_type=Path))
@click.option(
    "--key",
    default=None,
    metavar="F1,F2,...",
    help="Align arrays of records by these fields before comparing (e.g. cycle,symbol,side).",
)
@json_option
def fields_diff(a: Path, b: Path, key: str | None, as_json: bool) -> int:
    """The first JSON field where two results files differ (floats also as IEEE-754 hex)."""
    from ledger.core.errors import BadInput
    from ledger.presets.versions import run as command

    fields = tuple(f.strip() for f in key.split(",")) if key is not None else ()
    if key is not None and not all(fields):
        raise BadInput(f"--key {key!r} has an empty field name", "e.g. --key cycle,symbol,side")
    return command.fields_diff(a, b, as_json, fields)


@declare("destructive", loop="versions")
@click.command()
@click.argument("step_id")
@click.option("--reason", required=True, help="Why its results can no longer count (one line).")
@json_option
@pass_ctx
def void(obj: Ctx, step_id: str, reason: str, as_json: bool) -> int:
    """Close a version whose results can no longer count; its id is never reused."""
    from ledger.presets.versions import void as command

    return command.run(obj.cwd, step_id, reason, as_json)


COMMANDS: tuple[click.Command, ...] = (
    show,
    register,
    record,
    conclude,
    triggers,
    reflect,
    phase,
    baseline,
    diff,
    compare,
    run_,
    wait,
    fields_diff,
    matrix,
    void,
)
