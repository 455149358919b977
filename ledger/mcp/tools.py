"""The MCP tools, derived from the click commands so the two cannot drift.

Each tool is one verb of the command line handed in, found by walking its click
group (a group's verb is named by the path of names that reaches it): every verb
declared ``served`` (:func:`ledger.core.clikit.declare`, where the verb is
defined) is a tool, with its declaration's kind, loop and note. No verb and no
loop is named here. A tool's input schema is built from the command's click
parameters (names, types, choices, required, repeatable, help) and a call is
turned back into the CLI's own argv, which the server runs through the CLI
itself. A tool therefore takes exactly the options the command takes, validates
them the same way and refuses what the command refuses. The only differences
are declared with the verb (options a tool leaves out or always passes) and
``--json``, which every JSON tool passes.

This module imports click and the core only, never the MCP SDK nor the command
line (it is handed the app), so the schema test runs without the extra.
"""

from __future__ import annotations

import json
import math
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click
from click.core import ParameterSource

from ledger.core.actions import ARGS, Declared, Kind, Output
from ledger.core.clikit import declared, verbs
from ledger.core.errors import BadInput


@dataclass(frozen=True)
class ToolSpec:
    """One tool: which command it runs and what its declaration says about it."""

    command: tuple[str, ...]
    declared: Declared

    @property
    def name(self) -> str:
        return "_".join(self.command).replace("-", "_")

    @property
    def kind(self) -> Kind:
        return self.declared.kind

    @property
    def loop(self) -> str | None:
        return self.declared.loop

    @property
    def hidden(self) -> frozenset[str]:
        return self.declared.hidden

    @property
    def fixed(self) -> tuple[str, ...]:
        return self.declared.fixed

    @property
    def output(self) -> Output:
        return self.declared.output

    @property
    def note(self) -> str:
        return self.declared.note

    @property
    def open_world(self) -> bool:
        return self.declared.open_world


def command_for(spec: ToolSpec, app: click.Group) -> click.Command | None:
    """The click command of ``app`` a tool runs (None: this build has no such verb)."""
    node: click.Command = app
    for name in spec.command:
        if not isinstance(node, click.Group) or name not in node.commands:
            return None
        node = node.commands[name]
    return node


def available(app: click.Group) -> list[tuple[ToolSpec, click.Command]]:
    """Every tool of ``app`` (the command line): its verbs declared served, in its order.

    A verb without a declaration is not served (tests/test_actions.py names it).
    """
    found = [(path, command, declared(command)) for path, command in verbs(app)]
    return [
        (ToolSpec(path, declaration), command)
        for path, command, declaration in found
        if declaration is not None and declaration.served
    ]


def call_for(app: click.Group, command: str) -> dict[str, Any] | None:
    """The tool call that takes a step ``next`` proposes: ``{"tool", "arguments"}`` when
    ``command`` is one served ``git ledger`` verb, its arguments read off the command line
    by the verb's own click parser (placeholders stay as they are, to fill as in the
    command); None for anything else: git itself, several commands, a word click would
    not take as it stands (a placeholder where a number goes)."""
    try:
        words = shlex.split(command)
    except ValueError:
        return None
    if words[:2] != ["git", "ledger"] or {"&&", "||", ";", "|"} & set(words):
        return None
    served = sorted(available(app), key=lambda found: -len(found[0].command))
    spec, verb = next(
        (
            (spec, verb)
            for spec, verb in served
            if tuple(words[2 : 2 + len(spec.command)]) == spec.command
        ),
        (None, None),
    )
    if spec is None or verb is None:
        return None
    try:
        ctx = verb.make_context(
            " ".join(spec.command), words[2 + len(spec.command) :], resilient_parsing=True
        )
    except click.ClickException:
        return None
    arguments: dict[str, Any] = {}
    for param in tool_params(spec, verb):
        name = param.name or ""
        if ctx.get_parameter_source(name) is not ParameterSource.COMMANDLINE:
            continue
        value = ctx.params[name]
        if isinstance(value, tuple | list):
            value = [str(v) if isinstance(v, Path) else v for v in value]
        elif isinstance(value, Path):
            value = str(value)
        elif _is_json_object(param) and isinstance(value, str):
            try:
                value = json.loads(value)
            except ValueError:
                return None
        arguments[prop_name(param)] = value
    return {"tool": spec.name, "arguments": arguments}


