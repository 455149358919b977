"""``git ledger mcp``: serve the command line's verbs to an agent over stdio.

The verbs are handed in (``app``): the MCP server serves what the command line
declares and never imports it, so the command line can offer ``mcp`` as a verb.
"""

from __future__ import annotations

from pathlib import Path

import click

from ledger.core.errors import BadInput
from ledger.mcp.server import EXTRA_HINT


def serve(
    cwd: Path,
    app: click.Group,
    *,
    read_only: bool = False,
    tools: str | None = None,
    max_argument_bytes: int | None = None,
) -> int:
    """Serve MCP over stdio until the client closes the connection (``--read-only``,
    ``--tools`` and ``--max-argument-bytes``: :mod:`ledger.mcp.policy`)."""
    from ledger.core.loops import NAMES
    from ledger.mcp import policy

    selection = policy.selection(read_only, tools, NAMES)
    try:
        from ledger.mcp import sdk as mcpsdk
    except ImportError as exc:
        raise BadInput(
            f"git ledger mcp needs the MCP SDK, which is not installed ({exc})", EXTRA_HINT
        ) from None
    from ledger.core.store import Store

    start = cwd.resolve()
    root = Store(start).require_workdir().resolve()
    limit = max_argument_bytes or policy.MAX_ARGUMENT_BYTES
    return mcpsdk.serve(start, root, app, selection=selection, limit=limit)
