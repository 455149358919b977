"""What every click verb shares: the context object, its decorator, the ``--json`` option,
and the declaration of each verb (:func:`declare`, read back with :func:`declared`).

The root group (``ledger.cli.app``) builds one :class:`Ctx` per invocation; the
generic verbs there and each preset's verbs (``ledger/presets/<name>/verbs.py``)
read it through :data:`pass_ctx`. It lives in the core because the presets may
not import the command line (``.importlinter``), while the command line adds
their verbs to its group. This module imports click and nothing heavier: the
verb modules that import it load on every ``git ledger`` call.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import click

from ledger.core.actions import Declared, Kind, Output

C = TypeVar("C", bound=click.Command)
# The attribute a declared click command carries its declaration in (click
# commands take extra attributes; the command object is the verb's one identity).
_DECLARED = "ledger_declared"


class Ctx:
    """One invocation's context: the directory the command runs in (after ``-C``)."""

    def __init__(self, cwd: Path) -> None:
        self.cwd = cwd


pass_ctx = click.make_pass_decorator(Ctx)
json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON (stable schema).")


class KeepsArgs(click.Command):
    """A command that remembers its arguments as typed (``run --detach`` re-runs them)."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        ctx.meta["ledger.args"] = list(args)
        return super().parse_args(ctx, args)


def args_without(ctx: click.Context, flag: str) -> list[str]:
    """The command's arguments as typed (see :class:`KeepsArgs`), less the flag ``flag``.

    Only the flag goes: a value that reads like it (``--replace --detach``) and
    anything after ``--`` stay, so the command line means what it meant.
    """
    takes_value = {
        opt
        for param in ctx.command.params
        if isinstance(param, click.Option) and not param.is_flag and not param.count
        for opt in param.opts
    }
    out: list[str] = []
    value_next = False
    args: list[str] = ctx.meta.get("ledger.args", [])
    for i, word in enumerate(args):
        if word == "--" and not value_next:
            return out + args[i:]
        if word == flag and not value_next:
            continue
        out.append(word)
        value_next = not value_next and word in takes_value
    return out


def add_verbs(group: click.Group, verbs: tuple[click.Command, ...]) -> None:
    """Add a preset's verbs to ``group``; refuse a name already taken.

    click would let the later verb replace the earlier one without a word: two
    loops declaring the same verb is a bug in this program, found on import.
    """
    for verb in verbs:
        if verb.name is None or verb.name in group.commands:
            raise RuntimeError(f"verb {verb.name!r} is declared twice")
        group.add_command(verb)


class FiniteFloat(click.types.FloatParamType):
    """A float option that is a number: ``nan``, ``inf`` and ``1e400`` (which Python reads
    as infinity) are bad input, never a value written into an entry or a statistic."""

    name = "float"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        import math

        number = super().convert(value, param, ctx)
        if isinstance(number, float) and not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        return number


FINITE = FiniteFloat()


def declare(
    kind: Kind,
    *,
    loop: str | None = None,
    hidden: frozenset[str] = frozenset(),
    fixed: tuple[str, ...] = (),
    output: Output = "json",
    note: str = "",
    open_world: bool = False,
    served: bool = True,
    args: dict[str, str] | None = None,
    config_key: str | None = None,
    after_runs: bool = False,
    requires: tuple[str, ...] = (),
) -> Callable[[C], C]:
    """Declare the verb below (see :class:`~ledger.core.actions.Declared`); the topmost
    decorator, above ``@click.command`` or ``@group.command``.

    A group is not declared (its verbs are), and ``hidden`` and the flags in ``fixed``
    must be the command's own parameters: each mistake is a bug in this program,
    found on import.
    """
    declaration = Declared(
        kind,
        loop=loop,
        hidden=hidden,
        fixed=fixed,
        output=output,
        note=note,
        open_world=open_world,
        served=served,
        args=tuple(sorted((args or {}).items())),
        config_key=config_key,
        after_runs=after_runs,
        requires=requires,
    )

    def attach(command: C) -> C:
        if not isinstance(command, click.Command) or isinstance(command, click.Group):
            raise TypeError(f"declare() goes above a verb's @click.command, not on {command!r}")
        names = {p.name for p in command.params}
        unknown = hidden - names
        if unknown:
            raise RuntimeError(f"verb {command.name!r} hides no such option: {sorted(unknown)}")
        described = (set(args or {}) | ({config_key} if config_key else set())) - names
        if described:
            raise RuntimeError(
                f"verb {command.name!r} names no such parameter: {sorted(described)}"
            )
        flags = {opt for p in command.params for opt in p.opts}
        unknown_flags = [word for word in fixed if word.startswith("-") and word not in flags]
        if unknown_flags:
            raise RuntimeError(f"verb {command.name!r} fixes no such option: {unknown_flags}")
        from ledger.core.completion import COMPLETERS

        for param in command.params:
            if type(param.type) is click.types.FloatParamType:
                param.type = FINITE  # every numeric option of every verb, in one place
            # The ledger's names complete in every shell (ids, gates, cells, seeds).
            found = COMPLETERS.get(param.name or "")
            if found is not None and param._custom_shell_complete is None:
                param._custom_shell_complete = found
        setattr(command, _DECLARED, declaration)
        return command

    return attach


def declared(command: click.Command) -> Declared | None:
    """The declaration of ``command`` (None: undeclared, or a group)."""
    found = getattr(command, _DECLARED, None)
    return found if isinstance(found, Declared) else None


def requires(ctx: click.Context | None = None) -> tuple[str, ...]:
    """The machine preconditions the verb being run (``ctx``'s, default: click's current
    one) declared; its body checks them with :func:`ledger.core.machine.require` once its
    input is read (bad input comes first)."""
    found = declared((ctx or click.get_current_context()).command)
    return found.requires if found else ()


def verbs(
    group: click.Group, path: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], click.Command]]:
    """Every verb under ``group`` (its commands, and its groups' commands, at any depth)
    with the names that reach it (``("matrix", "new")``), in the group's order."""
    for name, command in group.commands.items():
        if isinstance(command, click.Group):
            yield from verbs(command, (*path, name))
        else:
            yield (*path, name), command
