"""The campaign loop's verbs, declared here with the loop that owns them.

``ledger.cli.app`` adds :data:`COMMANDS` to its root group. Each wrapper only
parses and calls :mod:`ledger.presets.campaign.commands`, imported inside it, so
``git ledger --help`` never pays for pygit2 or pydantic.
"""

from __future__ import annotations

from pathlib import Path

import click

from ledger.core.clikit import Ctx, declare, json_option, pass_ctx


@declare(
    "write",
    loop="campaign",
    args={"file": "The contract file (default: contract.md in the ledger directory)."},
)
@click.command()
@click.argument("file", required=False, type=click.Path(path_type=Path))
@json_option
@pass_ctx
def contract(obj: Ctx, file: Path | None, as_json: bool) -> int:
    """Commit the campaign's contract (what is measured, what may change)."""
    from ledger.presets.campaign import commands as command

    return command.contract(obj.cwd, file, as_json)


@declare("write", loop="campaign")
@click.command()
@click.option(
    "--force", default=None, metavar="REASON", help="Take over a campaign armed by another owner."
)
@json_option
@pass_ctx
def arm(obj: Ctx, force: str | None, as_json: bool) -> int:
    """Arm the campaign for its owner (the first [campaign] owner_env variable set, else the
    git user); refused until the contract and a base are on record."""
    from ledger.presets.campaign import commands as command

    return command.arm(obj.cwd, force, as_json)


@declare("write", loop="campaign")
@click.command()
@click.option("--summary", required=True, help="What the campaign achieved, in a sentence.")
@json_option
@pass_ctx
def close(obj: Ctx, summary: str, as_json: bool) -> int:
    """Write the campaign's latest-report.md from its entries, ending 'status: closed'."""
    from ledger.presets.campaign import commands as command

    return command.close(obj.cwd, summary, as_json)


@click.group()
def candidate() -> None:
    """Campaign candidates: one commit measured against the contract."""


@declare(
    "write",
    loop="campaign",
    args={"verdict": "base (the first), promoted, rejected (reason required) or held."},
    open_world=True,  # --run starts the configured [campaign] run command
)
@candidate.command("record")
@click.option("--commit", "commit", required=True, help="The candidate commit.")
@click.option(
    "--verdict", required=True, type=click.Choice(["base", "promoted", "rejected", "held"])
)
@click.option("--reason", default=None, help="Why (required for a promotion or a rejection).")
@click.option("--speed", default=None, help="A number, or 'N/A: reason'.")
@click.option("--accel-mem-gb", default=None, help="A number, or 'N/A: reason'.")
@click.option("--peak-cpu-gb", default=None, help="A number, or 'N/A: reason'.")
@click.option("--correctness", default=None, help="A number, or 'N/A: reason'.")
@click.option(
    "--measure",
    "extra",
    multiple=True,
    metavar="NAME=VALUE",
    help="A measurement named in [campaign] measurements: a number or 'N/A: reason'.",
)
@click.option(
    "--notes", default=None, help="Notes (say why the less invasive one won, on equal gains)."
)
@click.option(
    "--kind",
    default=None,
    type=click.Choice(["setting", "dependency", "code"]),
    help="What the commit changes (default: read from its files; never less than they show).",
)
@click.option(
    "--larger-diff-reason",
    default=None,
    metavar="TEXT",
    help="Why this change must win over an equal-gain candidate with a smaller diff.",
)
@click.option(
    "--run",
    "run",
    is_flag=True,
    help="Measure by running [campaign] run at the commit (in a temporary worktree).",
)
@click.option(
    "--repeats",
    default=None,
    type=click.IntRange(min=1),
    help="Runs of --run (default [campaign] run_repeats).",
)
@json_option
@pass_ctx
def candidate_record(
    obj: Ctx,
    commit: str,
    verdict: str,
    reason: str | None,
    speed: str | None,
    accel_mem_gb: str | None,
    peak_cpu_gb: str | None,
    correctness: str | None,
    extra: tuple[str, ...],
    notes: str | None,
    kind: str | None,
    larger_diff_reason: str | None,
    run: bool,
    repeats: int | None,
    as_json: bool,
) -> int:
    """Record one candidate verdict with every measurement; regenerates the views.

    The four flags are aliases of --measure speed=..., --measure accel_mem_gb=..., etc.;
    --run measures instead: [campaign] run at the commit, with its provenance."""
    from ledger.presets.campaign import commands as command

    aliases: dict[str, str | None] = {
        "speed": speed,
        "accel_mem_gb": accel_mem_gb,
        "peak_cpu_gb": peak_cpu_gb,
        "correctness": correctness,
    }
    return command.candidate_record(
        obj.cwd,
        commit=commit,
        verdict=verdict,
        reason=reason,
        measures=extra,
        aliases=aliases,
        notes=notes,
        as_json=as_json,
        kind=kind,
        larger_diff_reason=larger_diff_reason,
        run=run,
        repeats=repeats,
    )


@click.group()
def benchmark() -> None:
    """The campaign's measuring script."""


@declare("destructive", loop="campaign")
@benchmark.command("adjust")
@click.option("--reason", required=True, help="How the measuring script changed.")
@json_option
@pass_ctx
def benchmark_adjust(obj: Ctx, reason: str, as_json: bool) -> int:
    """Invalidate every earlier number; finish then needs a fresh base and head."""
    from ledger.presets.campaign import commands as command

    return command.benchmark_adjust(obj.cwd, reason, as_json)


@click.group()
def mistake() -> None:
    """The campaign's mistakes log."""


@declare("write", loop="campaign", args={"text": "The mistake, in one line: what went wrong."})
@mistake.command("add")
@click.argument("text")
@click.option("--caught-by", required=True, help="What caught it.")
@click.option("--should-have-caught", required=True, help="What should have caught it earlier.")
@json_option
@pass_ctx
def mistake_add(obj: Ctx, text: str, caught_by: str, should_have_caught: str, as_json: bool) -> int:
    """Add one mistake to the log."""
    from ledger.presets.campaign import commands as command

    return command.mistake_add(obj.cwd, text, caught_by, should_have_caught, as_json)


@declare("destructive", loop="campaign")
@click.command()
@json_option
@pass_ctx
def finish(obj: Ctx, as_json: bool) -> int:
    """The campaign's loop condition: exit 0 only when nothing is outstanding (then disarm)."""
    from ledger.presets.campaign import commands as command

    return command.finish(obj.cwd, as_json)


@declare("destructive", loop="campaign")
@click.command()
@click.option(
    "--branch", default=None, help="Name of the delivery branch (default campaign/deliver)."
)
@json_option
@pass_ctx
def deliver(obj: Ctx, branch: str | None, as_json: bool) -> int:
    """One clean branch from the base with only the promoted commits and the closed report."""
    from ledger.presets.campaign import commands as command

    return command.deliver(obj.cwd, branch, as_json)


COMMANDS: tuple[click.Command, ...] = (
    contract,
    arm,
    close,
    candidate,
    benchmark,
    mistake,
    finish,
    deliver,
)
