"""``next`` gives its step as one MCP tool call too (``call``: the tool and its
arguments), read off the command by the server's own parser: an agent fills the
placeholders and makes that call, and the step is taken exactly as the command line
would take it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.helpers import Repo
from tests.test_mcp import Agent, change_params, cli_next, drive, loop_repo

__all__ = ["loop_repo"]  # the fixture, shared with test_mcp

FILLED = {
    "<BET>": "A learning rate of 0.2 raises the score",
    "<FALSIFIER>": "no gain beyond noise",
    "<FILES>": "params.json",
    "<NEXT>": "try a wider network",
}


def _filled(call: dict[str, Any]) -> dict[str, Any]:
    return {k: FILLED.get(v, v) if isinstance(v, str) else v for k, v in call["arguments"].items()}


def test_an_agent_takes_each_step_by_the_call_next_gives(loop_repo: Repo, tmp_path: Path) -> None:
    taken: list[str] = []

    async def steps(client: Agent) -> None:
        listed = await client.session.list_tools()
        params = {t.name: set(t.input_schema.get("properties", {})) for t in listed.tools}
        for _ in range(8):
            nxt = await client.data("next")
            assert nxt == cli_next(loop_repo)  # the same step, call included
            if nxt["action"] == "commit-code":
                assert nxt["call"] is None  # git itself: no tool takes it
                change_params(loop_repo, "V1", lr=0.2)
                continue
            if nxt["action"] == "register" and taken:
                break  # V1 is concluded: the loop goes on to the next bet
            call = nxt["call"]
            assert call is not None, nxt
            assert set(call["arguments"]) <= params[call["tool"]], call
            await client.data(call["tool"], **_filled(call))
            taken.append(nxt["action"])

    drive(loop_repo, tmp_path, steps)
    assert taken[0] == "register" and "conclude" in taken, taken
    assert loop_repo.ok("show", "V1", "--json").json()["verdict"] in ("confirmed", "inconclusive")


def test_a_step_that_is_not_one_served_verb_has_no_call() -> None:
    from ledger.cli.app import cli
    from ledger.mcp.tools import call_for

    assert call_for(cli, "git revert --no-edit abc123") is None
    assert call_for(cli, "cd .ledger/worktrees/x && git ledger run V2.A --gate g") is None
    assert call_for(cli, "git ledger demo") is None  # not served over MCP
    assert call_for(cli, "git ledger run V1 --gate recent --seeds 1,2,3") == {
        "tool": "run",
        "arguments": {"step_id": "V1", "gate": "recent", "seeds": "1,2,3"},
    }
    recorded = call_for(cli, "git ledger record V1 --gate g --seed 1 --result '{\"score\": 58}'")
    assert recorded is not None and recorded["arguments"]["result"] == {"score": 58}


def test_status_and_next_at_hand_answer_as_the_app_does_without_click(repo: Repo) -> None:
    """``status`` and ``next`` (``--json`` or not) answer before click is imported
    (ledger.__main__): the same output and exit code as the app; ``call`` comes from the
    remembered calls, else from the app's parser, imported for that one command."""
    import os
    import subprocess
    import sys

    from tests.helpers import register

    root = Path(__file__).resolve().parent.parent
    env = {**os.environ, "PYTHONPATH": str(root)}
    app = (
        "import sys\nfrom ledger.cli.app import main\ntry:\n    main(sys.argv[1:])\n"
        "except SystemExit as exc:\n    sys.exit(exc.code)\n"
    )

    def run(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, *argv], cwd=repo.path, capture_output=True, text=True, env=env
        )

    assert register(repo, "V1").code == 0
    calls = repo.path / ".git" / "ledger" / "cache" / "calls.json"
    for args in (("status", "--json"), ("next", "--json"), ("status",), ("next",)):
        calls.unlink(missing_ok=True)
        first = run("-X", "importtime", "-m", "ledger", *args)  # the call not remembered
        again = run("-X", "importtime", "-m", "ledger", *args)
        full = run("-c", app, *args)
        assert full.returncode == 0 and full.stdout, full.stderr
        for fast in (first, again):
            assert (fast.returncode, fast.stdout) == (full.returncode, full.stdout), args
        assert " click" not in again.stderr, args  # the app was not imported
    assert json.loads(run("-m", "ledger", "next", "--json").stdout)["call"]["tool"]
    # Outside a repository the app says what is wrong, as it always has.
    outside = subprocess.run(
        [sys.executable, "-m", "ledger", "status", "--json"],
        cwd=repo.path.parent,
        capture_output=True,
        text=True,
        env=env,
    )
    assert outside.returncode == 2 and json.loads(outside.stdout)["exit_code"] == 2
