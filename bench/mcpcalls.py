"""MCP tool calls vs the CLI: `next` through one `git ledger mcp` session against `next --json`.

An agent that shells out pays the program's start-up (Python, pygit2, pydantic,
click) on every call; the server pays it once and runs each call through the
same click command in process. Prints the per-call ratio, and the cost of
starting a server (spawn + initialize + first call) against one CLI call.

    python bench/mcpcalls.py [--rounds 15]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import anyio
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from bench.common import Sandbox, report, timed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    box = Sandbox("mcp")
    box.ledger("init")
    box.ledger(
        "register", "V1", "--bet", "A bet", "--gate", "recent", "--files", "a.py",
        "--falsifier", "no gain",
    )  # fmt: skip
    cli = [timed(lambda: box.ledger("next", "--json")) for _ in range(args.rounds)]
    calls: list[float] = []
    starts: list[float] = []

    async def session() -> None:
        server = StdioServerParameters(
            command=sys.executable, args=["-m", "ledger", "-C", str(box.repo), "mcp"], env=box.env
        )
        began = time.perf_counter()
        async with stdio_client(server) as (read, write), ClientSession(read, write) as client:
            await client.initialize()
            await client.call_tool("next", {})
            starts.append(time.perf_counter() - began)
            for _ in range(args.rounds):
                began = time.perf_counter()
                result = await client.call_tool("next", {})
                calls.append(time.perf_counter() - began)
                if result.is_error:
                    raise RuntimeError(f"next failed: {result.content}")

    for _ in range(3):
        anyio.run(session)
    report("mcp next call vs CLI next --json", calls, cli, "CLI")
    report("mcp server start + first call vs CLI next --json", starts, cli, "CLI")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
