"""``git ledger demo [DIR]``: a whole loop on a generated repository, through the real verbs.

It prints every command before running it, so a newcomer can repeat them by
hand. The evaluation is real computation: a noisy objective of the parameters
in params.json (templates/demo/eval.py), seeded, so verdicts have noise to see
through. Verbs run in this process (one start-up instead of sixty); git runs
as the git program, with the ledger's hooks installed, like a user's would.
"""

from __future__ import annotations

import json
import shlex
import tempfile
import time
from pathlib import Path

import click

from ledger.core import gitcli, launch, output
from ledger.core.errors import BadInput, LedgerError
from ledger.core.repobase import write_atomic
from ledger.core.resources import read_resource

CONFIG = """\
# git-ledger demo: one gate, measured by eval.py on four seeds.
[ledger]
dir = "training_log"
preset = "versions"

[gates.recent]
metric = "score"
direction = "higher"
noise_floor = 0.5
unit = "pts"
command = [{python}, "-I", "eval.py", "--seed", "{{seed}}", "--out", "{{out}}"]

[gates.recent.metrics]
score = "$.score"
loss = {{ path = "$.loss", direction = "lower" }}

[triggers]
noop_tolerance = 1.0
"""

SEEDS = "1,2,3,4"
SECTIONS = {
    "Eval stability": "Replicates of one seed agree exactly (DETERMINISM: PASS); noise comes only from the seed.",
    "Variance estimate": "Across four seeds σ ≈ 0.6 pts, so one-knob nudges under ~1.5 pts cannot be seen.",
    "Subsystem audit": "V3-V5 all nudged one parameter by a hair; none could beat the noise floor.",
    "Revert-and-branch option": "Keep V2 and try bigger, independent moves side by side in a matrix.",
    "Untouched dimensions": "Width and dropout were never moved far; the learning rate only once.",
    "Observability-gap audit": "We log the per-evaluation scores (evals) to see spread inside a run.",
    # The tripwire's reflection decides whether its gate stays the target.
    "Target audit": "The window sits inside its regime's spread, so it stays: keep as target",
}


class Demo:
    def __init__(self, repo: Path, app: click.Group) -> None:
        self.repo = repo
        self.app = app  # the command line, run in this process
        self.baseline: dict[str, float] = {"dropout": 0.3, "lr": 0.1, "width": 32}

    def say(self, text: str) -> None:
        output.say("")
        output.say(
            click.style(f"# {text}", fg="cyan", bold=True) if output.is_tty() else f"# {text}"
        )

    def git(self, *args: str, cwd: Path | None = None) -> None:
        where = cwd or self.repo
        prefix = (
            f"(cd {shlex.quote(str(where.relative_to(self.repo)))}) " if where != self.repo else ""
        )
        output.say(f"$ {prefix}git {shlex.join(args)}")
        proc = gitcli.run(list(args), where, check=False)
        if proc.returncode != 0:
            raise LedgerError(f"demo: git {' '.join(args)} failed: {proc.stderr.strip()}")
        for line in (proc.stdout + proc.stderr).strip().splitlines():
            output.say(f"  {line}")

    def ledger(self, *args: str, expect: int = 0, cwd: Path | None = None) -> int:
        where = cwd or self.repo
        prefix = (
            f"(cd {shlex.quote(str(where.relative_to(self.repo)))}) " if where != self.repo else ""
        )
        output.say(f"$ {prefix}git ledger {shlex.join(args)}")
        try:
            code = self.app.main(
                args=["-C", str(where), *args], prog_name="git-ledger", standalone_mode=False
            )
        except LedgerError as exc:
            output.say(f"  git-ledger: {exc.one_line()}")
            code = exc.exit_code
        code = code if isinstance(code, int) else 0
        if code != expect:
            raise LedgerError(
                f"demo: 'git ledger {' '.join(args)}' exited {code}, expected {expect}"
            )
        return code

    def params(self, changes: dict[str, float], cwd: Path | None = None) -> None:
        """Write the baseline's parameters plus ``changes``: one bet, one change."""
        path = (cwd or self.repo) / "params.json"
        _write(path, json.dumps({**self.baseline, **changes}, indent=2, sort_keys=True) + "\n")
        output.say(f"$ edit params.json  # {', '.join(f'{k}={v}' for k, v in changes.items())}")

    def version(
        self, vid: str, bet: str, change: dict[str, float], verdict: str, *, expect: int = 0
    ) -> None:
        self.ledger(
            "register",
            vid,
            "--bet",
            bet,
            "--gate",
            "recent",
            "--files",
            "params.json",
            "--falsifier",
            "mean score not above the baseline beyond noise",
            "--subsystem",
            "params",
            expect=expect,
        )
        if change:
            self.params(change)
            self.git("commit", "-q", "-am", f"feat(params): {vid} — {bet[0].lower()}{bet[1:]}")
        self.ledger("run", vid, "--gate", "recent", "--seeds", SEEDS)
        self.ledger("conclude", vid, "--verdict", verdict, "--next", "keep going")
        if verdict == "confirmed":
            self.baseline.update(change)


def _write(path: Path, text: str) -> None:
    # A throwaway repository in a temporary directory: atomic, not flushed to disk.
    write_atomic(path, text, durable=False)


