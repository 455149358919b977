"""``next`` is always right: a seeded random walk per preset runs whatever ``next --json``
says, at every step, and is never refused (exit 1 or 2), until the loop's end.

The walk fills the command's placeholders (CANDIDATE: a fresh code commit; X: a
measurement; ``a|b``: a random choice; TEXT, VALUE ...), sometimes takes one of
the ``alternatives`` next offers, and crashes on the way (a process that died
after its code commit, a torn trace line, an interrupted batch, junk files in
the work tree). The CLI runs in this process: 200+ steps take seconds.
"""

from __future__ import annotations

import contextlib
import io
import json
import random
import re
import shlex
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import git

STEPS = 200


def cli(cwd: Path, *args: str) -> tuple[int, str, str]:
    import click

    from ledger.cli.app import cli as group
    from ledger.core.errors import LedgerError

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = group.main(
                args=["-C", str(cwd), *args], prog_name="git-ledger", standalone_mode=False
            )
        except LedgerError as exc:
            err.write(exc.one_line())
            code = exc.exit_code
        except click.ClickException as exc:
            err.write(exc.format_message())
            code = 2
    return (code if isinstance(code, int) else 0), out.getvalue(), err.getvalue()


class Walk:
    def __init__(self, root: Path, preset: str, seed: int) -> None:
        self.root = root
        self.preset = preset
        self.rng = random.Random(seed)
        self.steps = 0
        self.ends = 0
        self.repos = 0
        self.crashes = 0
        self.actions: dict[str, int] = {}
        self.new_repo()

    def new_repo(self) -> None:
        self.repos += 1
        self.repo = self.root / f"{self.preset}-{self.repos}"
        self.repo.mkdir()
        git(self.repo, "init", "-q")
        self.repo.joinpath("src").mkdir()
        self.repo.joinpath("src/app.py").write_text("x = 0\n")
        git(self.repo, "add", "-A")
        git(self.repo, "commit", "-q", "-m", "feat(src): the app")
        self.run("init", "--preset", self.preset)
        self.code_n = 0

    def run(self, *args: str) -> str:
        code, out, err = cli(self.repo, *args)
        assert code == 0, f"step {self.steps}: git ledger {shlex.join(args)} -> {code}: {err}{out}"
        return out

    def next(self) -> dict[str, Any]:
        data: dict[str, Any] = json.loads(self.run("next", "--json"))
        return data

    def code_commit(self) -> str:
        self.code_n += 1
        # One file per candidate: the delivered ones must apply without the others.
        self.repo.joinpath(f"src/c{self.code_n}.py").write_text(f"x = {self.code_n}\n")
        git(self.repo, "add", f"src/c{self.code_n}.py")
        git(self.repo, "commit", "-q", "-m", f"perf(src): candidate {self.code_n}")
        return git(self.repo, "rev-parse", "HEAD").strip()

    def step(self) -> bool:
        """One step; True at the loop's end."""
        self.steps += 1
        self.crash()  # between two steps: the next step is asked after it
        action = self.next()
        if action.get("alternatives") and self.rng.random() < self.alternative_odds(action):
            action = self.rng.choice(action["alternatives"])
        self.actions[action["action"]] = self.actions.get(action["action"], 0) + 1
        for rel in action.get("edit", []):  # the files `next` says to change first
            self.edit(rel)
        for part in action["command"].split(" && "):
            self.execute(part.strip(), action)
        return bool(action.get("done"))

    def alternative_odds(self, action: dict[str, Any]) -> float:
        return 0.15

    def crash(self) -> None:
        if self.rng.random() < 0.08:
            self.crashes += 1
            # A process died mid-way: junk left in the work tree.
            self.repo.joinpath(f"junk-{self.crashes}.tmp").write_text("partial\n")

    def execute(self, command: str, action: dict[str, Any]) -> None:
        if command.startswith("$EDITOR "):
            self.edit(command.split()[1])
            return
        words = shlex.split(command)
        if words[:1] == ["git"] and words[1:2] != ["ledger"]:
            # Plain git that `next` hands over (commit the version's code, revert a
            # refuted version's code), run as a user pastes it into a shell.
            done = subprocess.run(
                ["sh", "-c", command], cwd=self.repo, capture_output=True, text=True, check=False
            )
            assert done.returncode == 0, f"step {self.steps}: {command}: {done.stderr}"
            return
        assert words[:2] == ["git", "ledger"], command
        args = self.fill(words[2:], action)
        self.run(*args)

    def edit(self, path: str) -> None:
        raise AssertionError(f"unexpected edit of {path}")

    def fill(self, words: list[str], action: dict[str, Any]) -> list[str]:
        out = []
        for word in words:
            if word == "TEXT" or (word.startswith("<") and word.endswith(">")):
                word = f"text {self.steps}"
            elif "|" in word and " " not in word:
                word = self.rng.choice(word.split("|"))
            out.append(word)
        return out

    def walk(self) -> None:
        while True:
            if self.step():
                self.ends += 1
                if self.steps >= STEPS:
                    return
                self.new_repo()
            assert self.steps < STEPS * 4, f"no end after {self.steps} steps: {self.actions}"


