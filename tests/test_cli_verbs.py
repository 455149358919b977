"""Each loop's verbs are declared with the loop that owns them and added to the one app."""

from __future__ import annotations

import click
import pytest

from ledger.cli.app import cli
from ledger.core.clikit import add_verbs
from ledger.mcp.tools import available
from ledger.presets.batches import verbs as batches
from ledger.presets.campaign import verbs as campaign
from ledger.presets.versions import verbs as versions

TOOLS = [spec for spec, _ in available(cli)]
PRESET_VERBS = {"versions": versions, "campaign": campaign, "batches": batches}


def _declared_in(command: click.Command) -> str:
    callback = command.callback
    assert callback is not None, command.name
    return callback.__module__


def test_every_loops_verb_is_declared_in_that_loops_package() -> None:
    """A tool that only one loop lists runs a verb of that loop's package."""
    looped = [spec for spec in TOOLS if spec.loop is not None]
    assert {spec.loop for spec in looped} == set(PRESET_VERBS)
    for spec in looped:
        node: click.Command = cli
        for name in spec.command:
            assert isinstance(node, click.Group), spec.command
            node = node.commands[name]
        owner = f"ledger.presets.{spec.loop}."
        assert _declared_in(node).startswith(owner), (spec.command, _declared_in(node))


def test_the_app_holds_each_presets_verbs_and_nothing_of_theirs_is_left_in_the_cli() -> None:
    for name, module in PRESET_VERBS.items():
        for verb in module.COMMANDS:
            assert verb.name is not None and cli.commands[verb.name] is verb, (name, verb.name)
            assert _declared_in(verb).startswith(f"ledger.presets.{name}."), verb.name
    declared = {verb.name for module in PRESET_VERBS.values() for verb in module.COMMANDS}
    for name, command in cli.commands.items():
        if name not in declared:
            assert _declared_in(command) == "ledger.cli.app", name


def test_a_verb_declared_twice_is_refused_on_import() -> None:
    """click would let the second ``gate`` replace the first without a word."""
    group = click.Group("git ledger")
    add_verbs(group, batches.COMMANDS)
    again = click.Command("gate", callback=lambda: None)
    with pytest.raises(RuntimeError, match="'gate' is declared twice"):
        add_verbs(group, (again,))
    assert group.commands["gate"] is batches.gate