def tool_params(spec: ToolSpec, command: click.Command) -> list[click.Parameter]:
    """The command's parameters a tool takes (all but --json and the declared ones)."""
    return [
        p
        for p in command.params
        if p.name not in spec.hidden and p.name != "as_json" and not _is_unprocessed(p)
    ]


def _is_unprocessed(param: click.Parameter) -> bool:
    return isinstance(param.type, click.types.UnprocessedParamType)


def prop_name(param: click.Parameter) -> str:
    """An option's long flag without dashes (--noop-gates: noop_gates); an argument's name."""
    if isinstance(param, click.Option):
        long = [o for o in param.opts if o.startswith("--")]
        if long:
            return long[0][2:].replace("-", "_")
    return param.name or param.human_readable_name


def _is_json_object(param: click.Parameter) -> bool:
    """An option whose value is one JSON object (``metavar="JSON"``): the tool takes the
    object itself and hands the command its text."""
    return isinstance(param, click.Option) and param.metavar == "JSON"


def _type_schema(param: click.Parameter) -> dict[str, Any]:
    kind = param.type
    if isinstance(param, click.Option) and param.is_flag:
        return {"type": "boolean"}
    if _is_json_object(param):
        return {"type": "object"}
    if isinstance(kind, click.Choice):
        return {"type": "string", "enum": [str(c) for c in kind.choices]}
    if isinstance(kind, click.types.IntParamType | click.types.FloatParamType):
        out: dict[str, Any] = {
            "type": "integer" if isinstance(kind, click.types.IntParamType) else "number"
        }
        if isinstance(kind, click.IntRange | click.FloatRange):
            if kind.min is not None:
                out["exclusiveMinimum" if kind.min_open else "minimum"] = kind.min
            if kind.max is not None:
                out["exclusiveMaximum" if kind.max_open else "maximum"] = kind.max
        return out
    if isinstance(kind, click.types.BoolParamType):
        return {"type": "boolean"}
    # Strings, paths, and any type added later: click converts from the text anyway.
    return {"type": "string"}


def _description(param: click.Parameter, spec: ToolSpec | None = None) -> str:
    said = dict(spec.declared.args).get(param.name or "") if spec is not None else None
    given = getattr(param, "help", None)
    # The declaration's words first, then the option's help (a terse "true|false").
    text = " ".join(t for t in (said, given) if t) or ARGS.get(param.name or "") or ""
    if isinstance(param, click.Argument):
        text = text or f"{param.human_readable_name} (the command's positional argument)."
    if isinstance(param.type, click.Path) and text != ARGS["file"]:
        text += " A path inside the repository, relative to its directory."
    return text.strip()


def param_schema(param: click.Parameter, spec: ToolSpec | None = None) -> dict[str, Any]:
    schema = _type_schema(param)
    if param.multiple or param.nargs == -1:
        schema = {"type": "array", "items": schema}
    description = _description(param, spec)
    if description:
        schema["description"] = description
    default = param.default
    if isinstance(param, click.Option) and param.is_flag and default is None:
        pass  # --x/--no-x left unsaid: the command decides (its help says how)
    elif isinstance(param, click.Option) and param.is_flag:
        schema["default"] = default is True  # not click's "unset" sentinel (truthy)
    elif isinstance(default, str | int | float | Path) and not param.multiple:
        # Not None, and not click's own "unset" sentinel.
        schema["default"] = str(default) if isinstance(default, Path) else default
    return schema


def input_schema(spec: ToolSpec, command: click.Command) -> dict[str, Any]:
    """The JSON schema of a tool's arguments, read off the click command."""
    params = tool_params(spec, command)
    return {
        "type": "object",
        "properties": {prop_name(p): param_schema(p, spec) for p in params},
        "required": [prop_name(p) for p in params if p.required],
        "additionalProperties": False,
    }


