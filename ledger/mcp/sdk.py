"""The MCP SDK side of ``git ledger mcp``: tools, resources and the stdio transport.

Only this module imports the SDK (the ``mcp`` package of the extra
``git-ledger[mcp]``); ``ledger.mcp.server`` imports it when serving and turns a
missing SDK into exit 2 naming the extra. The low-level server is used rather
than the decorator API because the tools' schemas come from the CLI's click
commands (``ledger.mcp.tools``), not from Python signatures.
"""

from __future__ import annotations

import json
from contextlib import suppress
from pathlib import Path
from typing import Any, TypeVar

import anyio
import anyio.to_thread
import click
import mcp_types as types
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError

from ledger import __version__
from ledger.core.errors import LedgerError
from ledger.mcp import policy, prompts
from ledger.mcp import tools as mcptools
from ledger.mcp.server import Outcome, entries, execute, loop_of, read_entry, uri

T = TypeVar("T")

# Entries per resources/list page (a ledger of 10,000 steps has tens of thousands).
PAGE = 1000
# JSON-RPC code the protocol gives to "resource not found".
RESOURCE_NOT_FOUND = -32002

_MEANING = {
    1: "a rule refused, or a check found something",
    2: "bad input",
    3: "internal error",
    4: "committed, but the work tree is behind (run doctor --fix)",
    5: "the environment refused a write",
}

INSTRUCTIONS = (
    "git-ledger keeps an improvement loop honest: pre-register a bet before its code, run "
    "the configured gate, conclude with the verdict the statistics allow, reflect when a "
    "trigger fires. Call 'next' to learn the single next action. A refused call returns a "
    "structured error with the rule, the message and the fix; follow the fix instead of "
    "working around the rule."
)


ID_FORMS = {
    "version": "id is the version id, e.g. V12 or a cell V13.A",
    "reflection": "id is the reflection's id",
    "result": "id is VERSION/GATE/STEM, e.g. V12/recent/seed-42",
}


def page(items: list[T], cursor: str | None, size: int = PAGE) -> tuple[list[T], str | None]:
    """One page of ``items`` from an opaque cursor (an offset), and the next cursor."""
    if cursor is not None and not cursor.isdigit():
        raise MCPError(types.INVALID_PARAMS, f"invalid cursor {cursor!r}")
    first = int(cursor or 0)
    end = first + size
    return items[first:end], (str(end) if end < len(items) else None)


def hints(spec: mcptools.ToolSpec) -> types.ToolAnnotations:
    """The protocol's hints: read-only verbs, and verbs that cannot be undone."""
    return types.ToolAnnotations(
        title=" ".join(spec.command),
        read_only_hint=spec.kind == "read",
        destructive_hint=spec.kind == "destructive",
        idempotent_hint=spec.kind == "read",
        # Declared per verb (ledger.core.actions): run starts the gate's configured command.
        open_world_hint=spec.open_world,
    )


def tools(
    loop: str | None, app: click.Group, selection: policy.Selection | None = None
) -> list[types.Tool]:
    chosen = selection or policy.Selection()
    return [
        types.Tool(
            name=spec.name,
            description=mcptools.description(spec, command),
            input_schema=mcptools.input_schema(spec, command),
            output_schema=policy.output_schema(spec),
            annotations=hints(spec),
        )
        for spec, command in mcptools.available(app)
        if (loop is None or spec.loop in (None, loop)) and chosen.serves(spec)
    ]


def _structured(spec: mcptools.ToolSpec, outcome: Outcome) -> dict[str, Any]:
    """The structured content its output schema promises (``policy.output_schema``)."""
    if spec.output == "text":
        return {"text": outcome.stdout}
    if isinstance(outcome.data, dict):
        return outcome.data
    if outcome.data is not None:
        return {"items": outcome.data}
    return {"output": outcome.stdout}


def _result(outcome: Outcome, spec: mcptools.ToolSpec) -> types.CallToolResult:
    if outcome.error is not None:
        text = json.dumps({"error": outcome.error}, sort_keys=True, ensure_ascii=False)
        return types.CallToolResult(
            content=[types.TextContent(text=text)],
            structured_content={"error": outcome.error},
            is_error=True,
        )
    content: list[types.ContentBlock] = [types.TextContent(text=outcome.stdout)]
    structured = _structured(spec, outcome)
    meta: dict[str, Any] | None = None
    if outcome.exit_code:
        # A check that found something (exit 1 without a refusal): the output says what.
        meaning = _MEANING.get(outcome.exit_code, "failed")
        content.append(types.TextContent(text=f"exit {outcome.exit_code}: {meaning}"))
        meta = {"git-ledger/exit_code": outcome.exit_code}
    if outcome.stderr.strip():
        content.append(types.TextContent(text=outcome.stderr.strip()))
    return types.CallToolResult(
        content=content, structured_content=structured, is_error=False, _meta=meta
    )


