"""`git ledger next` never proposes a command the ledger refuses.

A seeded random walk through the versions loop runs whatever ``next --json`` gives
(placeholders filled, files in ``edit`` changed, as a user would) and asserts it is
never refused. Now and then the walker does what users do between two ``next``: starts
a run in the background, parks the loop, opens a matrix instead of one version, writes
a reflection without committing it, measures before committing the code or on an edit
never committed. Each of those states must still get a command that works.
"""

from __future__ import annotations

import json
import os
import random
import re
import subprocess

import pytest

from tests.helpers import Repo

EVAL = """\
import argparse, json, random, runpy
arg = argparse.ArgumentParser()
arg.add_argument("--seed", type=int, required=True)
arg.add_argument("--out", required=True)
opt, _ = arg.parse_known_args()
size = runpy.run_path("src/cache.py")["SIZE"]
if size < 0:
    raise SystemExit("negative size")
score = 50 + size / 8 + random.Random(opt.seed).gauss(0, 0.5)
json.dump({"score": score, "hit_rate": size / (size + 64)}, open(opt.out, "w"))
"""

CONFIG_RUN = '\n[run]\ncommand = ["python3", "eval.py", "--seed", "{seed}", "--out", "{out}"]\n'
FILL = {
    "<BET>": "A different cache size moves the score",
    "<FALSIFIER>": "no change beyond noise",
    "<NEXT>": "keep walking",
    "<GATE>": "recent",
    "<FILES>": "src/cache.py",
    "<REASON>": "measured knowingly before the code was committed, or on a dirty tree",
    "<EVIDENCE>": "the criterion holds now",
}


def shop(repo: Repo, metrics: str = "", run: str = CONFIG_RUN) -> Repo:
    repo.write("src/cache.py", "SIZE = 64\n")
    repo.write("eval.py", EVAL)
    repo.commit_all("feat(cache): a cache and its evaluation")
    repo.ok("init")
    toml = repo.path / "ledger.toml"
    text = toml.read_text().replace('score = "$.score"\n', 'score = "$.score"\n' + metrics)
    toml.write_text(text + run)
    repo.commit_all("chore(ledger): the gate runs eval.py")
    repo.ok("hooks", "install")
    return repo


def register_cache(repo: Repo, vid: str) -> None:
    """Register ``vid`` on the shop's cache: one bet on src/cache.py, gate recent."""
    repo.ok(
        "register",
        vid,
        "--bet",
        "b",
        "--gate",
        "recent",
        "--files",
        "src/cache.py",
        "--falsifier",
        "f",
    )


def sh(repo: Repo, command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-c", command], cwd=repo.path, capture_output=True, text=True, check=False
    )


def edit(repo: Repo, rel: str, rng: random.Random, step: int) -> None:
    path = repo.path / rel
    if "REFLECTION_" in rel:
        text = path.read_text()
        for title in re.findall(r"^## (.+)$", text, re.M):
            # Each section its own answer (a repeat does not count), the target kept.
            answer = f"Answered on step {step} about {title.lower()}; keep as target."
            text = text.replace(f"## {title}\n", f"## {title}\n\n{answer}\n", 1)
        path.write_text(text)
    else:
        path.write_text(f"SIZE = {rng.choice([40, 64, 64, 65, 96, 128])}  # step {step}\n")


def follow(repo: Repo, nxt: dict[str, object], rng: random.Random, step: int) -> str:
    for rel in nxt["edit"]:  # type: ignore[attr-defined]
        edit(repo, str(rel), rng, step)
    command = str(nxt["command"])
    for placeholder in nxt["placeholders"]:  # type: ignore[attr-defined]
        assert placeholder in command, (placeholder, command)
        command = command.replace(str(placeholder), FILL[str(placeholder)])
    assert "<" not in command.replace("<<", ""), f"an unmarked placeholder in {command}"
    return command


def detour(repo: Repo, nxt: dict[str, object], rng: random.Random, seen: set[str]) -> str | None:
    """Sometimes do what a user does instead of the proposed command."""
    command = str(nxt["command"])
    if nxt["action"] == "measure" and "git ledger run" in command and rng.random() < 0.3:
        seen.add("detached")
        return command + " --detach"
    if nxt["action"] == "register" and rng.random() < 0.25:
        mid = command.split()[3]
        spec = repo.path.parent / f"{mid}.toml"
        spec.write_text(
            "".join(
                f'[cells.{c}]\nslug = "s{c.lower()}"\nbet = "Cell {c} moves the score"\n'
                f'gate = "recent"\nfiles = ["src/cache.py"]\nfalsifier = "no gain"\n\n'
                for c in "AB"
            )
        )
        cites = command.split("--cites ")[1].split()[0] if "--cites" in command else None
        seen.add("matrix")
        return f"git ledger matrix new {mid} --spec {spec}" + (f" --cites {cites}" if cites else "")
    if nxt["action"] == "register" and rng.random() < 0.1:
        seen.add("parked")
        return (
            "git ledger phase declare --reason 'out of ideas' --exhausted sizes "
            "--resume-criterion 'a new idea' --force 'a walk detour, conditions unmet'"
        )
    step = str(nxt.get("step") or "")
    if nxt["action"] == "commit-code" and "." not in step and rng.random() < 0.25:
        seen.add("before-code")  # measured before the code is committed
        return f"git ledger run {step} --gate recent --seeds 1,2,3"
    if (
        nxt["action"] == "measure"
        and "git ledger run" in command
        and "." not in step
        and rng.random() < 0.2
    ):
        seen.add("dirty")  # measured on an edit that was never committed
        return f"echo 'SIZE = 70' > src/cache.py && {command} && git checkout -- src/cache.py"
    if nxt["action"] == "reflect" and rng.random() < 0.5:
        seen.add("reflection-uncommitted")
        return command  # write it, and leave it uncommitted: next must say commit it
    return None


