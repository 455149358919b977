"""The versions loop's verbs that read one entry (``show``), the reflection triggers and
the standing baseline, declared with the loop that owns them (``verbs.COMMANDS`` lists
them). ``show`` is served in every ledger, as it always was: it names what it cannot find.
"""

from __future__ import annotations

import click

from ledger.core.clikit import Ctx, declare, json_option, pass_ctx


@declare("read")
@click.command()
@click.argument("step_id")
@json_option
@pass_ctx
def show(obj: Ctx, step_id: str, as_json: bool) -> int:
    """One entry (a version or a reflection) with its results and statistics."""
    from ledger.presets.versions import show as command

    return command.run(obj.cwd, step_id, as_json)


@declare("read", loop="versions")
@click.command()
@json_option
@pass_ctx
def triggers(obj: Ctx, as_json: bool) -> int:
    """Which reflection triggers fire, with evidence (exit 1 if any)."""
    from ledger.presets.versions import reflect as command

    return command.run_triggers(obj.cwd, as_json)


@declare("read", loop="versions")
@click.command()
@json_option
@pass_ctx
def baseline(obj: Ctx, as_json: bool) -> int:
    """The standing-baseline table: best confirmed distribution per gate, regressions named."""
    from ledger.presets.versions import compare as command

    return command.run_baseline(obj.cwd, as_json)
