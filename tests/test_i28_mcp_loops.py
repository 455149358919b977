"""Issue 28: an agent left alone with ``git ledger mcp`` drives each loop from ``init`` to
its end, with the SDK's own client, using only the server's tools and its ``next``.

The agent here is a plain follower: it asks ``next``, fills each placeholder with
what its ``meanings`` entry asks for (a world function per loop decides the
numbers), turns each ``git ledger`` part of the command into the call of the tool
that serves the verb (its arguments read by the verb's own click parser), records
results inline (``result``: a JSON object, never a file), edits the files ``next``
names, and commits code with git as an agent does. Every call must pass: a refusal,
or a command naming a verb the server does not serve, fails the test.
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio

from ledger.cli.app import cli
from ledger.mcp import tools as mcptools
from tests.helpers import Repo
from tests.test_mcp import Agent, agent


class Follower:
    """An agent that takes the step ``next`` proposes, through the tools only."""

    def __init__(self, client: Agent, repo: Repo, fill: Callable[[str, dict[str, Any]], Any]):
        self.client = client
        self.repo = repo
        self.fill = fill  # (placeholder, next) -> its value
        self.actions: list[str] = []
        self.calls: list[str] = []

    async def next(self) -> dict[str, Any]:
        nxt: dict[str, Any] = await self.client.data("next")
        # One shape in every loop: every word to fill in has a meaning.
        assert {"action", "command", "reason", "placeholders", "meanings", "edit"} <= set(nxt)
        named = {m["name"] for m in nxt["meanings"]}
        assert set(nxt["placeholders"]) <= named, nxt
        assert all(m["meaning"] for m in nxt["meanings"]), nxt
        return nxt

    async def step(self, nxt: dict[str, Any]) -> None:
        self.actions.append(nxt["action"])
        for rel in nxt["edit"]:
            self.edit(rel)
        for part in nxt["command"].split("&&"):
            words = shlex.split(part)
            if words[:2] == ["git", "ledger"]:
                await self.tool(words[2:], part.strip(), nxt)
            elif words and words[0] == "$EDITOR":
                for rel in words[1:]:
                    self.edit(rel)
            else:
                assert words[:1] == ["git"], f"not a step an agent can take: {part!r}"
                self.repo.git(*words[1:])

    def edit(self, rel: str) -> None:
        value = self.fill(f"edit:{rel}", {})
        path = self.repo.path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(value(path.read_text() if path.exists() else ""))

    async def tool(self, words: list[str], text: str, nxt: dict[str, Any]) -> None:
        inline: Any = None
        filled: list[str] = []
        names = {m["name"] for m in nxt["meanings"]}
        for word in words:
            key, eq, rest = word.partition("=")
            if word in names and "RESULTS" in word:
                inline = self.fill(word, nxt)  # the result goes inline, not as a file
                filled.append(word)
            elif word in names:
                filled.append(str(self.fill(word, nxt)))
            elif eq and rest in names:
                filled.append(f"{key}={self.fill(f'{key}={rest}', nxt)}")
            else:
                filled.append(word)
        # The call next's own `call` gives, read off the filled command by the server's parser.
        call = mcptools.call_for(cli, shlex.join(["git", "ledger", *filled]))
        assert call is not None, f"next named a verb the server does not serve: {text}"
        name, arguments = str(call["tool"]), dict(call["arguments"])
        if inline is not None:
            placeholder = next(w for w in words if w in names and "RESULTS" in w)
            arguments = {k: v for k, v in arguments.items() if v != placeholder}
            arguments["result"] = inline
        self.calls.append(name)
        result = await self.client.session.call_tool(name, arguments)
        assert not result.is_error, f"{name} {arguments} refused: {result.content}"
        # A check that found something (finish with items outstanding) is no step taken.
        assert not (result.meta or {}).get("git-ledger/exit_code"), (name, result.content)


async def ends_with_a_destructive_tool(client: Agent, follower: Follower) -> bool:
    """The call that ended the loop (a verdict, delivery, convergence) is hinted
    destructive, and no call before it that only moved the loop along is."""
    tools = {t.name: t for t in (await client.session.list_tools()).tools}
    hinted = {n for n, t in tools.items() if t.annotations and t.annotations.destructive_hint}
    final = follower.calls[-1]
    assert final in hinted, (final, sorted(hinted))
    along = {"register", "record", "candidate_record", "gate_topic", "gate_batch", "contract"}
    assert not hinted & along & set(follower.calls)
    return True


def drive(repo: Repo, tmp_path: Path, body: Callable[[Agent], Any]) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(exist_ok=True)

    async def main() -> None:
        async with agent(repo, elsewhere) as client:
            await body(client)

    anyio.run(main)


def untracked(repo: Repo) -> list[str]:
    out = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all"],
        cwd=repo.path,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return out.splitlines()


# --- versions: to a concluded version after a reflection ---------------------------


def test_an_agent_alone_runs_a_versions_loop_from_init_through_a_reflection(
    bare_repo: Repo, tmp_path: Path
) -> None:
    repo = bare_repo
    repo.write("model.py", "SIZE = 1\n")
    repo.commit_all("feat(model): the model")
    reflected: list[str] = []

    def fill(word: str, nxt: dict[str, Any]) -> Any:
        if word.startswith("edit:"):
            if "REFLECTION_" in word:
                reflected.append(word)
                return answer_every_section
            return lambda text: text + "SIZE += 1\n"
        if "RESULTS" in word:
            # Flat until the reflection (three refutations fire it), better after it.
            return {"score": 60.0 if reflected else 50.0}
        return VERSIONS_WORDS.get(word, word)

    async def body(client: Agent) -> None:
        follower = Follower(client, repo, fill)
        assert (await client.data("init"))["preset"] == "versions"
        assert await client.data("next") == repo.ok("next", "--json").json()
        for _ in range(40):
            nxt = await follower.next()
            if reflected and follower.actions[-1:] == ["conclude"]:
                assert await ends_with_a_destructive_tool(client, follower)
                break
            await follower.step(nxt)
        else:
            raise AssertionError(f"the loop did not get there: {follower.actions}")

    drive(repo, tmp_path, body)
    status = repo.ok("status", "--json").json()
    verdicts = {v["id"]: v.get("verdict") for v in status["recent"]}
    assert verdicts["V5"] == "confirmed", status["recent"]
    assert [verdicts[v] for v in ("V2", "V3", "V4")] == ["refuted"] * 3
    assert (repo.path / "training_log/REFLECTION_V4.md").is_file()
    assert repo.ok("verify").code == 0
    # Results went inline: no results file was ever written to the work tree.
    assert untracked(repo) == []
    assert not list(repo.path.glob("*.json"))


VERSIONS_WORDS = {
    "<BET>": "A larger model raises the score",
    "<FALSIFIER>": "no gain beyond the noise floor",
    "<FILES>": "model.py",
    "<REASON>": "the agent's reason",
    "<NEXT>": "try another size",
    "TEXT": "the agent's reason",
}


def answer_every_section(text: str) -> str:
    for title in re.findall(r"^## (.+)$", text, re.M):
        # A sentence of its own per section (a repeat does not count); the target audit
        # ends in its decision.
        answer = (
            "The window is typical of its regime: keep as target"
            if title == "Target audit"
            else f"The agent's answer on {title.lower()}."
        )
        text = text.replace(f"## {title}\n", f"## {title}\n\n{answer}\n", 1)
    return text


# --- campaign: finish passes and the campaign is delivered --------------------------


def test_an_agent_alone_runs_a_campaign_from_init_to_delivery(
    bare_repo: Repo, tmp_path: Path
) -> None:
    repo = bare_repo
    repo.write("src/app.py", "x = 0\n")
    repo.commit_all("feat(src): the app")
    candidates: list[str] = []

    def fill(word: str, nxt: dict[str, Any]) -> Any:
        if word.startswith("edit:"):
            return lambda text: text + "\nWe measure speed. Only src/ may change.\n"
        if word == "CANDIDATE":
            # The agent's optimisation: one commit, then measured.
            n = len(candidates)
            repo.write(f"src/opt{n}.py", f"# optimisation {n}\n")
            candidates.append(repo.commit_all(f"perf(src): optimisation {n}"))
            return candidates[-1]
        if word == "speed=X":  # the second optimisation is slower: rejected
            return {1: "100", 2: "120", 3: "90"}[len(candidates)]
        if word == "promoted|rejected|held":
            return "rejected" if len(candidates) == 3 else "promoted"
        if word.endswith("=X"):
            return {"correctness=X": "0.0001"}.get(word, "1.0")
        return CAMPAIGN_WORDS.get(word, word)

    async def body(client: Agent) -> None:
        follower = Follower(client, repo, fill)
        assert (await client.data("init", preset="campaign"))["preset"] == "campaign"
        for _ in range(30):
            nxt = await follower.next()
            if follower.actions[-1:] == ["deliver"]:
                break
            if nxt["action"] == "candidate" and len(candidates) >= 3:
                # Done trying: next offers closing among its alternatives.
                (nxt,) = [a for a in nxt["alternatives"] if a["action"] == "close"]
            await follower.step(nxt)
        else:
            raise AssertionError(f"the loop did not get there: {follower.actions}")
        assert nxt["action"] == "done" and nxt["done"] is True, nxt
        assert await ends_with_a_destructive_tool(client, follower)
        assert follower.actions == [
            "contract", "record-base", "arm", "candidate", "candidate", "revert-rejected",
            "close", "finish", "deliver",
        ]  # fmt: skip

    drive(repo, tmp_path, body)
    delivered = repo.git("log", "--format=%s", "campaign/deliver")
    assert "optimisation 1" in delivered  # promoted
    assert "optimisation 2" not in delivered  # rejected
    assert repo.ok("verify").code == 0
    assert untracked(repo) == []


CAMPAIGN_WORDS = {
    "TEXT": "the agent's reason",
    "<REASON>": "the agent's reason",
    "<NOTES>": "the less invasive change",
}


# --- batches: to convergence ---------------------------------------------------------


def test_an_agent_alone_runs_a_batches_loop_from_init_to_convergence(
    bare_repo: Repo, tmp_path: Path
) -> None:
    repo = bare_repo
    repo.write("src/app.py", "x = 0\n")
    repo.commit_all("feat(src): the app")
    revised: list[str] = []

    def fill(word: str, nxt: dict[str, Any]) -> Any:
        if word.startswith("edit:"):
            return lambda text: text
        if word == "WEIGHTS.json":  # the agent writes its weights inside the repository
            repo.write("weights.json", json.dumps({"style": {"tone": "plain", "length": 3}}))
            return "weights.json"
        if word == "VALUE":  # a new length per batch
            revised.append(word)
            return str(3 + len(revised))
        return BATCHES_WORDS.get(word, word)

    async def body(client: Agent) -> None:
        follower = Follower(client, repo, fill)
        assert (await client.data("init", preset="batches"))["preset"] == "batches"
        for _ in range(60):
            nxt = await follower.next()
            if nxt["action"] == "done":
                break
            await follower.step(nxt)
        else:
            raise AssertionError(f"the loop did not get there: {follower.actions}")
        assert follower.actions[-1] == "converge" and follower.calls[-1] == "gate_converged"
        assert await ends_with_a_destructive_tool(client, follower)
        assert follower.actions.count("close-batch") == 3 and "revise" in follower.actions
        resumed = await client.data("resume")
        assert resumed == repo.ok("resume", "--json").json()

    drive(repo, tmp_path, body)
    assert repo.trailers()["Ledger-Transition"] == "converged", repo.trailers()
    assert repo.ok("verify").code == 0


BATCHES_WORDS = {
    "X": "0.95",
    "true|false": "true",
    "TEXT": "the agent's reason",
    "RUN": "agent-run",
}