def description(spec: ToolSpec, command: click.Command) -> str:
    text = " ".join((command.help or "").strip().split("\n\n")[0].split())
    needs = spec.declared.requires
    # What refuses it besides its own rules: the agent clears it with `next`'s first step.
    held = f" Refused unless {', '.join(needs)} (next names what clears it)." if needs else ""
    return " ".join(part for part in (text, spec.note, held.strip()) if part)


_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,),
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
}


def _check_value(tool: str, name: str, schema: Mapping[str, Any], value: Any) -> None:
    if schema["type"] == "array":
        if not isinstance(value, list):
            raise BadInput(f"{tool}: '{name}' must be a list", "see the tool's input schema")
        for item in value:
            _check_value(tool, name, schema["items"], item)
        return
    want = schema["type"]
    # bool is an int in Python; JSON keeps them apart.
    if not isinstance(value, _JSON_TYPES[want]) or (want != "boolean" and isinstance(value, bool)):
        raise BadInput(f"{tool}: '{name}' must be a {want}, not {value!r}", "see its input schema")
    if isinstance(value, float) and not math.isfinite(value):
        raise BadInput(f"{tool}: '{name}' must be a finite number")
    if "enum" in schema and value not in schema["enum"]:
        raise BadInput(f"{tool}: '{name}' must be one of {', '.join(schema['enum'])}")


def argv_for(
    spec: ToolSpec, command: click.Command, arguments: Mapping[str, Any], base: Path, root: Path
) -> list[str]:
    """The CLI argv for a tool call; paths must resolve inside ``root`` (relative to ``base``).

    Options come first as ``--name=value`` and positional arguments after ``--``,
    so no value (a bet that starts with a dash) can be read as an option.
    """
    schema = input_schema(spec, command)
    props = schema["properties"]
    unknown = sorted(set(arguments) - set(props))
    if unknown:
        raise BadInput(
            f"{spec.name}: unknown argument {', '.join(map(repr, unknown))}",
            f"it takes {', '.join(props) or 'no arguments'}",
        )
    missing = [name for name in schema["required"] if arguments.get(name) is None]
    if missing:
        raise BadInput(f"{spec.name}: missing {', '.join(map(repr, missing))}")
    options: list[str] = []
    positional: list[str] = []
    for param in tool_params(spec, command):
        name = prop_name(param)
        value = arguments.get(name)
        if value is None:
            continue
        _check_value(spec.name, name, props[name], value)
        values = value if isinstance(value, list) else [value]
        if isinstance(param.type, click.Path):
            values = [_inside(spec.name, name, str(v), base, root) for v in values]
        if isinstance(param, click.Argument):
            positional += [str(v) for v in values]
            continue
        flag = max(param.opts, key=len)
        if isinstance(param, click.Option) and param.is_flag:
            # A --x/--no-x flag whose default is neither: false is said, not left out.
            off = param.secondary_opts if param.default is None else []
            options += [flag] if value else off[-1:]
            continue
        if _is_json_object(param):
            values = [json.dumps(value, sort_keys=True, ensure_ascii=False)]
        for item in values:
            text = repr(item) if isinstance(item, float) else str(item)
            options.append(f"{flag}={text}" if flag.startswith("--") else f"{flag}{text}")
    return [*spec.command, *options, *spec.fixed, *(["--json"] if _has_json(command) else [])] + (
        ["--", *positional] if positional else []
    )


def _has_json(command: click.Command) -> bool:
    return any(p.name == "as_json" for p in command.params)


def _inside(tool: str, name: str, value: str, base: Path, root: Path) -> str:
    """An absolute path inside the repository, or bad input."""
    if not value or "\0" in value:
        raise BadInput(f"{tool}: '{name}' is not a path")
    path = (base / value).resolve()
    if not path.is_relative_to(root.resolve()):
        raise BadInput(
            f"{tool}: '{name}' {value!r} is outside the repository {root}",
            "this server acts only inside the repository it was started in",
        )
    return str(path)
