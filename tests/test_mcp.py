"""`git ledger mcp`: the verbs over MCP, driven by the SDK's own client over stdio.

The server is started the way a client configuration starts it (`git ledger
-C REPO mcp`, through git's dispatch), from another directory, in a real
repository with the hooks installed; the test makes its code commit with git
itself, and at every step `next` over MCP must agree with the CLI's `next --json`.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import click
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from ledger.cli.app import cli
from ledger.cli.demo import CONFIG, SEEDS
from ledger.core.errors import BadInput, Refused
from ledger.core.findings import Finding
from ledger.mcp import sdk as mcpsdk
from ledger.mcp import tools as mcptools
from tests.helpers import Repo, fingerprint, ledger

ROOT = Path(__file__).resolve().parent.parent
BASELINE = {"dropout": 0.3, "lr": 0.1, "width": 32}


def setup_loop(repo: Repo, extra_config: str = "") -> Repo:
    """The demo's loop: eval.py tuned by params.json, one gate, the hooks installed."""
    shutil.copy(ROOT / "templates/demo/eval.py", repo.path / "eval.py")
    repo.write("params.json", json.dumps(BASELINE, indent=2, sort_keys=True) + "\n")
    repo.write("ledger.toml", CONFIG.format(python=json.dumps(sys.executable)) + extra_config)
    repo.commit_all("chore: an evaluation script and its parameters")
    repo.ok("init")
    repo.ok("hooks", "install")
    return repo


@pytest.fixture
def loop_repo(bare_repo: Repo) -> Repo:
    return setup_loop(bare_repo)


class Agent:
    """An MCP client session on `git ledger mcp`, with the calls the tests make."""

    def __init__(self, session: ClientSession) -> None:
        self.session = session

    async def call(self, tool: str, **arguments: Any) -> Any:
        result = await self.session.call_tool(tool, arguments)
        assert not result.is_error, f"{tool} {arguments}: {result.content}"
        return result

    async def data(self, tool: str, **arguments: Any) -> Any:
        result = await self.call(tool, **arguments)
        assert result.structured_content is not None
        return result.structured_content

    async def error(self, tool: str, **arguments: Any) -> dict[str, Any]:
        result = await self.session.call_tool(tool, arguments)
        assert result.is_error, f"{tool} {arguments} was not refused: {result.content}"
        assert result.structured_content is not None
        error: dict[str, Any] = result.structured_content["error"]
        # The text block carries the same error, for clients that show only text.
        assert json.loads(result.content[0].text)["error"] == error  # type: ignore[union-attr]
        return error


@asynccontextmanager
async def agent(repo: Repo, cwd: Path) -> AsyncIterator[Agent]:
    server = StdioServerParameters(
        command="git",
        args=["ledger", "-C", str(repo.path), "mcp"],
        env=dict(os.environ),
        cwd=cwd,
    )
    async with stdio_client(server) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield Agent(session)


def drive(repo: Repo, tmp_path: Path, steps: Callable[[Agent], Awaitable[None]]) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(exist_ok=True)

    async def main() -> None:
        async with agent(repo, elsewhere) as client:
            await steps(client)

    anyio.run(main)


def cli_next(repo: Repo) -> Any:
    return repo.ok("next", "--json").json()


def change_params(repo: Repo, vid: str, **changes: float) -> None:
    """The code commit of a version, made with git itself through the installed hooks."""
    repo.write("params.json", json.dumps({**BASELINE, **changes}, indent=2, sort_keys=True) + "\n")
    repo.git("commit", "-q", "-am", f"feat(params): {vid} - {changes}")


REGISTRATION = {"gate": "recent", "files": "params.json", "falsifier": "no gain beyond noise"}


