"""Every verb is declared once, where it is defined; ``next``'s proposal has one shape."""

from __future__ import annotations

import ast
from pathlib import Path

import click
import pytest

from ledger.cli.app import cli
from ledger.core import actions as actions_module
from ledger.core.actions import Declared, proposal
from ledger.core.clikit import declare, declared, json_option, verbs
from ledger.core.loops import NAMES
from ledger.mcp.tools import available


def test_every_verb_of_the_app_is_declared() -> None:
    """A verb added without a declaration fails here by name (and is not served)."""
    found = list(verbs(cli))
    assert len(found) > 40, found  # the walk reaches the groups' verbs
    assert ("matrix", "new") in {path for path, _ in found}
    undeclared = [" ".join(path) for path, command in found if declared(command) is None]
    assert undeclared == []


def test_a_verb_of_one_loop_is_declared_in_that_loops_package() -> None:
    for path, command in verbs(cli):
        declaration = declared(command)
        assert declaration is not None
        if declaration.loop is None:
            continue
        assert declaration.loop in NAMES, path
        assert command.callback is not None
        assert command.callback.__module__.startswith(f"ledger.presets.{declaration.loop}."), path


def test_verbs_not_served_are_the_ones_an_agent_has_no_use_for() -> None:
    """The server itself, the hooks git runs, a person's steps (sync, plot, demo)."""
    unserved = {
        " ".join(path)
        for path, command in verbs(cli)
        if (declaration := declared(command)) is not None and not declaration.served
    }
    assert unserved == {
        "mcp",
        "demo",
        "hooks install",
        "hooks uninstall",
        "hooks run",
        "plot",
        "sync",
        "merge-driver",
        "help",
        "fields-diff",
    }


def test_the_mcp_tools_module_names_no_verb_and_no_loop() -> None:
    """The tool list is walked off the app: no string in ledger/mcp/tools.py is a
    served verb's name or a loop's (the hand-written table it replaced named them all)."""
    names = {word for spec, _ in available(cli) for word in spec.command} | set(NAMES)
    assert len(names) > 40
    module = Path(__file__).resolve().parent.parent / "ledger" / "mcp" / "tools.py"
    strings = {
        node.value
        for node in ast.walk(ast.parse(module.read_text()))
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
    }
    assert sorted(strings & names) == []


def test_a_declaration_goes_on_a_verb_and_hides_or_fixes_only_its_own_options() -> None:
    @declare("read", hidden=frozenset({"as_json"}))
    @click.command()
    @json_option
    def fine(as_json: bool) -> None:
        """A verb."""

    assert declared(fine) == Declared("read", hidden=frozenset({"as_json"}))

    with pytest.raises(RuntimeError, match="'odd' hides no such option: \\['fmt'\\]"):

        @declare("read", hidden=frozenset({"fmt"}))
        @click.command()
        def odd() -> None:
            """A verb without --format."""

    with pytest.raises(RuntimeError, match="'odd-too' fixes no such option: \\['--detach'\\]"):

        @declare("write", fixed=("--detach",))
        @click.command()
        def odd_too() -> None:
            """A verb without --detach."""

    with pytest.raises(TypeError, match="not on"):

        @declare("read")
        @click.group()
        def group() -> None:
            """A group: its verbs are declared, not it."""

    with pytest.raises(TypeError, match="not on"):
        declare("read")(lambda: None)  # type: ignore[type-var]
    assert declared(click.Command("plain")) is None


def test_every_step_next_proposes_is_built_by_the_one_builder() -> None:
    """No module builds a step of ``next`` by hand: a dict literal with an ``"action"``
    key and a ``"command"`` key is the builder's alone (ledger.core.actions), and the
    builder gives ``decide`` only when a person decides."""
    package = Path(actions_module.__file__).resolve().parents[1]
    builders = []
    for path in sorted(package.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Dict):
                keys = {k.value for k in node.keys if isinstance(k, ast.Constant)}
                if {"action", "command"} <= keys:
                    builders.append(f"{path.relative_to(package.parent)}")
    assert builders == ["ledger/core/actions.py"], builders  # exactly one, there
    args = ("register", "git ledger register V3", "V2 is concluded")
    decided = proposal(*args, decide="whether V2 counts")
    assert list(decided)[-1] == "decide" and "decide" not in proposal(*args)
