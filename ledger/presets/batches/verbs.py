"""The batches loop's verbs, declared here with the loop that owns them.

``ledger.cli.app`` adds :data:`COMMANDS` to its root group. Each wrapper only
parses and calls :mod:`ledger.presets.batches.commands`, imported inside it, so
``git ledger --help`` never pays for pygit2 or pydantic.
"""

from __future__ import annotations

from pathlib import Path

import click

from ledger.core.clikit import Ctx, declare, json_option, pass_ctx


@click.group()
def weights() -> None:
    """Batch weights: exactly one revision (or a copy) per closed batch."""


@declare(
    "write",
    loop="batches",
    args={"file": "A {target: {key: value}} JSON file inside the repository: batch-0's weights."},
)
@weights.command("init")
@click.argument("file", type=click.Path(path_type=Path))
@click.option("--frozen", multiple=True, help="A target that may never be revised (repeatable).")
@click.option("--run-id", default=None, help="The loop's own run id (default: generated).")
@json_option
@pass_ctx
def weights_init(
    obj: Ctx, file: Path, frozen: tuple[str, ...], run_id: str | None, as_json: bool
) -> int:
    """Commit batch-0 from a {target: {key: value}} JSON file; freezes the [batches] thresholds."""
    from ledger.presets.batches import commands as command

    return command.weights_init(obj.cwd, file, frozen, run_id, as_json)


@declare(
    "write",
    loop="batches",
    args={
        "target": "The weights' target (top-level key) to revise.",
        "key": "The key inside the target to revise.",
        "reason": "Why this one weight changes (one line).",
    },
)
@weights.command("revise")
@click.option("--target", required=True)
@click.option("--key", required=True)
@click.option("--new", "new", required=True, help="The new value (JSON when it parses).")
@click.option("--reason", required=True)
@click.option("--string", "as_string", is_flag=True, help="Take --new as a string, never JSON.")
@click.option(
    "--replace-container", is_flag=True, help="Allow replacing an object or list with a scalar."
)
@click.option(
    "--allow-null", is_flag=True, help="Allow --new null (JSON null) to clear the weight."
)
@click.option("--topic", default=None, help="The topic of the closed batch this revision answers.")
@click.option(
    "--signal",
    default=None,
    help="The signal it answers: loss-1, loss-2-middle, loss-2-endpoints or whole-card.",
)
@json_option
@pass_ctx
def weights_revise(
    obj: Ctx,
    target: str,
    key: str,
    new: str,
    reason: str,
    as_string: bool,
    replace_container: bool,
    allow_null: bool,
    topic: str | None,
    signal: str | None,
    as_json: bool,
) -> int:
    """Revise exactly one weight of the closed batch; opens the next batch.

    --key is a key of the target exactly (keys may hold dots), else a dotted path."""
    from ledger.presets.batches import commands as command

    return command.weights_change(
        obj.cwd,
        copy=False,
        target=target,
        key=key,
        new=new,
        reason=reason,
        as_string=as_string,
        replace_container=replace_container,
        allow_null=allow_null,
        topic=topic,
        signal=signal,
        as_json=as_json,
    )


@declare("write", loop="batches")
@weights.command("copy")
@json_option
@pass_ctx
def weights_copy(obj: Ctx, as_json: bool) -> int:
    """Carry the closed batch forward byte-identical; opens the next batch."""
    from ledger.presets.batches import commands as command

    return command.weights_change(
        obj.cwd, copy=True, target=None, key=None, new=None, reason=None, as_json=as_json
    )


@declare("write", loop="batches")
@weights.command("vocabulary")
@click.option("--reason", required=True, help="Why the forbidden vocabulary changes.")
@json_option
@pass_ctx
def weights_vocabulary(obj: Ctx, reason: str, as_json: bool) -> int:
    """Freeze the committed forbidden vocabulary anew (the leak audit's words)."""
    from ledger.presets.batches import commands as command

    return command.weights_vocabulary(obj.cwd, reason, as_json)


@click.group()
def gate() -> None:
    """Gate arithmetic with thresholds from ledger.toml only (exit 0 pass, 1 fail)."""