# One seed by default (the suite stays fast); LEDGER_SOAK=1 walks a second one.
@pytest.mark.parametrize("seed", [7, *([2026] if os.environ.get("LEDGER_SOAK") == "1" else [])])
def test_random_walk_runs_whatever_next_proposes(bare_repo: Repo, seed: int) -> None:
    repo = bare_repo
    shop(repo)
    rng = random.Random(seed)
    seen: set[str] = set()
    actions: list[str] = []
    for step in range(45):
        result = repo.run("next", "--json")
        assert result.code == 0, result.err
        nxt = result.json()
        actions.append(str(nxt["action"]))
        command = detour(repo, nxt, rng, seen) or follow(repo, nxt, rng, step)
        proc = sh(repo, command)
        assert proc.returncode == 0, (
            f"step {step}: next proposed ({nxt['action']}) {command!r}, refused with "
            f"{proc.returncode}:\n{proc.stderr}{proc.stdout}\nactions so far: {actions}"
        )
    assert len(seen) >= 3, (seen, actions)  # the detours happened, not only the straight path
    kinds = set(actions)
    assert {"register", "commit-code", "measure", "conclude"} <= kinds, kinds
    assert repo.git("status", "--porcelain", "--untracked-files=no") == ""


def test_next_after_a_detached_run_is_wait(bare_repo: Repo) -> None:
    repo = bare_repo
    shop(repo)
    slow = EVAL.replace("if size < 0:", "import time; time.sleep(3)\nif size < 0:")
    repo.write("eval.py", slow)
    repo.commit_all("chore: a slow evaluation", "--no-verify")
    register_cache(repo, "V1")
    repo.ok("run", "V1", "--gate", "recent", "--seeds", "1", "--detach")
    nxt = repo.ok("next", "--json").json()
    assert nxt["action"] == "wait" and nxt["command"] == "git ledger wait"
    repo.ok("wait")
    assert repo.ok("next", "--json").json()["action"] == "conclude"


def test_next_proposes_the_parents_gate_and_files_and_marks_placeholders(bare_repo: Repo) -> None:
    repo = bare_repo
    shop(repo)
    nxt = repo.ok("next", "--json").json()
    assert nxt["placeholders"] == ["<BET>", "<FALSIFIER>", "<FILES>"]
    assert "--gate recent" in nxt["command"] and "a.py" not in nxt["command"]
    register_cache(repo, "V1")
    repo.ok("run", "V1", "--gate", "recent", "--seeds", "1,2,3")
    concluded = repo.ok("next", "--json").json()
    assert concluded["command"].startswith("git ledger conclude V1 --verdict confirmed ")
    sh(repo, concluded["command"].replace("<NEXT>", "go"))
    nxt = repo.ok("next", "--json").json()
    assert "--files src/cache.py" in nxt["command"] and nxt["placeholders"] == [
        "<BET>",
        "<FALSIFIER>",
    ]
    sh(repo, follow(repo, nxt, random.Random(1), 0))
    code = repo.ok("next", "--json").json()
    assert code["action"] == "commit-code" and code["edit"] == ["src/cache.py"]
    assert "commit the code" in repo.ok("next").out or "change src/cache.py" in code["reason"]


def test_next_with_a_failed_run_proposes_rerunning_those_seeds(bare_repo: Repo) -> None:
    repo = bare_repo
    shop(repo)
    register_cache(repo, "V1")
    repo.write("src/cache.py", "SIZE = -1\n")
    repo.commit_all("fix(cache): V1 — a broken size")
    repo.run("run", "V1", "--gate", "recent", "--seeds", "1,2")
    nxt = repo.ok("next", "--json").json()
    assert nxt["action"] == "fix-run" and "--seeds 1,2" in nxt["command"]
    repo.write("src/cache.py", "SIZE = 64\n")
    repo.commit_all("fix(cache): V1 — a valid size")
    assert sh(repo, nxt["command"]).returncode == 0
    assert repo.ok("next", "--json").json()["action"] == "conclude"


def test_next_json_schema(bare_repo: Repo) -> None:
    repo = shop(bare_repo)
    data = json.loads(repo.ok("next", "--json").out)
    assert set(data) == {
        "action",
        "command",
        "reason",
        "step",
        "placeholders",
        "meanings",
        "edit",
        "call",
    }
    assert all(set(m) == {"name", "meaning"} for m in data["meanings"])
    # The same step as one MCP tool call, read off the command by the verb's own parser.
    assert data["command"].startswith("git ledger register ")
    assert data["call"]["tool"] == "register"
    assert data["call"]["arguments"]["gate"] == "recent"
    assert data["call"]["arguments"]["bet"] == "<BET>"
