"""The entry cache is a log: a whole first line, then appended lines of new entries.

What must hold whatever happened to the file: a reader gets every entry this
code wrote that survived, never an entry another program wrote, and a torn
line costs only its own entries.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from ledger.core import cache, caches
from ledger.core.cache import FILE, MAX_LINES, EntryCache
from tests.helpers import Repo, measure, register

MINE = caches.key(FILE)  # the key of this code's entry cache


@pytest.fixture(autouse=True)
def fresh_process() -> None:
    cache._LOADED.clear()


def reread(state_dir: Path) -> EntryCache:
    """The cache as the next process sees it."""
    cache._LOADED.clear()
    return EntryCache(state_dir)


def lines(state_dir: Path) -> list[str]:
    text = (state_dir / "cache" / "entries.json").read_text()
    return [line for line in text.split("\n") if line]


def put_and_save(state_dir: Path, entries: dict[str, object]) -> None:
    c = reread(state_dir)
    for key, value in entries.items():
        c.put(key, value)
    c.save()


def test_a_save_appends_only_the_new_entries(tmp_path: Path) -> None:
    put_and_save(tmp_path, {f"result:{i:040x}": {"model": {"n": i}} for i in range(50)})
    first = lines(tmp_path)
    assert len(first) == 1
    put_and_save(tmp_path, {"version:" + "f" * 40: {"model": {"id": "V1"}}})
    after = lines(tmp_path)
    assert after[0] == first[0] and len(after) == 2
    assert json.loads(after[1]) == {
        "key": MINE,
        "data": {"version:" + "f" * 40: {"model": {"id": "V1"}}},
    }
    c = reread(tmp_path)
    assert c.get("result:" + f"{7:040x}") == {"model": {"n": 7}}
    assert c.get("version:" + "f" * 40) == {"model": {"id": "V1"}}


def test_a_torn_append_costs_only_its_own_entries(tmp_path: Path) -> None:
    put_and_save(tmp_path, {"a": 1})
    path = tmp_path / "cache" / "entries.json"
    with path.open("a") as handle:  # a crash in the middle of an append
        handle.write('\n{"key": "' + MINE + '", "data": {"torn": ')
    put_and_save(tmp_path, {"b": 2})
    c = reread(tmp_path)
    assert (c.get("a"), c.get("b"), c.get("torn")) == (1, 2, None)


@pytest.mark.parametrize(
    "theirs",
    [
        {"key": "another program", "data": {"a": "theirs"}},
        {"version": "0.1", "entries": {"a": "theirs"}},  # the format before ledger.core.caches
    ],
    ids=["another-key", "older-format"],
)
def test_another_programs_cache_is_never_believed(tmp_path: Path, theirs: object) -> None:
    path = tmp_path / "cache" / "entries.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(theirs))
    c = reread(tmp_path)
    assert c.get("a") is None
    c.put("b", 2)
    c.save()
    assert len(lines(tmp_path)) == 1  # replaced whole, not appended to
    # A line another program appended to ours is skipped too.
    with path.open("a") as handle:
        handle.write("\n" + json.dumps({"key": "another program", "data": {"b": 9}}) + "\n")
    assert reread(tmp_path).get("b") == 2


def test_after_max_lines_appends_the_cache_is_written_whole_again(tmp_path: Path) -> None:
    for i in range(MAX_LINES + 1):
        put_and_save(tmp_path, {f"k{i}": i})
    assert len(lines(tmp_path)) <= MAX_LINES
    put_and_save(tmp_path, {"last": True})
    c = reread(tmp_path)
    assert [c.get(f"k{i}") for i in range(MAX_LINES + 1)] == list(range(MAX_LINES + 1))
    assert c.get("last") is True


def test_an_append_never_writes_through_a_planted_link(tmp_path: Path) -> None:
    put_and_save(tmp_path, {"a": 1})
    path = tmp_path / "cache" / "entries.json"
    outside = tmp_path / "outside"
    outside.write_text(path.read_text())
    path.unlink()
    path.symlink_to(outside)
    before = outside.read_text()
    put_and_save(tmp_path, {"b": 2})
    assert outside.read_text() == before


def test_a_short_replay_parses_its_entries_without_reading_a_large_cache(
    repo: Repo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """verify after a commit or two parses the entries they changed itself: reading the
    whole cache (megabytes at 1,000 steps) cost more than it saved. What it finds is
    what a replay through the cache finds (here: a result edited past the hooks)."""
    import importlib

    from ledger.core.context import open_context
    from ledger.core.verify import engine, verify

    replay = importlib.import_module("ledger.core.verify.replay")  # the module, not the function

    assert register(repo, "V1").code == 0
    measure(repo, "V1", "recent", 10.0, seeds=(1, 2))
    repo.ok("status")  # the entry cache, as a ledger in use has it
    repo.ok("verify")  # the replay's own cache, at this tip
    state_dir = repo.path / ".git" / "ledger"
    padding = {f"result:{i:040x}": {"model": {"pad": "x" * 1000}} for i in range(200)}
    put_and_save(state_dir, padding)  # a cache far larger than one path's parse
    result = repo.path / "training_log" / "results" / "V1" / "recent" / "seed-1.json"
    # The score itself (a "10" somewhere in the file was there only by the commit ids' chance).
    data = json.loads(result.read_text())
    data["metrics"]["score"] = 99.0
    result.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    repo.commit_all("edit a result past the hooks", "--no-verify")

    def findings() -> list[tuple[str, str, str]]:
        ctx = open_context(repo.path)
        report = verify(ctx.store, ctx.config, ctx.config_file)
        return sorted((f.commit, f.path, f.rule) for f in report.findings)

    entries = str(state_dir / "cache" / FILE)
    cache._LOADED.clear()
    short = findings()
    assert entries not in cache._LOADED  # never read
    assert "append-only-results" in {rule for _, _, rule in short}, short
    # The same commit replayed through the cache: the same findings.
    (state_dir / engine.CACHE_FILE).unlink()
    (state_dir / "verify-report.json").unlink(missing_ok=True)
    monkeypatch.setattr(replay, "PATH_PARSE_BYTES", 10**12)
    cache._LOADED.clear()
    assert findings() == short
    assert entries in cache._LOADED


def test_a_state_loaded_with_the_previous_one_is_the_state_loaded_afresh(repo: Repo) -> None:
    """load_state given the state of an earlier commit reuses what that one built of the
    files that did not change (and its trees' listings): the state it gives after
    changes (an entry added, edited, deleted, one turned into a problem, the reflection
    threshold changed) is the state loaded without it."""
    import dataclasses

    from ledger.core import state as state_module
    from ledger.core.context import open_context
    from ledger.core.model.entries import REFLECTION_SECTIONS

    def summary(s: state_module.LedgerState) -> tuple[object, ...]:
        return (
            [(v.id, v.front.model_dump(), v.path, v.hypothesis) for v in s.versions],
            sorted((r.path, r.version, r.gate, r.metrics) for r in s.results),
            [(r.path, r.missing) for r in s.reflections],
            sorted(s.problems),
            s.files,
        )

    assert register(repo, "V1").code == 0
    measure(repo, "V1", "recent", 10.0, seeds=(1, 2))
    first = open_context(repo.path).state()
    measure(repo, "V1", "recent", 11.0, seeds=(3,))
    results = repo.path / "training_log" / "results" / "V1" / "recent"
    (results / "seed-2.json").unlink()
    (results / "seed-9.json").write_text((results / "seed-1.json").read_text())  # misplaced
    sections = "".join(
        f"## {title}\n\nFive distinct words about {title.lower()}.\n\n"
        for title in REFLECTION_SECTIONS
    )
    repo.write(
        "training_log/REFLECTION_V1.md",
        f"---\nid: REFLECTION_V1\nafter: V1\n---\n\n{sections}",
    )
    repo.commit_all("hand edits past the hooks", "--no-verify")
    # As a verb holds it: the state with its configuration frozen (dataclasses.replace).
    again = open_context(repo.path).state(previous=dataclasses.replace(first))
    # Unchanged files were not built again: the very objects of the first load.
    assert again.versions[0] is first.versions[0]
    assert summary(again) == summary(open_context(repo.path).state())
    config = (repo.path / "ledger.toml").read_text()
    repo.write("ledger.toml", config.replace("[triggers]", "[triggers]\nreflection_min_words = 7"))
    repo.commit_all("config: a higher bar for reflections", "--no-verify")
    third = open_context(repo.path).state(previous=again)
    assert summary(third) == summary(open_context(repo.path).state())
    # The reflection was complete under the first bar and is not under the second.
    assert again.reflections[0].missing == ()
    assert third.reflections[0].missing


def test_a_transition_keeps_the_entries_it_wrote_for_the_next_reader(repo: Repo) -> None:
    """register and record put what they wrote in the entry cache, parsed as a reader
    parses it: the status after them parses nothing (the cache gains no line), and so
    never imports PyYAML (a tenth of a cold read's imports)."""
    from ledger.core.state import parse_entry

    state_dir = repo.path / ".git" / "ledger"
    repo.ok("status")  # the ledger as it was: every entry read once
    assert register(repo, "V1").code == 0
    measure(repo, "V1", "recent", 10.0, seeds=(1, 2))
    kept = reread(state_dir)
    written = {
        "version": ["training_log/V1.md"],
        "result": [f"training_log/results/V1/recent/seed-{s}.json" for s in (1, 2)],
    }
    for kind, paths in written.items():
        for path in paths:
            blob = repo.git("rev-parse", f"HEAD:{path}").strip()
            data = (repo.path / path).read_bytes()
            assert kept.get(f"{kind}:{blob}") == parse_entry(kind, data, path), path
    before = lines(state_dir)
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "ledger", "status", "--json"],
        cwd=repo.path, capture_output=True, text=True, check=True,
    )  # fmt: skip
    imported = {line.rsplit("|", 1)[-1].strip() for line in proc.stderr.splitlines()}
    assert "pydantic" in imported  # a cold status: it loaded the state
    assert "yaml" not in imported
    assert lines(state_dir) == before