@declare(
    "write",
    loop="batches",
    args={
        "fidelity_rate": "The topic's fidelity rate, 0 to 1 (passes at >= fidelity_min).",
        "mono": "Whether the topic's scores are monotonic:",
        "endpoint": "Whether the topic's endpoints hold:",
    },
)
@gate.command("topic")
@click.option("--fidelity-rate", type=float, required=True)
@click.option("--mono", required=True, help="true|false")
@click.option("--endpoint", required=True, help="true|false")
@click.option("--topic", default=None, help="The topic's id (default: the next number).")
@click.option(
    "--record/--no-record",
    default=None,
    help="Record the result for the open batch (a commit); the default when --topic is given.",
)
@click.option(
    "--remeasure",
    is_flag=True,
    help="Measure a recorded (or withdrawn) topic again; needs --topic and --reason.",
)
@click.option("--reason", default=None, help="Why the topic is measured again (--remeasure).")
@click.option(
    "--rigor-floor",
    default=None,
    help="true|false: the rigor-floor flag (an alarm, not in the AND).",
)
@click.option(
    "--confound",
    type=click.Choice(["flat", "not-flat"]),
    default=None,
    help="The z⊥C confound check; not-flat voids the topic's loss-2.",
)
@json_option
@pass_ctx
def gate_topic(
    obj: Ctx,
    fidelity_rate: float,
    mono: str,
    endpoint: str,
    topic: str | None,
    record: bool | None,
    remeasure: bool,
    reason: str | None,
    rigor_floor: str | None,
    confound: str | None,
    as_json: bool,
) -> int:
    """Per-topic gate: fidelity_rate >= fidelity_min AND monotonicity AND endpoints.

    Naming the topic records its result, so the loop knows which topics are done. A
    recorded result changes only by --remeasure with a --reason.
    """
    from ledger.presets.batches import commands as command

    chosen = record if record is not None else topic is not None or remeasure
    return command.gate_topic(
        obj.cwd,
        fidelity_rate,
        mono,
        endpoint,
        topic,
        chosen,
        as_json,
        remeasure=remeasure,
        reason=reason,
        rigor_floor=rigor_floor,
        confound=confound,
    )


@declare("write", loop="batches")
@gate.command("batch")
@click.option(
    "--flags",
    default=None,
    help="One true/false per topic, comma-separated (with --record: read from the topics).",
)
@click.option(
    "--record",
    is_flag=True,
    help="Close the current batch from its recorded topics (a commit).",
)
@json_option
@pass_ctx
def gate_batch(obj: Ctx, flags: str | None, record: bool, as_json: bool) -> int:
    """Batch gate: pass ratio >= batch_ratio_min AND passed topics >= hard_line.

    With --record the flags are the recorded topics' results, every topic recorded."""
    from ledger.presets.batches import commands as command

    return command.gate_batch(obj.cwd, flags, record, as_json)


@declare("destructive", loop="batches")
@gate.command("converged")
@click.option(
    "--recent", default=None, help="Ratios to judge (default: the recorded batch ratios)."
)
@click.option("--record", is_flag=True, help="On a pass, commit the converged state (terminal).")
@json_option
@pass_ctx
def gate_converged(obj: Ctx, recent: str | None, record: bool, as_json: bool) -> int:
    """Converged when the last converge_k batch ratios are all >= batch_ratio_min."""
    from ledger.presets.batches import commands as command

    return command.gate_converged(obj.cwd, recent, record, as_json)


@click.group()
def trace() -> None:
    """Trace events (they ride along with the next batch commit)."""


@declare(
    "write",
    loop="batches",
    args={"event": "The trace event's name, e.g. topic-done."},
    # '-' reads standard input, which over MCP is the protocol's own stream.
    hidden=frozenset({"events"}),
)
@trace.command("emit")
@click.argument("event", required=False)
@click.option("--field", "fields", multiple=True, metavar="K=V", help="A field (repeatable).")
@click.option(
    "--events",
    metavar="FILE",
    help='Many events at once: JSON lines {"event": NAME, "fields": {...}} from FILE, '
    "or '-' for standard input; each gets its own seq, all are written together.",
)
@json_option
@pass_ctx
def trace_emit(
    obj: Ctx, event: str | None, fields: tuple[str, ...], events: str | None, as_json: bool
) -> int:
    """Append trace events, each with the next sequence number."""
    from ledger.presets.batches import commands as command

    return command.trace_emit(obj.cwd, event, fields, as_json, events)


@declare("read", loop="batches")
@click.command()
@json_option
@pass_ctx
def resume(obj: Ctx, as_json: bool) -> int:
    """Where the batches loop stands, rebuilt from disk alone."""
    from ledger.presets.batches import commands as command

    return command.resume(obj.cwd, as_json)


COMMANDS: tuple[click.Command, ...] = (weights, gate, trace, resume)