def test_an_agent_drives_a_whole_version_and_next_agrees_with_the_cli(
    loop_repo: Repo, tmp_path: Path
) -> None:
    async def steps(client: Agent) -> None:
        assert await client.data("next") == cli_next(loop_repo)
        registered = await client.data(
            "register", step_id="V1", bet="A learning rate of 0.2 raises the score", **REGISTRATION
        )
        assert registered["id"] == "V1" and registered["commit"] == loop_repo.head()
        assert await client.data("next") == cli_next(loop_repo)

        change_params(loop_repo, "V1", lr=0.2)
        assert await client.data("next") == cli_next(loop_repo)

        started = await client.data("run", step_id="V1", gate="recent", seeds=SEEDS)
        assert started["detached"] is True and isinstance(started["pid"], int)
        waited = await client.data("wait", timeout=120.0)
        assert waited == {"done": True, "failed": []}
        assert await client.data("next") == cli_next(loop_repo)
        shown = await client.data("show", step_id="V1")
        assert [r["seed"] for r in shown["results"]] == ["1", "2", "3", "4"]
        assert shown == loop_repo.ok("show", "V1", "--json").json()

        concluded = await client.data(
            "conclude", step_id="V1", verdict="confirmed", next="try a wider network"
        )
        assert concluded == {"id": "V1", "commit": loop_repo.head(), "verdict": "confirmed"}
        assert await client.data("next") == cli_next(loop_repo)
        assert await client.data("status") == loop_repo.ok("status", "--json").json()
        logged = await client.data("log", limit=3)
        assert logged == {"items": loop_repo.ok("log", "-n", "3", "--json").json()}
        assert len(logged["items"]) == 3 and logged["items"][0]["kind"] == "conclude"
        report = await client.call("report")
        # A text tool's structured content is its text (its output schema says so).
        assert report.structured_content == {"text": loop_repo.ok("report").out}
        assert report.content[0].text == loop_repo.ok("report").out

    drive(loop_repo, tmp_path, steps)
    assert loop_repo.trailers()["Ledger-Transition"] == "conclude"
    assert loop_repo.git("status", "--porcelain") == ""


def test_a_confirmed_verdict_inside_noise_is_a_structured_refusal_naming_the_rule(
    loop_repo: Repo, tmp_path: Path
) -> None:
    for vid, change in (("V1", {}), ("V2", {"dropout": 0.29})):
        loop_repo.ok("register", vid, "--bet", f"{vid} raises the score", *_flags(REGISTRATION))
        if change:
            change_params(loop_repo, vid, **change)
        loop_repo.ok("run", vid, "--gate", "recent", "--seeds", SEEDS)
        if vid == "V1":
            loop_repo.ok("conclude", "V1", "--verdict", "confirmed", "--next", "nudge dropout")
    before = fingerprint(loop_repo.path)

    async def steps(client: Agent) -> None:
        error = await client.error("conclude", step_id="V2", verdict="confirmed", next="more")
        assert error["kind"] == "refused" and error["exit_code"] == 1
        assert error["rule"] == "verdict-contradicted"
        assert "within noise" in error["message"]
        assert "--override" in error["fix"]
        assert error["findings"][0]["rule"] == "verdict-contradicted"

    drive(loop_repo, tmp_path, steps)
    assert fingerprint(loop_repo.path) == before
    cli = loop_repo.run("conclude", "V2", "--verdict", "confirmed", "--next", "more")
    assert cli.code == 1 and "[verdict-contradicted]" in cli.err
    assert fingerprint(loop_repo.path) == before


def test_a_refusal_by_a_rule_carries_the_rule_and_its_fix(loop_repo: Repo, tmp_path: Path) -> None:
    loop_repo.ok("register", "V1", "--bet", "A bet", *_flags(REGISTRATION))
    before = fingerprint(loop_repo.path)
    cli = loop_repo.run("register", "V2", "--bet", "Another bet", *_flags(REGISTRATION))
    assert cli.code == 1

    async def steps(client: Agent) -> None:
        error = await client.error("register", step_id="V2", bet="Another bet", **REGISTRATION)
        assert error["kind"] == "refused" and error["rule"] == "one-open-version"
        assert error["fix"] == "git ledger conclude V1 --verdict ... --next ..."
        assert error["findings"] == [
            {
                "rule": "one-open-version",
                "message": error["findings"][0]["message"],
                "fix": error["fix"],
            }
        ]
        assert f"[{error['rule']}]" in cli.err

    drive(loop_repo, tmp_path, steps)
    assert fingerprint(loop_repo.path) == before


