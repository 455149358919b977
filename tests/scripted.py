"""A scripted evaluation for loops replayed through the real CLI.

``git ledger run`` calls the script below as the gates' command; it reads the
numbers the test wants from a JSON plan outside the repository, so a replay
states each version's mean per gate and nothing else. Every seed carries its
split's offset (shared by all versions, what pairing removes) and a small
deterministic noise of its own.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests.helpers import Repo

EVAL = """\
import json, random, sys
plan, version, gate, seed, replicate, out = sys.argv[1:7]
with open(plan) as handle:
    data = json.load(handle)
mean = data["means"][version][gate]
shift = data.get("shift", {}).get(f"{version}/{gate}/{seed}/{replicate}", 0.0)
noise = random.Random(f"{version}-{gate}-{seed}").gauss(0, data.get("noise", 0.2))
with open(out, "w") as handle:
    json.dump({"score": mean + data["split"][seed] + noise + shift}, handle)
"""

SPLIT = {"1": 1.0, "2": -1.0, "3": 0.5, "4": -0.5}


def gate_block(name: str, script: Path, plan: Path, extra: str = "") -> str:
    argv = [sys.executable, str(script), str(plan), "{version}", "{gate}", "{seed}"]
    command = json.dumps([*argv, "{replicate}", "{out}"])
    return (
        f'[gates.{name}]\nmetric = "score"\ncommand = {command}\n{extra}'
        f'[gates.{name}.metrics]\nscore = "$.score"\n'
    )


class Plan:
    """The numbers a scripted evaluation returns, written where the script reads them."""

    def __init__(self, repo: Repo, gates: tuple[str, ...], config_tail: str = "") -> None:
        self.repo = repo
        outside = repo.path.parent
        self.script = outside / "scripted_eval.py"
        self.path = outside / "plan.json"
        self.script.write_text(EVAL)
        self.data: dict[str, object] = {"means": {}, "split": SPLIT, "shift": {}}
        self._save()
        blocks = "\n".join(gate_block(g, self.script, self.path) for g in gates)
        repo.write("ledger.toml", f'[ledger]\ndir = "training_log"\n\n{blocks}\n{config_tail}')
        repo.commit_all("chore: scripted evaluation")
        repo.ok("init")

    def _save(self) -> None:
        self.path.write_text(json.dumps(self.data))

    def means(self, vid: str, **by_gate: float) -> None:
        means = self.data["means"]
        assert isinstance(means, dict)
        means[vid] = by_gate
        self._save()

    def shift(self, vid: str, gate: str, seed: str, replicate: int, by: float) -> None:
        shift = self.data["shift"]
        assert isinstance(shift, dict)
        shift[f"{vid}/{gate}/{seed}/{replicate}"] = by
        self._save()

    def run(self, vid: str, gate: str, *extra: str) -> None:
        self.repo.ok("run", vid, "--gate", gate, "--seeds", ",".join(SPLIT), *extra)
