"""One derived-cache mechanism (issue 25): every cache is read and written by
ledger.core.caches, and each cache ignores a file that is corrupt, foreign or from
other code.

The scan below holds the mechanism single: a module other than caches.py that
writes derived data itself (``write_atomic(..., durable=False)``, which repobase
keeps for caches) or that names the cache directory and does its own file I/O is
a second mechanism. Planted copies of the caches as they were before show the
scan can fail.
"""

from __future__ import annotations

import ast
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ledger.core import caches, statuscache, verifycache
from tests.helpers import Repo
from tests.test_campaign_batches import batch, camp, close_batch  # noqa: F401 (fixtures)

PACKAGE = Path(caches.__file__).resolve().parents[1]
MECHANISM = "ledger/core/caches.py"

# Writes of derived data outside caches.py that are not caches, each with why.
NOT_CACHES = {
    ("ledger/cli/demo.py", "_write"): "the demo's throwaway repository",
    ("ledger/hooks/fast.py", "add_trailers"): "the commit message git reads back",
    ("ledger/hooks/mergeviews.py", "merge_prose"): "scratch sides of a three-way merge",
    ("ledger/presets/campaign/commands/delivery.py", "deliver"): "a scratch clone",
}
RAW_IO = {"open", "os.open", "io.open", "json.load", "json.dump", "shutil.copy", "shutil.move"}
RAW_IO_METHODS = {"open", "read_text", "read_bytes", "write_text", "write_bytes"}


def _names_cache_dir(node: ast.AST) -> bool:
    """A path into the cache directory: ``caches.path(...)`` or a "cache" path component."""
    if isinstance(node, ast.Call):
        return ast.unparse(node.func) == "caches.path"
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        text = node.value.replace("\\", "/")
        return text == "cache" or text.startswith("cache/") or "/cache/" in text
    return False


def _does_raw_io(node: ast.AST) -> bool:
    if not isinstance(node, ast.Call):
        return False
    name = ast.unparse(node.func)
    if name in RAW_IO or name.endswith("write_atomic"):
        return True
    return isinstance(node.func, ast.Attribute) and node.func.attr in RAW_IO_METHODS


def _scopes(tree: ast.Module) -> list[tuple[str, list[ast.AST]]]:
    """Each function (by name) with the nodes of its own body; the module's top level."""
    found: list[tuple[str, list[ast.AST]]] = []
    top: list[ast.AST] = []

    def visit(node: ast.AST, name: str, into: list[ast.AST]) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                own: list[ast.AST] = []
                found.append((child.name, own))
                visit(child, child.name, own)
            else:
                into.append(child)
                visit(child, name, into)

    visit(tree, "<module>", top)
    return [("<module>", top), *found]


def rogue_caches(root: Path) -> dict[tuple[str, str], str]:
    """(module, function) -> what it does that only caches.py may do, for a package at root."""
    found: dict[tuple[str, str], str] = {}
    for path in sorted(root.rglob("*.py")):
        rel = f"ledger/{path.relative_to(root).as_posix()}"
        if rel == MECHANISM:
            continue
        for name, nodes in _scopes(ast.parse(path.read_text())):
            for node in nodes:
                if (
                    isinstance(node, ast.Call)
                    and ast.unparse(node.func).endswith("write_atomic")
                    and any(
                        k.arg == "durable"
                        and not (isinstance(k.value, ast.Constant) and k.value.value is True)
                        for k in node.keywords
                    )
                ):
                    found[(rel, name)] = "writes derived data itself"
            if any(_names_cache_dir(n) for n in nodes) and any(_does_raw_io(n) for n in nodes):
                found[(rel, name)] = "reads or writes the cache directory itself"
    return found


def test_only_caches_py_reads_and_writes_a_cache() -> None:
    found = rogue_caches(PACKAGE)
    assert {k: v for k, v in found.items() if k not in NOT_CACHES} == {}
    assert set(NOT_CACHES) - set(found) == set()  # the allowance is not stale either