def test_several_findings_are_one_line_for_people_and_each_finding_for_machines() -> None:
    findings = [
        Finding("one-open-version", "V1 is still open", "conclude V1"),
        Finding("reflection-due", "a reflection is due (stagnation)"),
    ]
    error = Refused.of(findings)
    assert error.one_line() == "; ".join(f.line() for f in findings)  # the CLI's line
    data = error.as_dict()
    assert data["kind"] == "refused" and data["exit_code"] == 1
    assert data["rule"] == "one-open-version" and data["fix"] == "conclude V1"
    assert data["findings"] == [
        {"rule": "one-open-version", "message": "V1 is still open", "fix": "conclude V1"},
        {"rule": "reflection-due", "message": "a reflection is due (stagnation)", "fix": None},
    ]
    tagged = Refused("[below-mde] --effect 1 is below the MDE", "bet bigger").as_dict()
    assert tagged["rule"] == "below-mde" and tagged["fix"] == "bet bigger"
    assert BadInput("ledger.toml: [run] command token").as_dict()["rule"] is None


def test_record_reads_a_results_file_relative_to_the_servers_directory(
    loop_repo: Repo, tmp_path: Path
) -> None:
    loop_repo.ok("register", "V1", "--bet", "A bet", *_flags(REGISTRATION))
    results = loop_repo.write("measured/seed-7.json", '{"score": 91.5, "loss": 0.085}')
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "measured").mkdir()  # the client's directory does not count
    (tmp_path / "elsewhere" / "measured" / "seed-7.json").write_text('{"score": 1.0}')

    async def steps(client: Agent) -> None:
        recorded = await client.data(
            "record", step_id="V1", gate="recent", seed="7", file="measured/seed-7.json"
        )
        assert recorded["path"] == "training_log/results/V1/recent/seed-7.json"
        assert recorded["commit"] == loop_repo.head()

    drive(loop_repo, tmp_path, steps)
    stored = json.loads(loop_repo.git("show", "HEAD:training_log/results/V1/recent/seed-7.json"))
    assert stored["metrics"]["score"] == 91.5
    assert stored["provenance"]["source_sha256"] == hashlib.sha256(results.read_bytes()).hexdigest()


def test_bad_arguments_and_paths_outside_the_repository_are_bad_input(
    loop_repo: Repo, tmp_path: Path
) -> None:
    loop_repo.ok("register", "V1", "--bet", "A bet", *_flags(REGISTRATION))
    outside = tmp_path / "outside.json"
    outside.write_text('{"score": 1.0}')
    (loop_repo.path / "escape.json").symlink_to(outside)
    loop_repo.commit_all("chore: a link")
    before = fingerprint(loop_repo.path)

    async def steps(client: Agent) -> None:
        for path in (str(outside), "../outside.json", "escape.json"):
            error = await client.error("record", step_id="V1", gate="recent", seed="1", file=path)
            assert error["kind"] == "bad-input" and error["exit_code"] == 2
            assert "outside the repository" in error["message"]
        for arguments in (
            {"step_id": "V1", "gate": "recent", "seeds": "1", "bogus": 1},  # unknown
            {"step_id": "V1", "gate": "recent", "replicates": "two"},  # wrong type
            {"step_id": "V1", "gate": "recent", "replicates": 0},  # below the CLI's range
            {"step_id": "V1", "gate": "nope", "seeds": "1"},  # the command's own check
        ):
            error = await client.error("run", **arguments)
            assert error["kind"] == "bad-input" and error["exit_code"] == 2, arguments
        error = await client.error("conclude", step_id="V1", verdict="maybe", next="x")
        assert error["kind"] == "bad-input" and "confirmed" in error["message"]
        error = await client.error("show", step_id="--help")
        assert error["kind"] == "bad-input"

    drive(loop_repo, tmp_path, steps)
    assert fingerprint(loop_repo.path) == before


# The test plants the bug itself: a wrapper process breaks one verb, then serves
# through the real entry point (the program has no crash switch).
BROKEN_SERVER = """\
import sys, ledger.cli.status as verb
def broken(*args, **kwargs):
    raise RuntimeError("a bug")
verb.run_status = broken
from ledger.cli.app import main
main(["-C", sys.argv[1], "mcp"])
"""