class CampaignWalk(Walk):
    def __init__(self, root: Path, seed: int) -> None:
        super().__init__(root, "campaign", seed)

    def alternative_odds(self, action: dict[str, Any]) -> float:
        return 1.0 if self.steps >= STEPS else 0.08

    def crash(self) -> None:
        super().crash()
        if self.rng.random() < 0.05:
            self.code_commit()  # died after committing a candidate, before recording it

    def edit(self, path: str) -> None:
        target = self.repo / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text("# Contract\n\nWe measure speed on bench.py. Only src/ may change.\n")

    def fill(self, words: list[str], action: dict[str, Any]) -> list[str]:
        verdict = None
        if "--verdict" in words:
            options = words[words.index("--verdict") + 1].split("|")
            verdict = self.rng.choice(options)
            words[words.index("--verdict") + 1] = verdict
        bar = action.get("bar") or {}
        head = bar.get("head")
        out = []
        for word in words:
            if word == "CANDIDATE":
                word = self.code_commit()
            elif word.endswith("=X"):
                name = word[:-2]
                word = f"{name}={self.measure(name, verdict, head)}"
            out.append(word)
        return super().fill(out, action)

    def measure(self, name: str, verdict: str | None, head: float | None) -> str:
        if name == "speed":
            ref = head if head is not None else 100.0
            delta = self.rng.uniform(0.5, 20.0)
            if verdict == "held":  # held is within noise of the head (#27): its speed
                return f"{ref:.6f}"
            return f"{ref + delta if verdict == 'promoted' else ref - delta:.6f}"
        if name == "correctness":
            kept = verdict in ("promoted", "held")
            return "0.0001" if kept or self.rng.random() < 0.7 else "0.5"
        if self.rng.random() < 0.2:
            return "N/A: not measured on this machine"
        return f"{self.rng.uniform(0.5, 4):.3f}"


class BatchesWalk(Walk):
    def __init__(self, root: Path, seed: int) -> None:
        super().__init__(root, "batches", seed)

    def new_repo(self) -> None:
        super().new_repo()
        self.weights_file = self.repo.parent / f"weights-{self.repos}.json"
        self.weights_file.write_text(
            json.dumps({"style": {"tone": "plain", "length": 3, "B1.L0": 0.5}, "label": "frozen-A"})
        )

    def crash(self) -> None:
        super().crash()
        roll = self.rng.random()
        traces = list((self.repo / "training_log/trace").glob("*.jsonl"))
        ended = any('"run_end"' in t.read_text() for t in traces)
        if roll < 0.1 and not ended:  # a converged run takes no more events
            self.run("trace", "emit", "topic-start", "--field", f"step={self.steps}")
        elif roll < 0.14 and traces:
            # The loop died mid-write: a torn last trace line.
            self.crashes += 1
            with traces[0].open("a") as handle:
                handle.write('{"batch": 1, "event": "topic-do')

    def fill(self, words: list[str], action: dict[str, Any]) -> list[str]:
        out = []
        for i, word in enumerate(words):
            if word == "WEIGHTS.json":
                word = str(self.weights_file)
            elif word == "RUN":
                word = f"walk-{self.repos}"
            elif word == "X" and words[i - 1] == "--fidelity-rate":
                word = f"{self.rng.uniform(0.75, 1.0):.4f}"
            elif word == "VALUE":
                key = words[words.index("--key") + 1]
                old = next(r["value"] for r in action["revisable"] if r["key"] == key)
                word = json.dumps(self.revised(old))
            out.append(word)
        if "--mono" in out:
            for flag in ("--mono", "--endpoint"):
                out[out.index(flag) + 1] = "true" if self.rng.random() < 0.97 else "false"
        if "--frozen" not in out and out[:2] == ["weights", "init"]:
            out += ["--frozen", "label"]
        return super().fill(out, action)

    def revised(self, old: Any) -> Any:
        if isinstance(old, bool):
            return not old
        if isinstance(old, int | float):
            return old + self.rng.choice([1, 2, 3])
        return f"{old}-{self.steps}"