# The caches as they were before they moved onto caches.py, trimmed to their I/O.
PLANTED = {
    "status": """
def put(state_dir, cache_key, value):
    path = str(state_dir / "cache" / "status.json")
    try:
        with open(path) as handle:
            data = json.load(handle)
    except (OSError, ValueError):
        data = {}
    data[cache_key] = value
    write_atomic(path, json.dumps(data), durable=False)
""",
    "status-reader": """
def get(state_dir, cache_key):
    with open(state_dir / "cache" / "status.json") as handle:
        return json.load(handle).get(cache_key)
""",
    "verify-report": """
def save(state_dir, common, tip, findings):
    data = {"rules": RULES_VERSION, "tip": tip, "findings": findings}
    write_atomic(os.path.join(state_dir, REPORT_FILE), json.dumps(data), durable=False)
""",
    "scipy-answers": """
class _Answers:
    def put(self, question, answer):
        text = json.dumps({"key": self._key(), "answers": {question: answer}})
        write_atomic(self.path, text, durable=False)
""",
    "hook-lines": """
def _write_cache(path, text):
    repobase.write_atomic(path, text, durable=False)
""",
    "pathlib-writer": """
def save(state_dir, text):
    caches.path(state_dir, "mine.json")
    (state_dir / "cache" / "mine.json").write_text(text)
""",
}


@pytest.mark.parametrize("name", sorted(PLANTED))
def test_a_planted_cache_of_its_own_is_caught(tmp_path: Path, name: str) -> None:
    """The scan can fail: each cache as it was before, planted in the package, is found."""
    root = tmp_path / "ledger"
    (root / "core").mkdir(parents=True)
    (root / "core" / "planted.py").write_text(PLANTED[name])
    assert set(rogue_caches(root)) == {
        ("ledger/core/planted.py", PLANTED[name].split("def ", 1)[1].split("(", 1)[0])
    }


def test_importing_caches_costs_nothing_the_hooks_fast_path_avoids() -> None:
    probe = (
        "import sys; sys.path.insert(0, sys.argv[1]); import ledger.core.caches;"
        "print(' '.join(sorted(sys.modules)))"
    )
    done = subprocess.run(
        [sys.executable, "-I", "-S", "-c", probe, str(PACKAGE.parent)],
        capture_output=True,
        text=True,
        check=True,
    )
    modules = set(done.stdout.split())
    assert {m for m in modules if m.startswith("ledger")} == {
        "ledger",
        "ledger.core",
        "ledger.core.caches",
        "ledger.core.repobase",
    }
    assert not {"json", "re", "hashlib", "typing", "subprocess"} & modules


# --- the lines format (the hooks' caches) ------------------------------------------