def test_a_bug_in_a_verb_is_an_internal_error_and_the_server_lives_on(
    loop_repo: Repo, tmp_path: Path
) -> None:
    async def main() -> None:
        server = StdioServerParameters(
            command=sys.executable,
            args=["-c", BROKEN_SERVER, str(loop_repo.path)],
            env=dict(os.environ),
            cwd=tmp_path,
        )
        async with stdio_client(server) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            client = Agent(session)
            error = await client.error("status")
            assert error["kind"] == "internal" and error["exit_code"] == 3
            assert "RuntimeError: a bug" in error["message"]
            assert "last-error.log" in error["message"]
            assert await client.data("next") == cli_next(loop_repo)  # the next call is served

    anyio.run(main)
    log = loop_repo.path / ".git/ledger/last-error.log"
    assert "RuntimeError: a bug" in log.read_text()


def test_entries_are_resources_read_from_the_committed_tree(
    loop_repo: Repo, tmp_path: Path
) -> None:
    loop_repo.ok("register", "V1", "--bet", "A bet", *_flags(REGISTRATION))
    loop_repo.ok("run", "V1", "--gate", "recent", "--seeds", "1")
    version_path = loop_repo.ok("show", "V1", "--json").json()["path"]
    committed = loop_repo.git("show", f"HEAD:{version_path}")
    result_path = "training_log/results/V1/recent/seed-1.json"
    (loop_repo.path / version_path).write_text("edited, not committed\n")

    async def steps(client: Agent) -> None:
        listed = await client.session.list_resources()
        assert listed.next_cursor is None  # one page
        uris = {str(r.uri) for r in listed.resources}
        assert {"ledger://version/V1", "ledger://result/V1/recent/seed-1"} <= uris
        read = await client.session.read_resource("ledger://version/V1")
        assert read.contents[0].text == committed  # type: ignore[union-attr]
        read = await client.session.read_resource("ledger://result/V1/recent/seed-1")
        text = read.contents[0].text  # type: ignore[union-attr]
        assert text == loop_repo.git("show", f"HEAD:{result_path}")
        assert read.contents[0].mime_type == "application/json"
        templates = await client.session.list_resource_templates()
        assert {t.uri_template for t in templates.resource_templates} == {
            "ledger://version/{id}",
            "ledger://reflection/{id}",
            "ledger://result/{id}",
        }
        with pytest.raises(Exception, match="no version 'V9'"):
            await client.session.read_resource("ledger://version/V9")

    drive(loop_repo, tmp_path, steps)


def test_served_tools_are_the_schemas_derived_from_the_cli_with_their_hints(
    loop_repo: Repo, tmp_path: Path
) -> None:
    async def steps(client: Agent) -> None:
        listed = {t.name: t for t in (await client.session.list_tools()).tools}
        expected = {
            spec.name: (spec, command)
            for spec, command in mcptools.available(cli)
            if spec.loop in (None, "versions")
        }
        assert set(listed) == set(expected)
        for name, (spec, command) in expected.items():
            tool = listed[name]
            assert tool.input_schema == mcptools.input_schema(spec, command)
            assert tool.annotations is not None
            assert tool.annotations.read_only_hint is (spec.kind == "read")
            assert tool.annotations.destructive_hint is (spec.kind == "destructive")

    drive(loop_repo, tmp_path, steps)


BLOCKING = """\
import json, os, sys, time
while not os.path.exists("release"):
    time.sleep(0.05)
with open(sys.argv[1], "w") as handle:
    json.dump({"score": 1.0}, handle)
"""


def test_a_blocking_wait_does_not_hold_up_other_calls(bare_repo: Repo, tmp_path: Path) -> None:
    bare_repo.write("block.py", BLOCKING)
    command = json.dumps([sys.executable, "block.py", "{out}", "{seed}"])
    loop_repo = setup_loop(
        bare_repo,
        f'\n[gates.blocked]\nmetric = "score"\nnoise_floor = 0.5\ncommand = {command}\n'
        '[gates.blocked.metrics]\nscore = "$.score"\n',
    )
    loop_repo.ok("register", "V1", "--bet", "A bet", *_flags({**REGISTRATION, "gate": "blocked"}))

    async def steps(client: Agent) -> None:
        await client.data("run", step_id="V1", gate="blocked", seeds="1")
        waited: list[Any] = []

        async def wait() -> None:
            waited.append(await client.data("wait"))

        try:
            # A guard, not a timing: were calls serialised, status would never answer.
            with anyio.fail_after(120):
                async with anyio.create_task_group() as group:
                    group.start_soon(wait)
                    status = await client.data("status")
                    assert status["runs"]["running"] and not waited  # answered while wait blocks
                    (loop_repo.path / "release").write_text("")
        finally:
            (loop_repo.path / "release").write_text("")  # never leave the run blocked
        assert waited == [{"done": True, "failed": []}]

    drive(loop_repo, tmp_path, steps)
    assert loop_repo.ok("show", "V1", "--json").json()["results"][0]["seed"] == "1"


