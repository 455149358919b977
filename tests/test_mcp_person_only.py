"""Configuration that reaches outside the ledger is a person's to set, never an agent's.

A field that names a program, an argument list, a script or a place read or written
outside the ledger is marked where the configuration model declares it
(``ledger.core.model.config.PersonOnly``); the MCP server's ``config_set`` refuses every
key that sets one, or a table that holds one, from that declaration. The walk below
fails when a field that can hold a command or a path is added without a decision.
"""

from __future__ import annotations

import types
from collections.abc import Iterator
from typing import Any, Literal, Union, get_args, get_origin

import anyio
import pytest
from pydantic import BaseModel

from ledger.core.model.config import LedgerConfig, PersonOnly
from ledger.core.model.reach import marked_fields, person_only
from tests.helpers import Repo, fingerprint
from tests.test_i28_mcp_safety import server

# Every field that can hold text but names no program and no place: each says why.
# A new text field fails the walk until it is either marked PersonOnly where it is
# declared or listed here with its reason.
PLAIN_TEXT = {
    "ledger.id_prefix": "the letters of a step id",
    "gates.*.metric": "a metric's name",
    "gates.*.unit": "a unit to print",
    "gates.*.metrics.*.path": "a JSON path inside a results file, not a file",
    "gates.*.metrics.*.unit": "a unit to print",
    "gates.*.bar": "a mapping of statistic names to numbers",
    "stats.matrix_sigma": "cell counts to numbers",
    "hooks.free_paths": "globs a commit is judged by; nothing is read or run",
    "run.volatile_fields": "names of fields in a result",
    "campaign.target_metric": "a measurement's name",
    "campaign.measurements": "measurement names",
    "campaign.directions": "measurement names to higher/lower",
    "campaign.units": "units to print",
    "campaign.required_records": "measurement names",
    "campaign.scope": "globs a candidate's files are judged by; nothing is read or run",
}


def _unwrap(annotation: Any) -> Any:
    while True:
        if getattr(annotation, "__metadata__", None) is not None:
            annotation = annotation.__origin__
        elif get_origin(annotation) in (types.UnionType, Union) and type(None) in get_args(
            annotation
        ):
            (annotation,) = [a for a in get_args(annotation) if a is not type(None)]
        else:
            return annotation


def _holds_text(annotation: Any) -> bool:
    """Whether a value of this type can carry free text (a Literal cannot)."""
    annotation = _unwrap(annotation)
    if annotation is str:
        return True
    if get_origin(annotation) is Literal:
        return False
    return any(_holds_text(arg) for arg in get_args(annotation))


def _leaves(model: type[BaseModel], prefix: str = "") -> Iterator[tuple[str, Any, list[Any]]]:
    """(dotted key, annotation, metadata) of every field that is not itself a table."""
    for name, field in model.model_fields.items():
        yield from _leaf(f"{prefix}{name}", field.annotation, list(field.metadata))


def _leaf(key: str, annotation: Any, metadata: list[Any]) -> Iterator[tuple[str, Any, list[Any]]]:
    if getattr(annotation, "__metadata__", None) is not None:
        metadata = [*metadata, *annotation.__metadata__]
    inner = _unwrap(annotation)
    if isinstance(inner, type) and issubclass(inner, BaseModel):
        yield from _leaves(inner, f"{key}.")
    elif get_origin(inner) is dict and _is_table(get_args(inner)[1]):
        yield from _leaf(f"{key}.*", get_args(inner)[1], metadata)
    else:
        yield key, annotation, metadata


def _is_table(annotation: Any) -> bool:
    inner = _unwrap(annotation)
    return isinstance(inner, type) and issubclass(inner, BaseModel)


def test_every_field_that_can_name_a_command_or_a_path_is_decided() -> None:
    undecided = []
    for key, annotation, metadata in _leaves(LedgerConfig):
        marked = any(isinstance(m, PersonOnly) for m in metadata)
        if _holds_text(annotation) and not marked and key not in PLAIN_TEXT:
            undecided.append(key)
        assert not (marked and key in PLAIN_TEXT), f"{key} is both marked and plain"
    assert not undecided, (
        f"fields that can hold a command or a path, neither marked PersonOnly in "
        f"ledger/core/model/config.py nor listed as plain text here: {undecided}"
    )
    assert set(PLAIN_TEXT) <= {key for key, *_ in _leaves(LedgerConfig)}, "a stale entry"


def test_the_marks_cover_what_runs_or_reads_in_every_loop() -> None:
    marked = {key for key, _ in marked_fields(LedgerConfig)}
    assert {
        "run.command",
        "run.output_dir",
        "gates.*.command",
        "campaign.run",
        "campaign.benchmark_script",
        "campaign.environment",
        "batches.forbidden_vocabulary",
    } <= marked


