"""The versions walk as an agent runs it: every ``next`` and every step through the MCP
server (``git ledger mcp``), with the SDK's own client over stdio.

The world is the one of :mod:`tests.walkworld` (its events run through git and the
command line, as the people and programs around an agent would); only the loop's own
steps change hands: ``next`` is the ``next`` tool, and each ``git ledger`` part of the
command it proposes is turned into a call of the tool that serves that verb, its
arguments read off the command line by the server's own parser (``next``'s ``call``).
A verb ``next`` proposes that the server does not serve is a failure like a refusal.
Parts that are not ``git ledger`` (``git revert``, ``git add``) run in a shell, as an
agent runs git.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import AsyncIterator
from contextlib import AbstractContextManager, asynccontextmanager
from typing import Any

from anyio.from_thread import BlockingPortal, start_blocking_portal
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from ledger.cli.app import cli
from ledger.mcp import tools as mcptools
from tests.walkworld import Done, World

RESULTS_DIR = "walk-results"  # inside the repository (tools take no path outside it)


class McpWorld(World):
    """The versions walk, its loop steps taken through the MCP server's tools."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.calls = 0
        self._portal_cm: AbstractContextManager[BlockingPortal] | None = None
        self._session_cm: AbstractContextManager[ClientSession] | None = None
        super().__init__(*args, **kwargs)

    # --- the server -------------------------------------------------------------------

    def new_repo(self) -> None:
        self.close()
        super().new_repo()
        exclude = self.repo / ".git/info/exclude"
        exclude.parent.mkdir(exist_ok=True)
        with exclude.open("a") as handle:
            handle.write(f"/{RESULTS_DIR}/\n")
        self._portal_cm = start_blocking_portal()
        portal = self._portal_cm.__enter__()
        self._session_cm = portal.wrap_async_context_manager(self._session())
        self.session = self._session_cm.__enter__()
        self.portal = portal

    @asynccontextmanager
    async def _session(self) -> AsyncIterator[ClientSession]:
        server = StdioServerParameters(
            command="git", args=["ledger", "mcp"], env=self.env, cwd=self.repo
        )
        async with stdio_client(server) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            yield session

    def close(self) -> None:
        """Stop the server of the current repository (a new one starts with each repo)."""
        if self._session_cm is not None:
            self._session_cm.__exit__(None, None, None)
            self._session_cm = None
        if self._portal_cm is not None:
            self._portal_cm.__exit__(None, None, None)
            self._portal_cm = None

    def call(self, tool: str, arguments: dict[str, Any]) -> Done:
        self.calls += 1
        result = self.portal.call(self.session.call_tool, tool, arguments)
        text = "\n".join(getattr(block, "text", "") for block in result.content)
        if result.is_error:
            error = (result.structured_content or {}).get("error", {})
            return Done(int(error.get("exit_code", 2)), "", f"{tool}: {error or text}")
        code = int((result.meta or {}).get("git-ledger/exit_code", 0))
        data = result.structured_content
        return Done(code, json.dumps(data) if data is not None else text, text if code else "")

    # --- the loop's steps, through the tools -------------------------------------------

    def next(self) -> dict[str, Any] | None:
        done = self.call("next", {})
        if done.code != 0:
            self.fail("next-failed", "mcp: next", done, {})
            return None
        data: dict[str, Any] = json.loads(done.out)
        return data

    def execute(self, command: str) -> Done:
        if "git ledger" not in command:
            return self.sh(command)  # git alone (a commit in a cell's worktree): as is
        done = Done(0, "", "")
        for part in command.split("&&"):
            words = shlex.split(part)
            if words[:2] == ["git", "ledger"]:
                done = self.tool_call(words[2:], part.strip())
            else:
                done = self.sh(part)
            if done.code != 0:
                return done
        return done

    def tool_call(self, words: list[str], text: str) -> Done:
        """Call the tool that serves ``git ledger WORDS``: the call ``next`` itself gives
        (its ``call``), read off the filled command by the server's own parser."""
        call = mcptools.call_for(cli, shlex.join(["git", "ledger", *words]))
        if call is None:
            return Done(2, "", f"not a call of a served tool: {text}")
        return self.call(call["tool"], call["arguments"])

    def value(self, placeholder: str, nxt: dict[str, Any]) -> str | None:
        if placeholder in ("<RESULTS.json>", "RESULTS.json"):
            folder = self.repo / RESULTS_DIR
            folder.mkdir(exist_ok=True)
            path = folder / f"results-{self.tally.steps}.json"
            score = 50 + 8 + self.rng.gauss(0, 1)
            path.write_text(json.dumps({"score": score, "hit_rate": 0.5}))
            return str(path)
        return super().value(placeholder, nxt)