def test_a_campaign_ledger_lists_its_own_verbs_with_their_hints(
    bare_repo: Repo, tmp_path: Path
) -> None:
    bare_repo.ok("init", "--preset", "campaign")

    async def steps(client: Agent) -> None:
        listed = {t.name: t for t in (await client.session.list_tools()).tools}
        assert {"finish", "deliver", "candidate_record", "next", "status"} <= set(listed)
        assert not {"register", "conclude", "weights_revise"} & set(listed)
        for name in ("finish", "deliver"):
            hints = listed[name].annotations
            assert hints is not None and hints.destructive_hint is True
        assert await client.data("next") == cli_next(bare_repo)

    drive(bare_repo, tmp_path, steps)


def test_a_check_that_finds_something_returns_its_json_and_exit_code_not_an_error(
    bare_repo: Repo, tmp_path: Path
) -> None:
    bare_repo.ok("init", "--preset", "batches")
    args = {"fidelity_rate": 0.1, "mono": "true", "endpoint": "true"}
    cli = bare_repo.run("gate", "topic", *_flags({k: str(v) for k, v in args.items()}), "--json")
    assert cli.code == 1

    async def steps(client: Agent) -> None:
        result = await client.call("gate_topic", **args)
        assert result.structured_content == cli.json()
        assert result.meta == {"git-ledger/exit_code": 1}
        assert "exit 1" in result.content[1].text

    drive(bare_repo, tmp_path, steps)


# --- the schemas, without a server -----------------------------------------------------


def _sample(schema: dict[str, Any], name: str) -> Any:
    """A value of the schema's type that the CLI accepts."""
    if schema["type"] == "array":
        return [_sample(schema["items"], name), _sample(schema["items"], name)]
    if "enum" in schema:
        return schema["enum"][-1]
    return {
        "object": {name: 1.5},
        "string": f"{name}-value",
        "integer": max(3, schema.get("minimum", 0)),
        "number": 2.5,
        "boolean": True,
    }[schema["type"]]


@pytest.mark.parametrize(
    "spec", [spec for spec, _ in mcptools.available(cli)], ids=lambda s: s.name
)
def test_every_tools_schema_matches_its_cli_options(
    spec: mcptools.ToolSpec, tmp_path: Path
) -> None:
    command = mcptools.command_for(spec, cli)
    assert command is not None, f"{spec.command} is not a CLI command"
    schema = mcptools.input_schema(spec, command)
    props = schema["properties"]
    params = {p.name: p for p in command.params}
    # What a tool leaves out is declared, and names real options.
    assert spec.hidden <= set(params)
    taken = [p for p in command.params if p.name not in spec.hidden | {"as_json"}]
    assert list(props) == [mcptools.prop_name(p) for p in taken]
    for param in taken:
        prop = props[mcptools.prop_name(param)]
        if isinstance(param, click.Option):
            long = [o for o in param.opts if o.startswith("--")]
            assert not long or long[0][2:].replace("-", "_") == mcptools.prop_name(param)
            assert (param.help or "") in prop.get("description", "")
        item = prop["items"] if param.multiple or param.nargs == -1 else prop
        assert prop["type"] == ("array" if param.multiple or param.nargs == -1 else item["type"])
        if isinstance(param.type, click.Choice):
            assert item["enum"] == list(param.type.choices)
        if isinstance(param.type, click.IntRange) and param.type.min is not None:
            assert item["minimum"] == param.type.min
        assert (mcptools.prop_name(param) in schema["required"]) is bool(param.required)
    assert schema["additionalProperties"] is False

    # Round trip: a value for every property reaches the command's own parser intact.
    arguments = {name: _sample(prop, name) for name, prop in props.items()}
    (tmp_path / "repo").mkdir()
    argv = mcptools.argv_for(spec, command, arguments, tmp_path / "repo", tmp_path)
    ctx = command.make_context(spec.name, argv[len(spec.command) :], resilient_parsing=False)
    for param in taken:
        value = arguments[mcptools.prop_name(param)]
        got = ctx.params[param.name or ""]
        if isinstance(param.type, click.Path):
            value = (
                [str((tmp_path / "repo" / v).resolve()) for v in value]
                if isinstance(value, list)
                else str((tmp_path / "repo" / value).resolve())
            )
            got = [str(v) for v in got] if isinstance(got, tuple) else str(got)
        if props[mcptools.prop_name(param)]["type"] == "object":
            got = json.loads(got)  # the command takes the object's JSON text
        assert (list(got) if isinstance(got, tuple) else got) == value, param.name
    for token in spec.fixed:
        assert token in argv