def run(directory: Path | None, app: click.Group) -> int:
    started = time.monotonic()
    if directory is None:
        repo = Path(tempfile.mkdtemp(prefix="git-ledger-demo-"))
    else:
        repo = directory.resolve()
        if repo.exists() and (not repo.is_dir() or any(repo.iterdir())):
            raise BadInput(f"{repo} exists and is not empty", "give a new or empty directory")
        repo.mkdir(parents=True, exist_ok=True)
    demo = Demo(repo, app)
    demo.say(f"A throwaway repository at {repo}")
    demo.git("init", "-q")
    # Local settings only, so a fresh machine (no identity, global hooks or
    # signing) runs the demo the same way; none of this touches your config.
    for key, value in (
        ("user.name", "git-ledger demo"),
        ("user.email", "demo@example.invalid"),
        ("commit.gpgsign", "false"),
        # Absolute: a matrix cell's worktree resolves a relative hooksPath against its
        # own top level, where .git is a file, and its commits would run no hooks.
        ("core.hooksPath", str(repo / ".git" / "hooks")),
    ):
        gitcli.run(["config", key, value], repo)
    _write(repo / "eval.py", read_resource("templates", "demo/eval.py"))
    _write(
        repo / "params.json",
        json.dumps({"dropout": 0.3, "lr": 0.1, "width": 32}, indent=2, sort_keys=True) + "\n",
    )
    _write(repo / "ledger.toml", CONFIG.format(python=json.dumps(launch.interpreter())))
    demo.git("add", "-A")
    demo.git("commit", "-q", "-m", "chore: an evaluation script and its parameters")

    demo.say("Set up the ledger and the hooks that hold the discipline")
    demo.ledger("init")
    demo.ledger("hooks", "install")

    demo.say("V1: measure the starting point; the first verdict establishes the baseline")
    demo.version("V1", "The current parameters are the baseline", {}, "confirmed")

    demo.say("V2: one bet, pre-registered before the code, then measured on four seeds")
    demo.version("V2", "A learning rate of 0.2 raises the score", {"lr": 0.2}, "confirmed")
    demo.ledger("show", "V2")

    demo.say("V3-V5: bets too small to see through the noise are refuted")
    demo.version("V3", "Dropout 0.29 raises the score", {"dropout": 0.29}, "refuted")
    demo.version("V4", "Width 33 raises the score", {"width": 33}, "refuted")
    demo.version("V5", "A learning rate of 0.21 raises the score", {"lr": 0.21}, "refuted")

    demo.say("Three refutations in a row: the Goodhart tripwire fires and registration stops")
    demo.ledger("triggers", expect=1)
    demo.ledger(
        "register",
        "V6",
        "--bet",
        "Dropout 0.28 raises the score",
        "--gate",
        "recent",
        "--files",
        "params.json",
        "--falsifier",
        "no gain",
        expect=1,
    )

    demo.say("Reflect: every section answered, committed; the next registration must cite it")
    demo.ledger("reflect")
    path = repo / "training_log" / "REFLECTION_V5.md"
    text = path.read_text()
    for title, answer in SECTIONS.items():
        text = text.replace(f"## {title}\n", f"## {title}\n\n{answer}\n")
    _write(path, text)
    output.say("$ edit training_log/REFLECTION_V5.md  # answer every section")
    demo.ledger("reflect", "V5", "--commit")
    demo.ledger("triggers")

    demo.say("A session may have crashed: doctor first (it also hardens git for worktrees)")
    demo.ledger("doctor", "--fix")

    demo.say("V6: three independent bets at once, each cell in its own worktree")
    spec = repo / ".git" / "demo-cells.toml"  # nothing outside the demo's directory
    cells: dict[str, tuple[str, float, str]] = {
        "A": ("lr", 0.3, "A learning rate of 0.3 raises the score"),
        "B": ("width", 64, "Width 64 raises the score"),
        "C": ("dropout", 0.1, "Dropout 0.1 raises the score"),
    }
    _write(
        spec,
        "".join(
            f'[cells.{name}]\nslug = "{key}"\nbet = "{bet}"\ngate = "recent"\nfiles = ["params.json"]\n'
            f'falsifier = "no gain beyond the adjusted threshold"\n\n'
            for name, (key, _, bet) in cells.items()
        ),
    )
    demo.ledger("matrix", "new", "V6", "--spec", str(spec), "--cites", "REFLECTION_V5")
    spec.unlink()
    for name, (knob, setting, _) in cells.items():
        worktree = next((repo / ".ledger" / "worktrees").glob(f"v6-{name.lower()}-*"))
        demo.params({knob: setting}, cwd=worktree)
        demo.git("commit", "-q", "-am", f"feat(params): V6.{name} — {knob} {setting}", cwd=worktree)
        demo.ledger("run", f"V6.{name}", "--gate", "recent", "--seeds", SEEDS, cwd=worktree)
    demo.ledger("matrix", "status", "V6")
    demo.ledger("matrix", "conclude", "V6", "--winner", "B")
    demo.ledger("matrix", "clean", "V6")

    demo.say("Where the loop stands, and what to do next")
    demo.ledger("baseline")
    demo.ledger("status")
    demo.ledger("log", "-n", "8")
    demo.ledger("doctor")
    output.say("")
    output.say(
        f"demo finished in {time.monotonic() - started:.1f} s; explore it: cd {repo} && git ledger status"
    )
    return 0
