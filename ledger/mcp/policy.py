"""What an agent left alone with the server may not do, and what it is told a tool returns.

The command line trusts the person at the keyboard; the server is handed to an
agent. Three things differ, each declared here once and applied to every call
before the command runs (``ledger.mcp.server.execute``):

- **Size.** A text a command line could carry is at most a few tens of KiB; a
  30 MB argument once took 52 s and 634 MB and slowed every later call. An
  argument over the limit (64 KiB unless the server is started with another)
  is bad input, and nothing runs.
- **Configuration that reaches outside the ledger.** ``config set`` of a key that
  names a program, an argument list, a script or a place read or written outside
  the ledger (``[run] command``, ``[campaign] run``, ``benchmark_script``, ...)
  would let an agent given only the ledger's tools run or read anything: such
  fields are marked where the configuration model declares them
  (``ledger.core.model.config.PersonOnly``), and over MCP a key that sets one, or
  a table holding one, is refused; a person edits ledger.toml.
- **Which tools.** ``--read-only`` serves the tools that change nothing;
  ``--tools`` serves named sets (as the GitHub MCP server does): ``core`` (the
  tools of every ledger), a loop's name, ``read``, ``write``, ``destructive``.

Output schemas: a JSON tool returns one object (a list comes as ``items``, a
check without JSON as ``output``); ``next`` returns the one proposal shape
(``ledger.core.actions.proposal``); a text tool returns ``text``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ledger.core.errors import BadInput, Refused
from ledger.mcp.tools import ToolSpec

MAX_ARGUMENT_BYTES = 64 * 1024

SETS_HELP = "core, read, write, destructive, or a loop's name (versions, campaign, batches)"


def check_size(spec: ToolSpec, arguments: Mapping[str, Any], limit: int) -> None:
    """Refuse (bad input) an argument whose text is longer than ``limit`` bytes."""
    for name, value in arguments.items():
        items = value if isinstance(value, list) else [value]
        for item in items:
            text = item if isinstance(item, str) else json.dumps(item, ensure_ascii=False)
            size = len(text.encode("utf-8"))
            if size > limit:
                raise BadInput(
                    f"{spec.name}: '{name}' is {size} bytes, over this server's limit of "
                    f"{limit} bytes",
                    "pass a smaller value (a summary, or a file inside the repository)",
                )


def check_config_key(spec: ToolSpec, arguments: Mapping[str, Any]) -> None:
    """Refuse a configuration key the model marks as a person's (``PersonOnly``): a
    program, an argument list, a script or a place outside the ledger, or a table that
    holds one. Read from the declaration (``ledger.core.model.reach``), never a list."""
    argument = spec.declared.config_key
    if argument is None:
        return
    from ledger.core.model.reach import person_only

    key = str(arguments.get(argument) or "")
    found = person_only(key)
    if found is not None:
        where = f" (a table holding {found.key})" if found.table else ""
        raise Refused(
            f"[mcp-person-only] {key!r}{where} {found.why}: over MCP it cannot be set",
            "a person edits ledger.toml (and commits it, or runs git ledger config set)",
        )


@dataclass(frozen=True)
class Selection:
    """Which tools this server serves (``--read-only``, ``--tools``)."""

    read_only: bool = False
    sets: frozenset[str] = frozenset()

    def serves(self, spec: ToolSpec) -> bool:
        if self.read_only and spec.kind != "read":
            return False
        if not self.sets:
            return True
        names = {spec.kind, spec.loop or "core"}
        return bool(names & self.sets)

    def why_not(self, spec: ToolSpec) -> str:
        if self.read_only and spec.kind != "read":
            return "this server is read-only (started with --read-only)"
        return f"this server serves the tool sets {', '.join(sorted(self.sets))}"


def selection(read_only: bool, tools: str | None, loops: Iterable[str]) -> Selection:
    """The selection of ``--read-only`` and ``--tools a,b``; an unknown set is bad input."""
    sets = frozenset(word.strip() for word in (tools or "").split(",") if word.strip())
    known = {"core", "read", "write", "destructive", *loops}
    unknown = sorted(sets - known)
    if unknown:
        raise BadInput(f"--tools: unknown tool set {', '.join(unknown)}", f"use {SETS_HELP}")
    return Selection(read_only, sets)


_PLACEHOLDER = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "meaning": {"type": "string"}},
    "required": ["name", "meaning"],
}

# (name, JSON type, what it is) of each field of a proposal (``ledger.core.actions``).
_NEXT_FIELDS: tuple[tuple[str, Any, str], ...] = (
    ("action", "string", "The step's name."),
    ("command", "string", "The command line that takes it."),
    ("reason", "string", "Why this is the next step."),
    ("step", ["string", "null"], "The step id it concerns."),
    ("placeholders", "array", "The words of command the caller fills in."),
    ("meanings", "array", "What each word to fill in stands for: {name, meaning}."),
    ("edit", "array", "Files to edit before the command."),
    ("decide", "string", "A person's decision, when the step is one."),
    (
        "call",
        ["object", "null"],
        "The same step as one tool call: {tool, arguments} (placeholders filled as in "
        "command); null when the step is git itself or several commands.",
    ),
)

NEXT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "The single next step: what to do, the exact command, and why.",
    "properties": {
        name: {"type": kind, "description": text}
        | (
            {"items": _PLACEHOLDER if name == "meanings" else {"type": "string"}}
            if kind == "array"
            else {}
        )
        for name, kind, text in _NEXT_FIELDS
    },
    "required": [name for name, *_ in _NEXT_FIELDS[:3]],
}

_JSON_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "The command's --json output (a list comes as 'items'; a check that "
    "prints no JSON as 'output').",
}

TEXT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"text": {"type": "string", "description": "What the command prints."}},
    "required": ["text"],
}


def output_schema(spec: ToolSpec) -> dict[str, Any]:
    """The ``outputSchema`` of a tool: what its structured content is."""
    if spec.output == "text":
        return TEXT_SCHEMA
    if spec.command == ("next",):
        return NEXT_SCHEMA
    return _JSON_SCHEMA