GOLDEN = Path(__file__).with_name("mcp_tools.golden.json")


def served_tools() -> list[dict[str, Any]]:
    """What ``tools/list`` serves (every loop's tools) and what the server does with each."""
    loops = {spec.name: spec for spec, _ in mcptools.available(cli)}
    out = []
    for tool in mcpsdk.tools(None, cli):
        spec = loops[tool.name]
        out.append(
            {
                **tool.model_dump(by_alias=True, exclude_none=True, mode="json"),
                "loop": spec.loop,
                "output": spec.output,
                "fixed": list(spec.fixed),
            }
        )
    return sorted(out, key=lambda t: t["name"])


def test_the_served_tools_are_the_golden_list() -> None:
    """Names, schemas, descriptions, hints and loops as they were when the tool table was
    written by hand (tests/mcp_tools.golden.json): deriving them from the verbs'
    declarations changed nothing an agent sees. A deliberate change rewrites the file."""
    assert served_tools() == json.loads(GOLDEN.read_text())


def test_resources_are_listed_in_pages_that_cover_every_entry_once() -> None:
    items = list(range(25))
    seen: list[int] = []
    cursor: str | None = None
    while True:
        shown, cursor = mcpsdk.page(items, cursor, size=10)
        seen += shown
        if cursor is None:
            break
    assert seen == items
    assert mcpsdk.page(items, None, size=25) == (items, None)
    with pytest.raises(Exception, match="invalid cursor"):
        mcpsdk.page(items, "abc")


def test_verbs_that_cannot_be_undone_carry_the_destructive_hint() -> None:
    hints = {spec.name: mcpsdk.hints(spec) for spec, _ in mcptools.available(cli)}
    for name in ("conclude", "matrix_conclude", "finish", "deliver"):
        assert hints[name].destructive_hint is True and hints[name].read_only_hint is False
    for name in ("status", "next", "log", "show", "baseline", "diff", "triggers", "report"):
        assert hints[name].read_only_hint is True and hints[name].destructive_hint is False
    issue = {"register", "record", "run", "wait", "reflect", "matrix_status"}
    assert issue <= set(hints)
    # Every hint is the verb's declaration, open-world included: what starts a configured
    # program (run, candidate record --run) or talks to a remote (register and matrix new
    # push, matrix status --fetch fetches, matrix clean --remote deletes remote branches).
    for spec, _ in mcptools.available(cli):
        hint = hints[spec.name]
        assert hint.read_only_hint is (spec.kind == "read"), spec.name
        assert hint.destructive_hint is (spec.kind == "destructive"), spec.name
        assert hint.open_world_hint is spec.open_world, spec.name
    assert sorted(name for name, hint in hints.items() if hint.open_world_hint) == [
        "candidate_record",
        "matrix_clean",
        "matrix_new",
        "matrix_status",
        "register",
        "run",
    ]


# Where `next --json` gets its commands, for every preset: the loops' own steps and
# what status adds to them (machine problems first, then what only git can say).
NEXT_SOURCES = (
    "ledger/presets/versions/nextstep.py",
    "ledger/presets/versions/preset.py",
    "ledger/presets/versions/fresh.py",
    "ledger/presets/campaign/preset.py",
    "ledger/presets/batches/preset.py",
    "ledger/cli/status.py",
    "ledger/core/machine.py",
)
VERB = re.compile(r"git ledger ([a-z][a-z-]*)(?: ([a-z][a-z-]*))?")


# What builds a proposal of `next`: its one builder and the shapes it replaces.
PROPOSES = re.compile(r'"action":|(?<![\w.])(?:_?action|NextAction|proposal)\(')


