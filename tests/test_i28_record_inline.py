"""Issue 28: ``record --result JSON`` takes the results inline (as an agent has them), and
writes them nowhere but the result entry; FILE and --result are one or the other."""

from __future__ import annotations

import json

import pytest

from tests.helpers import Repo, fingerprint


@pytest.fixture
def registered(repo: Repo) -> Repo:
    repo.ok("hooks", "install")
    repo.ok("register", "V1", "--bet", "A bet", "--gate", "recent", "--files", "a.py",
            "--falsifier", "no gain")  # fmt: skip
    repo.write("a.py", "x = 1\n")
    repo.git("add", "a.py")
    repo.git("commit", "-qm", "feat: V1's code")
    return repo


def test_an_inline_result_is_recorded_with_provenance_and_written_nowhere_else(
    registered: Repo,
) -> None:
    before = set(registered.git("ls-files", "--others").split())
    done = registered.ok("record", "V1", "--gate", "recent", "--seed", "1", "--result",
                         json.dumps({"score": 58.5}), "--json").json()  # fmt: skip
    assert done["path"].endswith("results/V1/recent/seed-1.json")
    entry = json.loads((registered.path / done["path"]).read_text())
    assert entry["metrics"] == {"score": 58.5}
    provenance = entry["provenance"]
    assert provenance["source_name"] == "inline.json" and provenance["dirty"] is False
    assert provenance["code_commit"] == registered.git("rev-parse", "HEAD~1").strip()
    assert registered.git("status", "--porcelain") == ""  # the entry is committed, nothing else
    assert set(registered.git("ls-files", "--others").split()) == before
    shown = registered.ok("show", "V1", "--json").json()
    assert [r["seed"] for r in shown["results"]] == ["1"]


@pytest.mark.parametrize(
    "args",
    [
        ("--result", '{"score": 1}', "elsewhere.json"),  # both
        (),  # neither
        ("--result", "[1, 2]"),  # not an object
        ("--result", "{not json"),
    ],
    ids=["both", "neither", "not-an-object", "not-json"],
)
def test_a_bad_inline_result_is_bad_input_and_nothing_is_written(
    registered: Repo, args: tuple[str, ...]
) -> None:
    registered.write("elsewhere.json", '{"score": 1}')
    before = fingerprint(registered.path)
    done = registered.run("record", "V1", "--gate", "recent", "--seed", "1", *args)
    assert done.code == 2, done.err
    assert len(done.err.strip().splitlines()) == 1 and "Traceback" not in done.err
    assert fingerprint(registered.path) == before