@pytest.mark.parametrize(
    "data",
    [
        b"other key\nvalue\n",  # another key: other code, other inputs
        b"the key\nvalue",  # not ended by a newline: not a file save_lines wrote
        b"the key",
        b"",
        b"\xff\xfe\x00 binary\n",
    ],
    ids=["foreign-key", "torn", "key-only", "empty", "binary"],
)
def test_a_file_of_lines_not_saved_under_the_key_is_none(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "memo"
    path.write_bytes(data)
    assert caches.load_lines(path, "the key") is None
    assert caches.save_lines(path, "the key", ["value", "a\rb", ""])
    assert caches.load_lines(path, "the key") == ["value", "a\rb", ""]
    assert caches.load_lines(path, "other key") is None


def test_a_line_holding_a_newline_is_not_kept(tmp_path: Path) -> None:
    path = tmp_path / "memo"
    assert caches.save_lines(path, "k", ["one"])
    assert caches.save_lines(path, "k", ["two\nlines"]) is False
    assert caches.save_lines(path, "k\nk", ["one"]) is False
    assert caches.load_lines(path, "k") == ["one"]


def test_the_hooks_settings_cache_ignores_a_torn_or_binary_file(repo: Repo) -> None:
    from ledger.hooks import fast as hookrun

    top, common = str(repo.path), str(repo.path / ".git")
    fresh = hookrun.settings(top, common)
    cache = repo.path / ".git" / "ledger" / hookrun.SETTINGS_CACHE
    key = cache.read_text().splitlines()[0]
    cache.write_text(f"{key}\ndir=elsewhere")  # torn: the newline a save ends with is missing
    assert hookrun.settings(top, common) == fresh
    cache.write_bytes(key.encode() + b"\ndir=\xff\xfe\n")
    assert hookrun.settings(top, common) == fresh
    cache.write_text(f"{key}\ndir=elsewhere\n")  # the check can fail: a saved file is read
    assert hookrun.settings(top, common) == {"dir": "elsewhere"}


# --- status ------------------------------------------------------------------------


def test_status_keeps_the_answers_of_its_most_recent_trees(tmp_path: Path) -> None:
    keys = [
        statuscache.key("ledger.toml", "text", f"tree-{i}", "c") for i in range(statuscache.KEEP)
    ]
    assert len(set(keys)) == statuscache.KEEP >= 8
    for i, key in enumerate(keys):
        statuscache.put(tmp_path, key, {"n": i})
    assert [statuscache.get(tmp_path, key) for key in keys] == [
        {"n": i} for i in range(statuscache.KEEP)
    ]
    statuscache.put(tmp_path, statuscache.key("ledger.toml", "text", "one more", "c"), {"n": -1})
    assert statuscache.get(tmp_path, keys[0]) is None and statuscache.get(tmp_path, keys[1])
    assert statuscache.key("ledger.toml", "other text", "tree-0", "c") != keys[0]
    assert statuscache.key("pyproject.toml", "text", "tree-0", "c") != keys[0]
    assert statuscache.key("ledger.toml", "text", "tree-0", "another commit") != keys[0]


def _status(repo: Repo, *options: str) -> tuple[dict[str, object], set[str]]:
    proc = subprocess.run(
        [sys.executable, *options, "-m", "ledger", "status", "--json"],
        cwd=repo.path,
        capture_output=True,
        text=True,
        check=True,
    )
    imported = {line.rsplit("|", 1)[-1].strip() for line in proc.stderr.splitlines()}
    data: dict[str, object] = json.loads(proc.stdout)
    return data, imported


def test_a_warm_status_imports_neither_pydantic_nor_scipy(repo: Repo) -> None:
    _, cold = _status(repo, "-X", "importtime")
    assert "pydantic" in cold  # the probe sees a cold status build the state
    _, warm = _status(repo, "-X", "importtime")
    assert "ledger.core.caches" in warm  # ...and what a warm one imports
    assert not {"pydantic", "scipy", "pygit2"} & warm, sorted(warm)


@pytest.mark.parametrize("loop", ["campaign", "batches"])
def test_a_warm_status_and_next_of_every_loop_import_neither_pydantic_nor_pygit2(
    request: pytest.FixtureRequest, loop: str
) -> None:
    """What an agent asks after each step, answered from the caches in every loop: the
    campaign's and the batch loop's own checks that only name files (the drafts, the
    trace on disk) do not load their entries' models to do it."""
    repo: Repo = request.getfixturevalue("camp" if loop == "campaign" else "batch")
    if loop == "batches":
        close_batch(repo, "true,true,true,true,true,true,true,false")  # a live run_id
    # The loop's last verb made the caches (ledger.cli.status.warm): read cold first.
    shutil.rmtree(repo.path / ".git" / "ledger" / "cache")
    cold, imported = _status(repo, "-X", "importtime")
    assert "pydantic" in imported
    for verb in ("status", "next"):
        proc = subprocess.run(
            [sys.executable, "-X", "importtime", "-m", "ledger", verb, "--json"],
            cwd=repo.path, capture_output=True, text=True, check=True,
        )  # fmt: skip
        warm = {line.rsplit("|", 1)[-1].strip() for line in proc.stderr.splitlines()}
        assert "ledger.core.caches" in warm
        assert not {"pydantic", "scipy", "pygit2"} & warm, (verb, sorted(warm))
        answer = json.loads(proc.stdout)
        assert answer == (cold if verb == "status" else cold["next"]), verb


def _planted_status(kind: str, record: dict[str, object]) -> bytes:
    """A status.json that is not this program's, with a planted answer where it can be."""
    answers = record["data"]
    assert isinstance(answers, dict)
    planted = {key: {**answer, "dir": "PLANTED"} for key, answer in answers.items()}
    return {
        "corrupt": b"{not json",
        "binary": b"\xff\xfe\x00",
        "not-a-record": b"[1, 2]",
        "foreign-key": json.dumps({"key": "another program", "data": planted}).encode(),
        "not-a-table": json.dumps({"key": record["key"], "data": list(planted)}).encode(),
        "old-format": json.dumps(planted).encode(),  # status.json before caches.py
    }[kind]


@pytest.mark.parametrize(
    "kind", ["corrupt", "binary", "not-a-record", "foreign-key", "not-a-table", "old-format"]
)
def test_status_ignores_a_cache_file_that_is_not_its_own(repo: Repo, kind: str) -> None:
    fresh, _ = _status(repo)
    path = repo.path / ".git" / "ledger" / "cache" / statuscache.FILE
    record = json.loads(path.read_text())
    path.write_bytes(_planted_status(kind, record))
    assert _status(repo)[0] == fresh
    assert json.loads(path.read_text()) == record  # and it is saved again


def test_status_reads_its_own_cache(repo: Repo) -> None:
    """The check above can fail: an answer planted under the right key is what status says."""
    _status(repo)
    path = repo.path / ".git" / "ledger" / "cache" / statuscache.FILE
    record = json.loads(path.read_text())
    for answer in record["data"].values():
        answer["dir"] = "PLANTED"
    path.write_text(json.dumps(record))
    assert _status(repo)[0]["dir"] == "PLANTED"


# --- the verify report -------------------------------------------------------------

STALE = {"commit": "c", "path": "p", "rule": "r", "message": "m", "fix": "f", "step": "s"}
NOTE = {"commit": "c", "kind": "config", "step": "s", "path": "p", "text": "t"}


def test_the_verify_report_is_read_for_its_tip_refs_and_code_only(tmp_path: Path) -> None:
    state, common = str(tmp_path / "ledger"), str(tmp_path)
    verifycache.save(state, common, "tip-a", [STALE], [NOTE])
    assert verifycache.load(state, common, "tip-a") == [STALE]
    assert verifycache.load_notes(state) == [NOTE]
    assert verifycache.load(state, common, "tip-b") is None
    assert verifycache.load_notes(state) == []  # never the notes of a report not accepted
    witness = tmp_path / "refs" / "ledger" / "witness" / "V1"
    witness.parent.mkdir(parents=True)
    witness.write_text("0" * 40 + "\n")
    assert verifycache.load(state, common, "tip-a") is None  # the refs moved
    verifycache.save(state, common, "tip-a", [], [])
    assert verifycache.load(state, common, "tip-a") == []


@pytest.mark.parametrize(
    "planted",
    [
        b"{not json",
        b"\xff\xfe\x00",
        b"[]",
        b'{"key": "another program", "data": {"findings": [], "notes": []}}',
        b'{"rules": 4, "tip": "tip-a", "findings": [], "notes": []}',  # before caches.py
    ],
    ids=["corrupt", "binary", "not-a-record", "foreign-key", "old-format"],
)
def test_a_verify_report_that_is_not_its_own_is_never_read(
    tmp_path: Path, planted: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    state, common = str(tmp_path / "ledger"), str(tmp_path)
    verifycache.save(state, common, "tip-a", [STALE], [NOTE])
    path = Path(state) / verifycache.REPORT_FILE
    refs = json.loads(path.read_text())["data"]["refs"]
    path.write_bytes(
        planted.replace(b'"findings": []', f'"refs": "{refs}", "findings": []'.encode())
    )
    assert verifycache.load(state, common, "tip-a") is None
    assert verifycache.load_notes(state) == []
    verifycache.save(state, common, "tip-a", [STALE], [NOTE])
    monkeypatch.setattr(caches, "code_id", lambda: "an upgraded program")
    assert verifycache.load(state, common, "tip-a") is None  # other code, other rules


def test_status_shows_what_the_verify_report_under_its_key_says(repo: Repo) -> None:
    """The report is really read: a finding planted under the right key is shown; under
    another key (another program) it is not."""
    assert _status(repo)[0]["history"] == []
    path = repo.path / ".git" / "ledger" / verifycache.REPORT_FILE
    record = json.loads(path.read_text())
    record["data"]["findings"] = [{**STALE, "commit": repo.head()}]
    path.write_text(json.dumps(record))
    assert _status(repo)[0]["history"] == [{**STALE, "commit": repo.head()}]
    path.write_text(json.dumps({**record, "key": "another program"}))
    assert _status(repo)[0]["history"] == []
