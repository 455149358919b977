"""One derived-cache mechanism (ledger.core.caches): its key is the program's code plus
the inputs, a load believes only a record under that key, a save is atomic and never
fails a command. The entry and baseline caches are files of that one format."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ledger.core import baselinecache, cache, caches
from ledger.core.cache import EntryCache


def test_a_key_is_the_code_the_cache_and_the_inputs(monkeypatch: pytest.MonkeyPatch) -> None:
    one = caches.key("status", "config", "tree-a")
    assert one == caches.key("status", "config", "tree-a")
    assert (
        len(
            {one, caches.key("status", "config", "tree-b"), caches.key("other", "config", "tree-a")}
        )
        == 3
    )
    assert caches.key("a", "b\0c") != caches.key("a", "b", "c")  # inputs never run together
    monkeypatch.setattr(caches, "code_id", lambda: "an upgraded program")
    assert caches.key("status", "config", "tree-a") != one


def test_a_checkout_s_code_id_changes_with_any_module_and_nothing_else(tmp_path: Path) -> None:
    """In a checkout the caches' code id is every module's size and mtime: editing,
    adding or removing one, at any depth, is new code; bytecode, other files and a
    linked directory are not."""
    import importlib.util
    import os
    import shutil

    root = Path(__file__).resolve().parent.parent
    shutil.copytree(root / "ledger", tmp_path / "ledger", ignore=shutil.ignore_patterns("*.pyc"))
    (tmp_path / "pyproject.toml").write_text("")

    def code_id() -> str:
        """The copy's code id: its codeid module loaded afresh (code_id is cached)."""
        path = tmp_path / "ledger" / "core" / "codeid.py"
        spec = importlib.util.spec_from_file_location("copied_codeid", path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return str(module.code_id())

    deep = tmp_path / "ledger" / "core" / "verify" / "engine.py"
    first = code_id()
    assert len(first) == 16 and first == code_id()
    (tmp_path / "ledger" / "core" / "__pycache__").mkdir(exist_ok=True)
    (tmp_path / "ledger" / "core" / "__pycache__" / "x.py").write_text("cached\n")
    (tmp_path / "ledger" / "core" / "notes.txt").write_text("not code\n")
    (tmp_path / "ledger" / "linked").symlink_to(tmp_path / "ledger" / "core")
    assert code_id() == first
    stat = deep.stat()
    os.utime(deep, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    touched = code_id()
    assert touched != first
    deep.write_text(deep.read_text() + "\n")
    edited = code_id()
    assert edited not in (first, touched)
    (tmp_path / "ledger" / "presets" / "versions" / "added.py").write_text("")
    added = code_id()
    assert added not in (first, touched, edited)
    (tmp_path / "ledger" / "presets" / "versions" / "added.py").unlink()
    assert code_id() == edited
    (tmp_path / "pyproject.toml").unlink()  # an installed wheel: its version alone
    from ledger import __version__

    assert code_id() == __version__


def test_a_saved_record_reads_back_only_under_its_key_and_shape(tmp_path: Path) -> None:
    path = caches.path(tmp_path, "thing.json")
    assert path == str(tmp_path / "cache" / "thing.json")
    mine = caches.key("thing")
    assert caches.save(path, mine, {"a": [1, 2.5, None]})
    assert caches.load(path, mine, dict) == {"a": [1, 2.5, None]}
    assert caches.load(path, caches.key("thing", "other input"), dict) is None
    assert caches.load(path, mine, list) is None  # another shape than the reader expects


@pytest.mark.parametrize(
    "content",
    [
        b"",
        b"not json",
        b'{"key": "',  # torn
        b"\xff\xfe\x00garbage",  # not UTF-8
        b"[1, 2]",
        b'{"version": "0.1", "entries": {"a": 1}}',  # the format before this mechanism
        b'{"key": "another program", "data": {"a": 1}}',
    ],
    ids=["empty", "text", "torn", "binary", "list", "old-format", "foreign"],
)
def test_a_foreign_or_corrupt_file_is_never_believed(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "cache" / "thing.json"
    path.parent.mkdir()
    path.write_bytes(content)
    mine = caches.key("thing")
    assert caches.load(path, mine, dict) is None
    assert caches.recall(path, mine, "a", int) is None
    assert caches.read_log(path, mine, dict) == ([], 0)
    assert caches.save(path, mine, {"a": 2}) and caches.load(path, mine, dict) == {"a": 2}


def test_a_cache_that_cannot_be_written_only_says_so(tmp_path: Path) -> None:
    (tmp_path / "cache").write_text("a file where the cache dir should be")
    path = caches.path(tmp_path, "thing.json")
    assert caches.save(path, caches.key("thing"), {"a": 1}) is False
    assert caches.remember(path, caches.key("thing"), "a", 1, keep=2) is False
    assert caches.append(path, caches.key("thing"), {"a": 1}) is False
    assert caches.load(path, caches.key("thing"), dict) is None


def test_a_save_replaces_a_planted_link_and_an_append_refuses_it(tmp_path: Path) -> None:
    outside = tmp_path / "outside.json"
    outside.write_text("theirs")
    path = tmp_path / "cache" / "thing.json"
    path.parent.mkdir()
    path.symlink_to(outside)
    mine = caches.key("thing")
    assert caches.append(path, mine, {"a": 1}) is False
    assert caches.save(path, mine, {"a": 1})
    assert outside.read_text() == "theirs" and not path.is_symlink()


def test_remember_keeps_the_most_recent_answers(tmp_path: Path) -> None:
    path, mine = caches.path(tmp_path, "recent.json"), caches.key("recent")
    for item in ("a", "b", "c"):
        assert caches.remember(path, mine, item, {"n": item}, keep=2)
    assert caches.recall(path, mine, "a", dict) is None
    assert caches.recall(path, mine, "b", dict) == {"n": "b"}
    caches.remember(path, mine, "b", {"n": "b2"}, keep=2)  # refreshed: now the newest
    caches.remember(path, mine, "d", {"n": "d"}, keep=2)
    assert [caches.recall(path, mine, i, dict) for i in "bcd"] == [{"n": "b2"}, None, {"n": "d"}]
    assert caches.recall(path, mine, "d", list) is None


def test_a_log_reads_every_record_of_its_key_and_skips_the_rest(tmp_path: Path) -> None:
    path, mine = caches.path(tmp_path, "log.json"), caches.key("log")
    assert caches.append(path, mine, {"a": 1}) is False  # a log starts with a save
    assert caches.save(path, mine, {"a": 1})
    assert caches.append(path, mine, {"b": 2})
    with open(path, "a") as handle:
        handle.write('{"key": "' + mine + '", "data": {"torn": ')  # a crash mid-append
    assert caches.append(path, mine, {"c": 3})  # starts a line of its own
    with open(path, "a") as handle:
        handle.write(json.dumps({"key": "another program", "data": {"d": 4}}) + "\n")
    records, lines = caches.read_log(path, mine, dict)
    assert records == [{"a": 1}, {"b": 2}, {"c": 3}] and lines == 5


def test_the_entry_and_baseline_caches_are_files_of_the_one_format(tmp_path: Path) -> None:
    cache._LOADED.clear()
    entries = EntryCache(tmp_path)
    entries.put("blob:" + "a" * 40, {"model": {"id": "V1"}})
    entries.save()
    assert caches.load(entries.path, caches.key(cache.FILE), dict) == {
        "blob:" + "a" * 40: {"model": {"id": "V1"}}
    }
    baselinecache.save(str(tmp_path), "gate-config", ["h1", "h2"], ["V1", None])
    path = caches.path(tmp_path, baselinecache.FILE)
    assert caches.recall(path, caches.key(baselinecache.FILE), "gate-config", dict) == {
        "chain": ["h1", "h2"],
        "best": ["V1", None],
    }
    assert baselinecache.load(str(tmp_path), "gate-config") == (["h1", "h2"], ["V1", None])
    assert baselinecache.load(str(tmp_path), "another-config") == ([], [])
    cache._LOADED.clear()


def test_a_baseline_walk_of_another_shape_is_no_walk(tmp_path: Path) -> None:
    path = caches.path(tmp_path, baselinecache.FILE)
    mine = caches.key(baselinecache.FILE)
    caches.remember(path, mine, "short", {"chain": ["h1", "h2"], "best": ["V1"]}, keep=16)
    caches.remember(path, mine, "text", {"chain": "h1", "best": "V1"}, keep=16)
    assert baselinecache.load(str(tmp_path), "short") == ([], [])
    assert baselinecache.load(str(tmp_path), "text") == ([], [])