class _InFlight:
    """The calls of open-world tools (a run starting) not yet returned: a call declared
    ``after_runs`` (wait) is held until there are none, so it sees their runs."""

    def __init__(self) -> None:
        self.count = 0
        self.idle = anyio.Event()
        self.idle.set()

    def enter(self) -> None:
        self.count += 1
        if self.count == 1:
            self.idle = anyio.Event()

    def leave(self) -> None:
        self.count -= 1
        if self.count == 0:
            self.idle.set()


def build(
    start: Path,
    root: Path,
    app: click.Group,
    *,
    selection: policy.Selection | None = None,
    limit: int = policy.MAX_ARGUMENT_BYTES,
) -> Server[Any]:
    """The server of ``app``'s verbs for the repository at ``root``, run as if started in
    ``start``; ``selection`` and ``limit`` are what ``mcp --read-only/--tools`` and
    ``--max-argument-bytes`` set (:mod:`ledger.mcp.policy`)."""
    chosen = selection or policy.Selection()
    by_name = {spec.name: spec for spec, _ in mcptools.available(app)}
    runs = _InFlight()

    async def list_tools(
        ctx: Any, params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        loop = await anyio.to_thread.run_sync(loop_of, start)
        return types.ListToolsResult(tools=tools(loop, app, chosen))

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        spec = by_name.get(params.name)
        if spec is None:
            raise MCPError(types.INVALID_PARAMS, f"unknown tool {params.name!r}")
        arguments = dict(params.arguments or {})
        if spec.declared.after_runs:
            await runs.idle.wait()
        if spec.open_world:
            runs.enter()  # before any await: a wait that arrives next must see it
        try:
            writes = spec.kind != "read"
            before = await anyio.to_thread.run_sync(loop_of, start) if writes else None
            outcome = await anyio.to_thread.run_sync(
                lambda: execute(spec, arguments, start, root, app, limit=limit, selection=chosen),
                abandon_on_cancel=True,
            )
        finally:
            if spec.open_world:
                runs.leave()
        if writes and await anyio.to_thread.run_sync(loop_of, start) != before:
            # init (or a config change) changed the preset, and with it the tool list.
            with suppress(Exception):
                await ctx.session.send_tool_list_changed()
        return _result(outcome, spec)

    async def list_prompts(
        ctx: Any, params: types.PaginatedRequestParams | None
    ) -> types.ListPromptsResult:
        listed = []
        for name in prompts.names():
            found = prompts.prompt(name)
            if found is not None:
                listed.append(types.Prompt(name=name, description=found[0]))
        return types.ListPromptsResult(prompts=listed)

    async def get_prompt(ctx: Any, params: types.GetPromptRequestParams) -> types.GetPromptResult:
        found = prompts.prompt(params.name)
        if found is None:
            raise MCPError(
                types.INVALID_PARAMS,
                f"unknown prompt {params.name!r}; the prompts are {', '.join(prompts.names())}",
            )
        description, text = found
        return types.GetPromptResult(
            description=description,
            messages=[types.PromptMessage(role="user", content=types.TextContent(text=text))],
        )

    async def list_resources(
        ctx: Any, params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        try:
            found = await anyio.to_thread.run_sync(entries, start)
        except LedgerError:
            found = []  # no ledger yet: nothing to list
        shown, next_cursor = page(found, params.cursor if params is not None else None)
        return types.ListResourcesResult(
            next_cursor=next_cursor,
            resources=[
                types.Resource(
                    name=f"{kind} {entry_id}",
                    uri=uri(kind, entry_id),
                    description=f"{path} at HEAD",
                    mime_type="application/json" if kind == "result" else "text/markdown",
                )
                for kind, entry_id, path in shown
            ],
        )

    async def list_templates(
        ctx: Any, params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(
            resource_templates=[
                types.ResourceTemplate(
                    name=f"{kind} by id",
                    uri_template=uri(kind, "{id}"),
                    description=f"A committed {kind} entry at HEAD (read-only); {ID_FORMS[kind]}.",
                    mime_type="application/json" if kind == "result" else "text/markdown",
                )
                for kind in ("version", "reflection", "result")
            ]
        )

    async def read_resource(
        ctx: Any, params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        try:
            text, mime = await anyio.to_thread.run_sync(read_entry, start, str(params.uri))
        except LedgerError as exc:
            raise MCPError(RESOURCE_NOT_FOUND, exc.one_line(), exc.as_dict()) from None
        return types.ReadResourceResult(
            contents=[types.TextResourceContents(uri=str(params.uri), mime_type=mime, text=text)]
        )

    return Server(
        "git-ledger",
        version=__version__,
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_list_resource_templates=list_templates,
        on_read_resource=read_resource,
        on_list_prompts=list_prompts,
        on_get_prompt=get_prompt,
    )


def serve(
    start: Path,
    root: Path,
    app: click.Group,
    *,
    selection: policy.Selection | None = None,
    limit: int = policy.MAX_ARGUMENT_BYTES,
) -> int:
    server = build(start, root, app, selection=selection, limit=limit)
    # The tool list follows the ledger's preset (init changes it): say so to the client.
    options = server.create_initialization_options(NotificationOptions(tools_changed=True))

    async def main() -> None:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, options)

    anyio.run(main)
    return 0
