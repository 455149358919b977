"""A verb's declared preconditions (issue 25): the verb is refused by the same check, with
the same clearing action, that ``next`` puts before any step of the loop, through
``git ledger`` with the hooks installed.

The machine problems are the preconditions (``ledger.core.machine.PRECONDITIONS``, in
the order they are cleared); ``next`` proposes a step of the loop only when none stands,
so a verb whose declared preconditions are among them is never refused on their account
after ``next`` proposed it.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from ledger.cli.app import cli
from ledger.core import clikit
from ledger.core.machine import PRECONDITIONS
from ledger.mcp import tools as mcptools
from tests.helpers import Repo, fingerprint
from tests.test_next_refusals import concluded_v1
from tests.test_next_walk_states import sh

REGISTER = (
    "git ledger register V2 --bet 'A bigger cache' --gate recent --files src/cache.py "
    "--falsifier 'recent does not move'"
)


def _next(repo: Repo) -> dict[str, Any]:
    done = sh(repo, "git ledger next --json")
    assert done.returncode == 0, done.stderr
    answer: dict[str, Any] = json.loads(done.stdout)
    return answer


def _declared() -> list[tuple[str, clikit.Declared]]:
    found = []
    for path, command in clikit.verbs(cli):
        declared = clikit.declared(command)
        if declared is not None:
            found.append((" ".join(path), declared))
    return found


def test_every_declared_precondition_is_a_machine_precondition() -> None:
    declared = _declared()
    assert any(d.requires for _, d in declared), "no verb declares a precondition"
    for verb, d in declared:
        unknown = set(d.requires) - set(PRECONDITIONS)
        assert not unknown, f"{verb} requires {unknown}, which no check of machine.py names"
        # A verb that changes nothing needs nothing to hold first.
        assert d.kind != "read" or not d.requires, verb


def test_register_is_refused_by_the_check_next_runs_first_and_next_clears_it(
    bare_repo: Repo,
) -> None:
    repo = concluded_v1(bare_repo)
    repo.write("training_log/notes.md", "a note nobody committed\n")
    nxt = _next(repo)
    assert nxt["action"] == "doctor-fix" and "decide" not in nxt, nxt
    before = fingerprint(repo.path)
    refused = sh(repo, REGISTER)
    assert refused.returncode == 1, refused.stderr
    assert "[entries-committed]" in refused.stderr and "notes.md" in refused.stderr
    assert nxt["command"] in refused.stderr, (nxt["command"], refused.stderr)
    assert fingerprint(repo.path) == before
    # What next proposed clears the precondition: the same register then passes.
    assert sh(repo, nxt["command"]).returncode == 0
    assert _next(repo)["action"] == "register"
    done = sh(repo, REGISTER)
    assert done.returncode == 0, done.stderr


def test_matrix_new_is_refused_as_register_is(bare_repo: Repo, tmp_path: Path) -> None:
    repo = concluded_v1(bare_repo)
    spec = tmp_path / "cells.toml"
    spec.write_text(
        "".join(
            f'[cells.{n}]\nbet = "Cell {n}"\ngate = "recent"\nfiles = ["src/cache.py"]\n'
            'falsifier = "recent does not move"\n'
            for n in "AB"
        )
    )
    repo.write("training_log/notes.md", "a note nobody committed\n")
    nxt = _next(repo)
    before = fingerprint(repo.path)
    refused = sh(repo, f"git ledger matrix new V2 --spec {spec}")
    assert refused.returncode == 1 and "[entries-committed]" in refused.stderr, refused.stderr
    assert nxt["command"] in refused.stderr
    assert fingerprint(repo.path) == before
    assert sh(repo, nxt["command"]).returncode == 0
    done = sh(repo, f"git ledger matrix new V2 --spec {spec}")
    assert done.returncode == 0, done.stderr


def test_a_refusal_that_only_a_person_clears_says_so_as_next_does(bare_repo: Repo) -> None:
    repo = concluded_v1(bare_repo)
    entry = repo.path / "training_log/V1.md"
    text = entry.read_text()
    bet = next(line for line in text.splitlines() if line.startswith("bet:"))
    entry.write_text(text.replace(bet, "bet: A safer bet", 1))
    nxt = _next(repo)
    assert nxt["action"] == "restore-entry" and nxt.get("decide"), nxt
    refused = sh(repo, REGISTER)
    assert refused.returncode == 1 and "[entries-committed]" in refused.stderr
    assert nxt["command"] in refused.stderr and "a person decides" in refused.stderr


def test_the_mcp_tool_says_what_refuses_it_besides_its_rules() -> None:
    for spec, command in mcptools.available(cli):
        text = mcptools.description(spec, command)
        for name in spec.declared.requires:
            assert name in text, (spec.name, text)
        assert "  " not in text, text


def test_an_entry_that_is_not_a_file_is_bad_input_before_the_precondition(
    bare_repo: Repo, tmp_path: Path
) -> None:
    repo = concluded_v1(bare_repo)
    target = tmp_path / "elsewhere.md"
    target.write_text("x\n")
    (repo.path / "training_log/link.md").symlink_to(target)
    before = fingerprint(repo.path)
    done = subprocess.run(
        ["bash", "-c", REGISTER], cwd=repo.path, capture_output=True, text=True, check=False
    )
    assert done.returncode == 2 and "not a regular file" in done.stderr, done.stderr
    assert fingerprint(repo.path) == before