def test_every_verb_next_can_name_is_served_as_a_tool() -> None:
    served = {spec.command for spec, _ in mcptools.available(cli)}
    # Every module that builds a proposal is one of the sources (a new one cannot be
    # missed), and every module of a preset is scanned too: a loop's refusals name the
    # verb that clears them, and an agent must be able to call it.
    package = ROOT / "ledger"
    builders = {
        path.relative_to(ROOT).as_posix()
        for path in package.rglob("*.py")
        if PROPOSES.search(path.read_text()) and path != package / "core" / "actions.py"
    }
    assert builders and builders <= set(NEXT_SOURCES), sorted(builders - set(NEXT_SOURCES))
    presets = {path.relative_to(ROOT).as_posix() for path in (package / "presets").rglob("*.py")}
    named = {
        match.groups()
        for rel in sorted(set(NEXT_SOURCES) | presets)
        for match in VERB.finditer((ROOT / rel).read_text())
        if match.group(1) != "verbs"  # prose: "regenerate it with the git ledger verbs"
    }
    assert len(named) > 20, named  # the scan finds the commands (a check that cannot fail)
    groups = {words[0] for words in served if len(words) > 1}
    missing = sorted(
        " ".join(w for w in words if w)
        for words in named
        if (words[0],) not in served
        and words not in served
        # A group named alone ("git ledger matrix") is served through its verbs.
        and not (words[1] is None and words[0] in groups)
    )
    assert missing == []
    # What next and the refusals send an agent to first, in a ledger or before one.
    for verb in (("init",), ("doctor",), ("close",), ("matrix", "join")):
        assert verb in served, verb


def test_the_readme_names_every_tool_and_every_destructive_one() -> None:
    readme = (ROOT / "README.md").read_text()
    section = readme[readme.index("## Agents: the MCP server") :]
    section = section[: section.index("\n## ")]
    tools_bullet = section[section.index("**Tools are the verbs.**") : section.index("**Hints.**")]
    hints_bullet = section[section.index("**Hints.**") : section.index("**Errors are data.**")]
    named = set(re.findall(r"`([a-z_]+)`", tools_bullet))
    served = [spec for spec, _ in mcptools.available(cli)]
    assert {spec.name for spec in served} <= named
    destructive = set(re.findall(r"`([a-z_]+)`", hints_bullet)) - {"readOnlyHint"}
    assert destructive == {spec.name for spec in served if spec.kind == "destructive"}


def test_without_the_extra_mcp_exits_2_naming_it(
    loop_repo: Repo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = tmp_path / "no-sdk" / "mcp"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text(
        "raise ModuleNotFoundError(\"No module named 'mcp'\", name='mcp')\n"
    )
    monkeypatch.setenv("PYTHONPATH", f"{fake.parent}{os.pathsep}{os.environ['PYTHONPATH']}")
    before = fingerprint(loop_repo.path)
    result = ledger(loop_repo.path, "mcp")
    assert result.code == 2
    assert "pip install 'git-ledger[mcp]'" in result.err
    assert len(result.err.strip().splitlines()) == 1
    assert fingerprint(loop_repo.path) == before


def _flags(arguments: dict[str, str]) -> list[str]:
    return [
        token for key, value in arguments.items() for token in (f"--{key.replace('_', '-')}", value)
    ]


def test_a_flag_defaults_to_off_in_its_schema_unless_the_verb_turns_it_on() -> None:
    """click's own "unset" default is truthy: a schema must not tell an agent that
    ``doctor`` fixes (or any flag is on) when it is called without it."""
    flags = 0
    for spec, command in mcptools.available(cli):
        props = mcptools.input_schema(spec, command)["properties"]
        for param in mcptools.tool_params(spec, command):
            if isinstance(param, click.Option) and param.is_flag:
                flags += 1
                prop = props[mcptools.prop_name(param)]
                if param.default is None:  # --x/--no-x unsaid: the command decides
                    assert "default" not in prop and param.secondary_opts
                    continue
                assert prop["default"] is (param.default is True)
    assert flags > 10
    doctor = {spec.name: (spec, c) for spec, c in mcptools.available(cli)}["doctor"]
    assert mcptools.input_schema(*doctor)["properties"]["fix"]["default"] is False
