"""MCP tool calls vs the CLI: `next` through one `git ledger mcp` session against `next --json`,
and a recording transition over MCP (`record` with the result inline) against
`git add && git commit` of the same JSON (hooks off): the issue-28 target is <= 2x.

An agent that shells out pays the program's start-up (Python, pygit2, pydantic,
click) on every call; the server pays it once and runs each call through the
same click command in process. Prints the per-call ratios, and the cost of
starting a server (spawn + initialize + first call) against one CLI call.
``--profile`` prints where a recording call's time goes inside the server's code
path (cProfile of the same in-process call), for when the target is missed.

    python bench/mcpcalls.py [--rounds 15] [--profile]
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import pstats
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import anyio
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from bench.common import Sandbox, git_add_commit, report, timed


def profile_record(box: Sandbox, rounds: int) -> None:
    """The in-process record call the server makes, under cProfile (top 25 by cumulative)."""
    from ledger.cli.app import cli
    from ledger.mcp import server as mcpserver
    from ledger.mcp import tools as mcptools

    spec = next(s for s, _ in mcptools.available(cli) if s.name == "record")
    profiler = cProfile.Profile()
    for i in range(rounds):
        seed = str(10**5 + i)  # seeds the timed rounds never take
        arguments = {"step_id": "V1", "gate": "recent", "seed": seed, "result": {"score": i}}
        profiler.enable()
        outcome = mcpserver.execute(spec, arguments, box.repo, box.repo, cli)
        profiler.disable()
        if outcome.error:
            raise RuntimeError(f"record failed: {outcome.error}")
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("cumulative").print_stats(25)
    print(out.getvalue())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--profile", action="store_true", help="profile the record call")
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
    records: list[float] = []
    plain: list[float] = []
    seeds = iter(range(10**6))

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
            for _ in range(args.rounds):
                seed = next(seeds)
                arguments = {"step_id": "V1", "gate": "recent", "seed": str(seed),
                             "result": {"score": float(seed)}}  # fmt: skip
                began = time.perf_counter()
                result = await client.call_tool("record", arguments)
                records.append(time.perf_counter() - began)
                if result.is_error:
                    raise RuntimeError(f"record failed: {result.content}")
                # The baseline: the same JSON committed by git alone, as processes.
                path = box.repo / "plain" / f"{seed}.json"
                path.parent.mkdir(exist_ok=True)
                path.write_text(json.dumps({"score": float(seed)}))
                plain.append(git_add_commit(box.repo, path, box.env))

    for _ in range(3):
        anyio.run(session)
    report("mcp next call vs CLI next --json", calls, cli, "CLI")
    report("mcp server start + first call vs CLI next --json", starts, cli, "CLI")
    missed = report(
        "mcp record (inline result) vs git add && git commit", records, plain, "git", target=2.0
    )
    if args.profile or missed > 2.0:
        profile_record(box, args.rounds)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