def test_a_transition_appends_what_it_wrote_without_reading_the_cache(repo: Repo) -> None:
    """A process that never read the entry cache (record reads one version) appends the
    entries it wrote to it: reading megabytes at 10,000 steps to add two is what the
    log avoids."""
    from ledger.core.context import keep_entries, open_context
    from ledger.core.state import parse_entry

    assert register(repo, "V1").code == 0
    repo.ok("status")
    state_dir = repo.path / ".git" / "ledger"
    put_and_save(state_dir, {f"result:{i:040x}": {"model": {"pad": "x"}} for i in range(50)})
    before = lines(state_dir)
    cache._LOADED.clear()
    ctx = open_context(repo.path)
    data = (repo.path / "training_log/V1.md").read_bytes().replace(b"A bet", b"A bet again")
    keep_entries(ctx.store, ctx.config, {"training_log/V1.md": data, "notes.txt": b"x"})
    assert str(state_dir / "cache" / FILE) not in cache._LOADED  # never read
    after = lines(state_dir)
    assert after[: len(before)] == before and len(after) == len(before) + 1
    blob = repo.git("hash-object", "--stdin", input=data.decode()).strip()
    assert reread(state_dir).get(f"version:{blob}") == parse_entry(
        "version", data, "training_log/V1.md"
    )