def _concrete(key: str) -> str:
    return key.replace("*", "recent")


def _keys() -> list[str]:
    """Every marked key, a value inside each free-key table, and each table above it."""
    out: set[str] = set()
    for key, _ in marked_fields(LedgerConfig):
        parts = _concrete(key).split(".")
        out.update(".".join(parts[:n]) for n in range(1, len(parts) + 1))
    out.add("campaign.environment.cc")
    out.add('"campaign"."run"')
    out.add(" campaign . benchmark_script ")
    return sorted(out)


@pytest.mark.parametrize("key", _keys())
def test_the_declaration_refuses_each_key_and_each_table_above_it(key: str) -> None:
    found = person_only(key)
    assert found is not None, key


@pytest.mark.parametrize(
    "key", ["stats.sigma_k", "gates.recent.noise_floor", "campaign.noise_floor", "nope.x"]
)
def test_a_number_is_not_a_persons(key: str) -> None:
    assert person_only(key) is None


def _value(key: str) -> str:
    leaf = key.strip().split(".")[-1].strip('"')
    if leaf in ("command", "run", "files", "owner_env", "cc"):
        return '["sh", "-c", "touch marker"]'
    if leaf in ("environment",):
        return '{cc = ["sh", "-c", "touch marker"]}'
    if "." not in key.strip():
        return '{command = ["sh", "-c", "touch marker"]}'
    return '"/etc/hostname"'


@pytest.mark.parametrize("preset", ["versions", "campaign", "batches"])
def test_config_set_of_every_command_or_path_key_is_refused_over_mcp(
    bare_repo: Repo, preset: str
) -> None:
    bare_repo.ok("init", "--preset", preset)
    before = fingerprint(bare_repo.path)
    refused: list[str] = []

    async def body() -> None:
        async with server(bare_repo) as client:
            for key in _keys():
                error = await client.error("config_set", key=key, value=_value(key), reason="r")
                assert error["kind"] == "refused", (key, error)
                assert error["rule"] == "mcp-person-only", (key, error)
                assert "ledger.toml" in error["fix"], error
                assert "\n" not in error["message"]
                refused.append(key)
            assert fingerprint(bare_repo.path) == before
            # A number is still the agent's to change, as a visible transition.
            done = await client.data("config_set", key="stats.alpha", value="0.01", reason="r")
            assert done["commit"] == bare_repo.head()

    anyio.run(body)
    assert "campaign.run" in refused and "campaign.benchmark_script" in refused
    assert not (bare_repo.path / "marker").exists()


def test_a_person_still_sets_a_command_on_the_command_line_with_a_reason(
    bare_repo: Repo,
) -> None:
    bare_repo.ok("init", "--preset", "campaign")
    bare_repo.ok(
        "config", "set", "campaign.run", '["python3", "bench.py"]', "--reason", "the bench"
    )
    text = (bare_repo.path / "ledger.toml").read_text()
    assert 'run = ["python3", "bench.py"]' in text
    assert bare_repo.trailers()["Ledger-Reason"] == "the bench"


def test_config_set_adds_the_table_a_file_lacks(bare_repo: Repo) -> None:
    """A campaign's ledger.toml has no [stats]: setting a key there adds the table (it
    was refused as 'cannot set in place', found by the walk of every key above)."""
    bare_repo.ok("init", "--preset", "campaign")
    bare_repo.ok("config", "set", "stats.alpha", "0.01", "--reason", "stricter")
    assert "[stats]\nalpha = 0.01" in (bare_repo.path / "ledger.toml").read_text()


def test_run_starts_only_the_command_on_record(bare_repo: Repo) -> None:
    """An uncommitted edit of [run] command (a file an agent may write) is not what a run
    starts: the run is refused until the configuration is committed, and nothing ran."""
    bare_repo.ok("init")
    bare_repo.ok("register", "V1", "--bet", "b", "--gate", "recent", "--files", "a.py",
                 "--falsifier", "f")  # fmt: skip
    marker = bare_repo.path.parent / "ran"
    toml = bare_repo.path / "ledger.toml"
    toml.write_text(toml.read_text() + f'\n[run]\ncommand = ["touch", "{marker}"]\n')
    done = bare_repo.run("run", "V1", "--gate", "recent", "--seeds", "1")
    assert done.code == 1 and "ledger.toml has uncommitted changes" in done.err, done.err
    assert not marker.exists()


@pytest.mark.parametrize("where", ["a/.git", "a/.GIT/b", "x/.ledger"])
def test_a_ledger_dir_inside_git_or_the_worktrees_is_bad_input(bare_repo: Repo, where: str) -> None:
    before = fingerprint(bare_repo.path)
    done = bare_repo.run("init", "--dir", where)
    assert done.code == 2 and "relative path inside the repository" in done.err, done.err
    assert fingerprint(bare_repo.path) == before