class VersionsWalk(Walk):
    def __init__(self, root: Path, seed: int) -> None:
        super().__init__(root, "versions", seed)
        self.concluded = 0

    def step(self) -> bool:
        action = self.next()
        super().step()
        if action["action"] == "conclude":
            self.concluded += 1
        # The loop's end: a concluded version (after a few, so the triggers fire too).
        return action["action"] == "conclude" and self.concluded % 6 == 0

    def execute(self, command: str, action: dict[str, Any]) -> None:
        if command == "git commit":
            git(self.repo, "add", "training_log")
            git(self.repo, "commit", "-q", "-m", "docs(ledger): the reflection")
            return
        super().execute(command, action)

    def edit(self, path: str) -> None:
        target = self.repo / path
        if "REFLECTION_" not in path:  # a version's code: change it for its bet
            target.parent.mkdir(parents=True, exist_ok=True)
            with target.open("a") as handle:
                handle.write(f"# step {self.steps}\n")
            return
        text = target.read_text()
        # Each section its own answer (a repeat does not count), the target kept.
        filled = re.sub(
            r"(## ([^\n]+)\n)",
            lambda m: f"{m[1]}\nLooked at {m[2].lower()}; see the numbers; keep as target.\n",
            text,
        )
        target.write_text(filled)

    def fill(self, words: list[str], action: dict[str, Any]) -> list[str]:
        out = []
        placeholders = {"<GATE>": "recent", "<FILES>": "src/app.py"}
        for word in words:
            word = placeholders.get(word, word)
            if word in ("RESULTS.json", "<RESULTS.json>"):
                path = self.repo.parent / f"results-{self.repos}-{self.steps}.json"
                path.write_text(json.dumps({"score": round(self.rng.gauss(10, 3), 4)}))
                word = str(path)
            out.append(word)
        if out and out[0] == "register":
            self.code_commit()  # the walk's code for the previous bet (if any) is in
        return super().fill(out, action)


@pytest.mark.parametrize("seed", [5])
def test_versions_walk_follows_next_to_a_concluded_version(tmp_path: Path, seed: int) -> None:
    walk = VersionsWalk(tmp_path, seed)
    walk.walk()
    print(
        f"versions walk: {walk.steps} steps, {walk.ends} end(s), {walk.crashes} crash(es), "
        f"{walk.repos} repo(s), actions {walk.actions}"
    )
    assert walk.steps >= STEPS and walk.ends >= 1
    for needed in ("register", "measure", "conclude"):
        assert walk.actions.get(needed), (needed, walk.actions)


@pytest.mark.parametrize("seed", [7])
def test_campaign_walk_follows_next_to_the_end(tmp_path: Path, seed: int) -> None:
    walk = CampaignWalk(tmp_path, seed)
    walk.walk()
    print(
        f"campaign walk: {walk.steps} steps, {walk.ends} end(s), {walk.crashes} crash(es), "
        f"{walk.repos} repo(s), actions {walk.actions}"
    )
    assert walk.steps >= STEPS and walk.ends >= 1
    for needed in ("contract", "record-base", "arm", "candidate", "finish", "deliver", "done"):
        assert walk.actions.get(needed), (needed, walk.actions)
    assert walk.actions.get("benchmark-adjust") and walk.actions.get("re-measure-head")
    # finish passed: the last repository's campaign is disarmed and delivered.
    owner = json.loads((walk.repo / "training_log/owner.json").read_text())
    assert owner["armed"] is False
    assert git(walk.repo, "rev-parse", "--verify", "campaign/deliver").strip()


@pytest.mark.parametrize("seed", [11])
def test_batches_walk_follows_next_to_convergence(tmp_path: Path, seed: int) -> None:
    walk = BatchesWalk(tmp_path, seed)
    walk.walk()
    print(
        f"batches walk: {walk.steps} steps, {walk.ends} end(s), {walk.crashes} crash(es), "
        f"{walk.repos} repo(s), actions {walk.actions}"
    )
    assert walk.steps >= STEPS and walk.ends >= 1
    for needed in ("weights-init", "topic", "close-batch", "revise", "converge", "done"):
        assert walk.actions.get(needed), (needed, walk.actions)
    meta = json.loads((walk.repo / "training_log/weights/meta.json").read_text())
    assert isinstance(meta["converged"], int)
    trace = (walk.repo / f"training_log/trace/{meta['run_id']}.jsonl").read_text()
    seqs = [json.loads(line)["seq"] for line in trace.splitlines()]
    assert seqs == list(range(1, len(seqs) + 1))
    assert [json.loads(line)["event"] for line in trace.splitlines()][-2:] == [
        "converged",
        "run_end",
    ]
    assert re.search(r"weights/batch-\d+\.json", git(walk.repo, "log", "--stat"))


def test_no_preset_name_is_compared_outside_the_presets_package() -> None:
    root = Path(__file__).resolve().parent.parent / "ledger"
    names = "versions|campaign|batches"
    pattern = re.compile(
        rf"preset\s*[!=]=|[!=]=\s*[\"']({names})[\"']|[\"']({names})[\"']\s*[!=]="
        rf"|\bin\s*[\(\[\{{][^\)\]\}}]*[\"']({names})[\"']"
    )
    found = [
        f"{path.relative_to(root)}:{i}: {line.strip()}"
        for path in root.rglob("*.py")
        # the presets themselves, and the registry that maps a configured name to one
        if "presets" not in path.relative_to(root).parts and path != root / "core" / "loops.py"
        for i, line in enumerate(path.read_text().splitlines(), 1)
        if pattern.search(line)
    ]
    assert found == []
    # The pattern itself finds a comparison (a check that cannot fail is a defect).
    assert pattern.search('if config.ledger.preset == "campaign":')
    assert pattern.search('if name in ("campaign", "batches"):')
