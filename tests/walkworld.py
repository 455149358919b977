"""The acceptance walk of issue 25: follow ``git ledger next`` through git's dispatch, in a
hostile world, and check that what it proposes is never refused.

At every step the walker runs ``git ledger next --json`` as a subprocess (``git ledger``:
git finds ``git-ledger`` on PATH, as a user's shell does), fills the command's
placeholders, changes the files listed in ``edit``, and runs the command with ``bash``
in a repository whose hooks are installed and which has a bare remote. Between steps a
seeded world does what people, crashes and collaborators do (the ``EVENTS`` below).

The property, checked at every step:

- the command ``next`` gives exits 0, unless ``next`` itself said that the step needs a
  person's decision (:func:`needs_person`);
- whenever ``next`` says the loop is healthy (``status --json`` lists no problem, no
  run is running, and ``next`` proposes a loop step rather than a repair), ``git ledger
  verify`` passes and ``git push origin HEAD`` (through the pre-push hook) succeeds;
- at the same moments, the steps history leaves open (``verify``'s replay, which
  judges each code commit by them) are the steps ``status`` says are open (the state,
  by which the hooks let a code commit through): when they differ, a commit the hooks
  let through is refused by every push, or the other way round
  (:meth:`World.open_agrees`; versions and matrix cells: the campaign and batches
  loops open none, and the property says that history opens none there either);
- the loop moves on: ``next`` never proposes one command :data:`STUCK` times in a row
  (a state that neither the step it names nor a person's repair leaves: a walk stuck
  in it would pass while exercising nothing).

A violation raises :class:`WalkFailed` with what a developer needs to replay it: the
seed, the step, the world events before it, ``git log --oneline -5``, ``status --json``
and the refused command with its stderr. In ``collect`` mode the walk records the
violation instead, repairs what a person would (:meth:`World.as_person`) and goes on,
which is how a run lists every distinct failure of today's code::

    python -m tests.walkworld versions --seeds 1-5 --steps 300 --collect

Kills are timed (a random delay within the command's usual duration), so a replay of a
seed is close to, not exactly, the original walk.
"""

from __future__ import annotations

import json
import os
import random
import re
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

EVAL = """\
import argparse, json, os, random, runpy, time
arg = argparse.ArgumentParser()
arg.add_argument("--seed", type=int, required=True)
arg.add_argument("--out", required=True)
opt, _ = arg.parse_known_args()
time.sleep(float(os.environ.get("WALK_EVAL_SLEEP") or 0))
size = runpy.run_path("src/cache.py")["SIZE"]
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
    "<REASON>": "the walk states a reason",
    "<EVIDENCE>": "the criterion holds now",
    "<NOTES>": "the less invasive change won",
}
# Actions of `next` that repair the machine rather than step the loop: while `next`
# proposes one of them it does not say the loop is healthy.
REPAIRS = (
    "void",
    "fix-entry",
    "wait",
    "doctor",
    "record-finished",
    "status",
    "remove-lock",
    "drop-commit",
)
TIMEOUT = 180
# How many times in a row next may propose one command before the walk says it is stuck:
# a step that needs a person is proposed again until the world or a person changes
# something, which a walk does within a few steps (a lock goes, a run ends).
STUCK = 40


def needs_person(nxt: dict[str, Any]) -> str | None:
    """Why ``next`` says this step needs a person's decision, or None.

    ``next --json`` says it in its ``decide`` field (what the person decides); an
    action named like a decision or a reason that says so count too.
    """
    for key in ("decide", "needs_person", "person", "decision", "human", "manual"):
        if nxt.get(key):
            return f"next's field {key!r}"
    if re.search(r"decide|decision|person|human|manual", str(nxt.get("action", ""))):
        return f"next's action {nxt['action']!r}"
    said = re.search(
        r"needs? a person|a person('s)? (must|decides|should)|your decision|decide (yourself|whether)"
        r"|by hand|human",
        str(nxt.get("reason", "")),
        re.I,
    )
    return f"next's reason ({said.group(0)!r})" if said else None


@dataclass
class Failure:
    seed: int
    step: int
    kind: str  # refused, unfillable, next-failed, status-failed (the step); verify, push
    command: str  # what exited non-zero
    code: int
    stderr: str
    action: str  # what next --json said: action, command, reason
    proposed: str
    reason: str
    events: list[str]
    replay: str = ""
    state: str = ""

    def first_line(self) -> str:
        return _first(self.stderr)

    def report(self) -> str:
        said = f"next --json: action {self.action!r}, command: {self.proposed}"
        if self.kind in ("verify", "push"):
            said += "\n  (the loop is healthy by status --json: no problem, no run, no repair)"
        return (
            f"walk failed: seed {self.seed}, step {self.step}: {self.kind}\n{said}\n"
            f"  reason: {self.reason}\n{self.command} -> exit {self.code}; stderr:\n"
            f"{self.stderr.strip()}\nworld events before it (newest last): {self.events}\n"
            f"{self.state}\nreplay (kills are timed: close, not exact): {self.replay}"
        )


class _Abandoned(Exception):
    """The step cannot go on (collect mode): the walk goes on with the next one."""


class WalkFailed(AssertionError):
    def __init__(self, failure: Failure) -> None:
        super().__init__(failure.report())
        self.failure = failure


@dataclass
class Done:
    code: int
    out: str
    err: str


@dataclass
class Tally:
    steps: int = 0
    repos: int = 0
    actions: dict[str, int] = field(default_factory=dict)
    events: dict[str, int] = field(default_factory=dict)
    checks: int = 0  # verify + push checks made while healthy
    person: int = 0  # steps next said need a person
    notes: dict[str, int] = field(default_factory=dict)  # world events that did not happen

    def count(self, table: dict[str, int], key: str) -> None:
        table[key] = table.get(key, 0) + 1


class World:
    """One preset's walk: a repository, its bare remote, the seeded world around it."""

    preset = "versions"
    EVENTS: tuple[str, ...] = (
        "sigkill",
        "stale-lock",
        "live-lock",
        "uncommitted",
        "detached-kill",
        "feature-branch",
        "revert",
        "void",
        "config-set",
        "remeasure",
        "matrix",
        "phase",
        "tamper",
    )
    # Verbs a SIGKILL is aimed at: the loop's transitions.
    TRANSITIONS: tuple[str, ...] = (
        "register",
        "record",
        "conclude",
        "run",
        "void",
        "reflect",
        "config",
        "matrix",
    )
    # Settings that change verdicts, and values config set tries after results.
    SETTINGS: tuple[tuple[str, tuple[str, ...]], ...] = (
        ("gates.recent.noise_floor", ("0.5", "1.0", "4.0", "15.0", "40.0")),
        ("stats.sigma_k", ("1.0", "2.0", "3.0", "8.0")),
    )
    TAMPER = r"training_log/V\d+\.md"

    def __init__(
        self,
        root: Path,
        seed: int,
        events: tuple[str, ...] | None = None,
        odds: float = 0.3,
        collect: bool = False,
    ) -> None:
        self.root = root
        self.seed = seed
        self.rng = random.Random(seed)
        self.events = self.EVENTS if events is None else events
        self.odds = odds
        self.collect = collect
        self.failures: list[Failure] = []
        self.tally = Tally()
        self.recent: list[str] = []
        self.durations: dict[str, float] = {}
        self._status: dict[str, Any] = {}
        self._status_at: str | None = None  # the HEAD status --json was read at
        self.checked: str | None = None
        self.settings: dict[str, str] = {}  # what config set last wrote
        self.env = dict(os.environ)
        # The venv's programs (git-ledger's shim, python3) first: git dispatches to them.
        self.env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), self.env["PATH"]])
        self.env.pop("WALK_EVAL_SLEEP", None)
        self.new_repo()

    # --- the repository -------------------------------------------------------------

    def new_repo(self) -> None:
        self.tally.repos += 1
        n = self.tally.repos
        self.repo = self.root / f"{self.preset}-{n}"
        self.remote = self.root / f"{self.preset}-{n}.git"
        self.repo.mkdir()
        self.must(f"git init -q --bare {shlex.quote(str(self.remote))}", cwd=self.root)
        self.must("git init -q")
        self.setup()
        self.must("git ledger hooks install")
        self.must(f"git remote add origin {shlex.quote(str(self.remote))}")
        # The remote is another machine: its side of a push (receive-pack, its hooks,
        # the ref lock it holds) runs in a session of its own, so a SIGKILL of a local
        # verb's process group mid-push (register pushes) leaves it to end its side
        # and drop its lock, as a server does when a client goes away.
        self.must("git config remote.origin.receivepack 'setsid git-receive-pack'")
        self.must("git push -q origin HEAD")
        self.checked = None
        self._status, self._status_at = {}, None
        self.settings = {}
        self.fails_in_a_row = 0
        self.same: tuple[str | None, int] = (None, 0)  # the command next keeps proposing

    def setup(self) -> None:
        """The project before the ledger: a cache, its evaluation, a versions ledger."""
        (self.repo / "src").mkdir()
        (self.repo / "src/cache.py").write_text("SIZE = 64\n")
        (self.repo / "eval.py").write_text(EVAL)
        self.must("git add -A && git commit -q -m 'feat(cache): a cache and its evaluation'")
        self.must("git ledger init")
        toml = self.repo / "ledger.toml"
        toml.write_text(toml.read_text() + CONFIG_RUN)
        self.must("git commit -q -am 'chore(ledger): the gate runs eval.py'")

    def sh(self, command: str, cwd: Path | None = None, env: dict[str, str] | None = None) -> Done:
        try:
            proc = subprocess.run(
                ["bash", "-c", command],
                cwd=cwd or self.repo,
                capture_output=True,
                text=True,
                check=False,
                env=env or self.env,
                timeout=TIMEOUT,
            )
        except subprocess.TimeoutExpired as exc:
            return Done(124, str(exc.stdout or ""), f"timed out after {TIMEOUT} s: {command}")
        return Done(proc.returncode, proc.stdout, proc.stderr)

    def must(self, command: str, cwd: Path | None = None) -> str:
        done = self.sh(command, cwd)
        if done.code != 0:
            raise AssertionError(f"walk setup: {command} -> {done.code}\n{done.err}")
        return done.out

    def head(self) -> str:
        # Asked several times a step: git alone, without a shell.
        proc = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=self.repo,
            capture_output=True,
            text=True,
            check=False,
            env=self.env,
        )
        return proc.stdout.strip()

    def state(self) -> str:
        log = self.sh("git log --oneline -5").out
        status = self.sh("git ledger status --json")
        return (
            f"git log --oneline -5:\n{log}status --json ({status.code}):\n{status.out}{status.err}"
        )

    # --- the walk -------------------------------------------------------------------

    def walk(self, steps: int) -> None:
        while self.tally.steps < steps:
            try:
                self.step()
            except _Abandoned:
                continue

    def step(self) -> None:
        self.tally.steps += 1
        if self.rng.random() < self.odds:
            self.between()
        nxt = self.next()
        if nxt is None:
            return
        self.check_health(nxt)
        proposed = str(nxt.get("command"))
        again = self.same[1] + 1 if self.same[0] == proposed else 1
        self.same = (proposed, again)
        if again >= STUCK:
            self.same = (None, 0)
            said = f"next proposed this {again} times in a row: the loop does not move on"
            self.fail("stuck", proposed, Done(1, "", said), nxt)
        self.tally.count(self.tally.actions, str(nxt.get("action")))
        person = needs_person(nxt)
        if person:
            self.tally.person += 1
        command = self.fill(nxt)
        if command is None:
            return
        if self.rng.random() < self.odds and self.detour(nxt, command):
            return
        live = self.live_lock(command) if self.wants("live-lock", 0.5) else None
        started = time.monotonic()
        done = self.execute(command)
        self.timed(command, time.monotonic() - started)
        if live is not None:
            live.wait(timeout=60)
        if done.code == 0:
            self.fails_in_a_row = 0
        elif person:
            self.as_person(nxt)
        else:
            self.fail("refused", command, done, nxt)

    def execute(self, command: str) -> Done:
        """Run the command ``next`` proposed (here through git's dispatch; the MCP walk
        calls the server's tools instead: tests/walkmcp.py)."""
        return self.sh(command)

    def wants(self, event: str, odds: float) -> bool:
        return event in self.events and self.rng.random() < odds * self.odds

    def next(self) -> dict[str, Any] | None:
        done = self.sh("git ledger next --json")
        if done.code != 0:
            self.fail("next-failed", "git ledger next --json", done, {})
            return None
        data: dict[str, Any] = json.loads(done.out)
        return data

    @property
    def status(self) -> dict[str, Any]:
        """``status --json`` at HEAD, read when the world's choices need it (the health
        of a step is ``next``'s word alone: :meth:`healthy`)."""
        head = self.head()
        if head != self._status_at:
            self._status, self._status_at = self.read_status(), head
        return self._status

    def read_status(self) -> dict[str, Any]:
        """``status --json``'s reading, in this process: the world's own look (its
        choices, :meth:`open_agrees`), not a step of the loop, so no process of its own
        (a seventh of the MCP walk's time was these reads)."""
        from ledger.cli.status import status_data
        from ledger.core.errors import LedgerError

        try:
            data = status_data(self.repo)
        except LedgerError as exc:
            done = Done(exc.exit_code, "", exc.one_line())
            self.fail("status-failed", "git ledger status --json", done, {})
        return json.loads(json.dumps(data, default=str))

    def check_health(self, nxt: dict[str, Any]) -> None:
        """When ``next`` says the loop is healthy, verify and a push with hooks pass."""
        head = self.head()
        if head == self.checked:
            return
        self.checked = head
        if not self.healthy(nxt):
            return
        self.tally.checks += 1
        verify = self.sh("git ledger verify")
        if verify.code != 0:
            self.fail("verify", "git ledger verify", verify, nxt)
            return
        push = self.sh("git push -q origin HEAD")
        if push.code != 0:
            self.fail("push", "git push origin HEAD", push, nxt)
        differ = self.open_agrees()
        if differ:
            self.fail("open-differs", "git ledger verify", Done(1, "", differ), nxt)

    def open_agrees(self) -> str:
        """Why the open steps of verify's replay at HEAD differ from ``status``'s ('' when
        they agree). Read in this process (the replay's open steps are no command's
        output); verify has just replayed HEAD, so this reads its cache."""
        from ledger.core.context import open_context
        from ledger.core.verify.engine import replay

        ctx = open_context(self.repo)
        head = str(ctx.store.resolve(None))
        history = set(replay(ctx.store, ctx.config, ctx.config_file, head)[0]["o"])
        state = set(self.status.get("open", []))
        if history == state:
            return ""
        return (
            f"verify's replay leaves {sorted(history)} open at HEAD, status says "
            f"{sorted(state)}: the hooks and verify judge code commits by different steps"
        )

    def healthy(self, nxt: dict[str, Any]) -> bool:
        """Whether ``next`` says the loop is healthy: a step of the loop, not a repair of
        the machine (a lock, an interrupted transition, uncommitted entries, a run still
        running, history findings) nor a person's decision. ``status`` is not asked:
        a problem it shows that ``next`` steps past fails the walk at verify or push."""
        action, command = str(nxt.get("action")), str(nxt.get("command"))
        return (
            needs_person(nxt) is None
            and action not in REPAIRS
            and not any(f"git ledger {verb}" in command for verb in ("doctor", "wait", "void"))
            and "--record-finished" not in command
        )

    def fail(self, kind: str, command: str, done: Done, nxt: dict[str, Any]) -> NoReturn:
        events = f" --events {','.join(self.events)}" if self.events != self.EVENTS else ""
        failure = Failure(
            self.seed,
            self.tally.steps,
            kind,
            command,
            done.code,
            done.err or done.out,
            str(nxt.get("action")),
            str(nxt.get("command")),
            str(nxt.get("reason")),
            list(self.recent[-4:]),
            f"python -m tests.walkworld {self.preset} --seeds {self.seed} "
            f"--steps {self.tally.steps} --odds {self.odds}{events}",
        )
        if not self.collect:
            failure.state = self.state()
            raise WalkFailed(failure)
        self.failures.append(failure)
        print(
            f"FAIL seed {self.seed} step {self.tally.steps} {kind} ({failure.action}) "
            f"exit {done.code}: {failure.command[:120]}\n  {failure.first_line()[:200]}\n"
            f"  after {failure.events[-2:]}",
            file=sys.stderr,
            flush=True,
        )
        self.fails_in_a_row += 1
        again = len(self.failures) > 1 and cause(self.failures[-2]) == cause(failure)
        if self.fails_in_a_row >= 3 or again:
            self.new_repo()  # this repository is stuck: the rest of the walk starts afresh
            self.recent.append("(a new repository: this one is stuck)")
        else:
            self.as_person()
        raise _Abandoned  # the step's command was chosen in a state that is gone

    def as_person(self, nxt: dict[str, Any] | None = None) -> None:
        """What a person does when the loop is stuck: finish or abort git's own
        operations, remove lock files, let doctor fix and stop what it can, and restore
        history the way ``next`` says (a ``git revert`` it names)."""
        for op in ("merge", "revert", "cherry-pick"):
            self.sh(f"git {op} --abort")
        # A ledger entry is never deleted: a deletion git shows (staged or not) is put
        # back from the commit before history is restored (a revert refuses to run over
        # it). Noted: status and next do not read the directories only transitions write.
        deleted = self.sh("git diff --name-only -z --diff-filter=D HEAD -- training_log").out
        for path in [p for p in deleted.split("\0") if p]:
            self.sh(f"git restore --source=HEAD --staged --worktree -- {shlex.quote(path)}")
            self.note(f"a person restored a deleted entry under {path.rsplit('/', 1)[0]}/")
        said = f"{(nxt or {}).get('decide', '')} {(nxt or {}).get('reason', '')}"
        for sha in dict.fromkeys(re.findall(r"\bgit revert ([0-9a-f]{7,40})\b", said)):
            done = self.sh(f"git revert --no-edit {sha}")
            if done.code != 0:
                # A conflict with what later commits changed: the person resolves it in
                # favour of the text before the reverted commit (-X theirs).
                self.sh("git revert --abort")
                done = self.sh(f"git revert --no-edit -X theirs {sha}")
            if done.code != 0:
                self.sh("git revert --abort")
                self.note("a person's revert did not apply", done)
        git_dir = self.repo / ".git"
        for lock in [git_dir / "index.lock", *git_dir.joinpath("refs").rglob("*.lock")]:
            lock.unlink(missing_ok=True)
        self.sh("git ledger doctor --fix --stop-runs")
        self.sh("git ledger wait --timeout 60")
        self.checked = None

    def note(self, what: str, done: Done | None = None) -> None:
        """A world event that did not happen as planned (kept for the report)."""
        line = what if done is None else f"{what}: exit {done.code}: {_first(done.err or done.out)}"
        self.tally.count(self.tally.notes, line[:160])

    def event(self, name: str, detail: str = "") -> None:
        self.tally.count(self.tally.events, name)
        self.recent.append(f"step {self.tally.steps}: {name}{' ' + detail if detail else ''}")

    def timed(self, command: str, took: float) -> None:
        """Remember how long a transition usually takes: kills aim within it."""
        verb = _plain_ledger(command)
        if verb is not None:
            self.durations[verb] = self.durations.get(verb, took) * 0.7 + took * 0.3

    def live_lock(self, command: str) -> subprocess.Popen[bytes] | None:
        """A live process holds a lock for a moment while the proposed command runs: the
        ledger's writer lock (flock), or git's index.lock as a running git does (only
        around a ``git ledger`` command: plain git refuses a held index.lock by design)."""
        hold = self.rng.uniform(0.2, 2.5)
        git_dir = self.repo / ".git"
        index = git_dir / "index.lock"
        if self.rng.random() < 0.5 or _plain_ledger(command) is None or index.exists():
            what, code = (
                "write.lock",
                (
                    "import fcntl, os, time\n"
                    f"os.makedirs({str(git_dir / 'ledger')!r}, exist_ok=True)\n"
                    f"fd = os.open({str(git_dir / 'ledger/write.lock')!r}, os.O_CREAT | os.O_RDWR)\n"
                    f"fcntl.flock(fd, fcntl.LOCK_EX); print('held', flush=True); time.sleep({hold})\n"
                ),
            )
        else:
            what, code = (
                "index.lock",
                (
                    "import os, time\n"
                    f"fd = os.open({str(index)!r}, os.O_CREAT | os.O_EXCL | os.O_WRONLY)\n"
                    f"print('held', flush=True); time.sleep({hold}); os.unlink({str(index)!r})\n"
                ),
            )
        proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE)
        assert proc.stdout is not None
        proc.stdout.readline()  # held before the command starts
        self.event("live-lock", f"{what} for {hold:.1f}s")
        return proc

    # --- placeholders ---------------------------------------------------------------

    def fill(self, nxt: dict[str, Any]) -> str | None:
        for rel in nxt.get("edit", []):
            self.edit(str(rel))
        command = str(nxt.get("command", ""))
        for placeholder in [*nxt.get("placeholders", []), *re.findall(r"<[A-Z_.a-z]+>", command)]:
            value = self.value(str(placeholder), nxt)
            if value is None:
                done = Done(2, "", f"no value for placeholder {placeholder}")
                self.fail("unfillable", command, done, nxt)
                return None
            command = command.replace(str(placeholder), value)
        if re.search(r"(^|&& )git commit\s*($|&&)", command):
            command = re.sub(r"git commit\s*($|&&)", r"git commit -m 'walk: commit' \1", command)
        return command

    def value(self, placeholder: str, nxt: dict[str, Any]) -> str | None:
        if placeholder in ("<RESULTS.json>", "RESULTS.json"):
            path = self.root / f"results-{self.tally.repos}-{self.tally.steps}.json"
            score = 50 + 8 + self.rng.gauss(0, 1)
            path.write_text(json.dumps({"score": score, "hit_rate": 0.5}))
            return str(path)
        return FILL.get(placeholder)

    def edit(self, rel: str) -> None:
        path = self.repo / rel
        if "REFLECTION_" in rel:
            text = path.read_text()
            for title in re.findall(r"^## (.+)$", text, re.M):
                # Each section its own answer (a repeat does not count), the target kept.
                answer = f"Answered on the walk about {title.lower()}; keep as target."
                text = text.replace(f"## {title}\n", f"## {title}\n\n{answer}\n", 1)
            path.write_text(text)
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        size = self.rng.choice([40, 64, 65, 96, 128, 200])
        path.write_text(f"SIZE = {size}  # step {self.tally.steps}\n")

    # --- the world ------------------------------------------------------------------

    def between(self) -> None:
        """A world event between two steps (state changes before ``next`` is asked)."""
        names = [e for e in self.events if e in BETWEEN and BETWEEN[e][1](self)]
        if names:
            name = self.rng.choice(names)
            BETWEEN[name][0](self)

    def detour(self, nxt: dict[str, Any], command: str) -> bool:
        """Instead of the proposed command, an event that uses it (True: taken)."""
        names = [e for e in self.events if e in DETOURS and DETOURS[e][1](self, nxt, command)]
        if not names:
            return False
        name = self.rng.choice(names)
        DETOURS[name][0](self, nxt, command)
        return True

    def versions(self) -> list[dict[str, Any]]:
        return list(self.status.get("recent", []))

    def has_results(self) -> bool:
        return bool(self.status.get("counts", {}).get("results"))

    def open_version(self) -> str | None:
        opened = self.status.get("open") or []
        return str(opened[0]) if opened else None

    def concluded(self) -> str | None:
        done = [
            v["id"] for v in self.versions() if v["state"] == "concluded" and "." not in v["id"]
        ]
        return str(done[-1]) if done else None

    def kill_later(self, command: str, verb: str, env: dict[str, str] | None = None) -> str:
        """Start ``command`` and SIGKILL its process group after a random delay within
        the verb's usual duration; returns what happened."""
        typical = self.durations.get(verb, 1.5)
        delay = self.rng.uniform(0.0, typical * 1.2)
        started = time.monotonic()
        proc = subprocess.Popen(
            ["bash", "-c", command],
            cwd=self.repo,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=env or self.env,
            start_new_session=True,
        )
        try:
            proc.wait(timeout=delay)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            self.remote_settled()
            return f"killed after {delay:.2f}s"
        self.timed(command, time.monotonic() - started)
        return f"ended ({proc.returncode}) before the kill at {delay:.2f}s"

    def remote_settled(self, timeout: float = 20.0) -> None:
        """Wait for the remote's side of a push the kill cut off to end (its ref locks
        gone): the next push meets a server that is done, not one mid-update."""
        deadline = time.monotonic() + timeout
        while any(self.remote.glob("**/*.lock")) and time.monotonic() < deadline:
            time.sleep(0.05)


def _first(text: str) -> str:
    """The line that says what went wrong: the first error, else the first line."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    errors = [ln for ln in lines if re.search(r"error|refused|fatal|Traceback", ln)]
    return (errors or lines or ["(nothing)"])[0]


# --- world events between steps ---------------------------------------------------------


def stale_lock(w: World) -> None:
    """A lock file left by a killed git: fresh (seconds) or old (past doctor's 10 min)."""
    git_dir = w.repo / ".git"
    lock = w.rng.choice([git_dir / "index.lock", git_dir / "refs/heads/main.lock"])
    lock.write_text("")
    age = w.rng.choice([5.0, 20 * 60.0, 3 * 3600.0])
    os.utime(lock, (time.time() - age, time.time() - age))
    w.event("stale-lock", f"{lock.name} {age:.0f}s old")


def uncommitted(w: World) -> None:
    """A file written under training_log/ and never committed (a crash, a hand edit)."""
    n = w.tally.steps
    roll = w.rng.random()
    ledger = w.repo / "training_log"
    if roll < 0.5:
        (ledger / "notes").mkdir(exist_ok=True)
        (ledger / f"notes/walk-{n}.md").write_text(f"# A note from step {n}\n")
        w.event("uncommitted", f"notes/walk-{n}.md")
        return
    reflections = sorted(ledger.glob("REFLECTION_*.md"))
    if reflections and roll < 0.8:
        target = w.rng.choice(reflections)
        with target.open("a") as handle:
            handle.write(f"\nAn afterthought from step {n}.\n")
        w.event("uncommitted", f"appended to {target.name}")
        return
    results = sorted(ledger.glob("results/*/*/*.json"))
    if results:
        source = w.rng.choice(results)
        copy = source.with_name(f"walk-copy-{n}.json")
        copy.write_bytes(source.read_bytes())
        w.event("uncommitted", f"a copy of a result: {copy.relative_to(w.repo)}")
        return
    (ledger / "scratch.md").write_text(f"scratch {n}\n")
    w.event("uncommitted", "scratch.md")


def revert(w: World) -> None:
    """``git revert`` of one of the last ledger transitions (hooks on)."""
    log = "git log --first-parent -n 8 --format='%H %(trailers:key=Ledger-Transition,valueonly)'"
    shas = [
        line.split()[0]
        for line in w.sh(log).out.splitlines()
        if len(line.split()) == 2 and line.split()[1] != "init"  # the ledger's birth stays
    ]
    if not shas:
        return
    sha = w.rng.choice(shas)
    kind = w.sh(f"git log -1 --format='%(trailers:key=Ledger-Transition,valueonly)' {sha}").out
    done = w.sh(f"git revert --no-edit {sha}")
    w.event("revert", f"{sha[:10]} ({kind.strip()}): exit {done.code}")
    if done.code != 0:
        w.note("git revert of a transition refused", done)
        w.sh("git revert --abort")


def void(w: World) -> None:
    vid = w.open_version()
    if vid is None:
        return
    done = w.sh(f"git ledger void {vid} --reason 'the walk voids it'")
    w.event("void", f"{vid}: exit {done.code}")
    if done.code != 0:
        w.note("void of the open version refused", done)


def config_set(w: World) -> None:
    """A verdict-affecting setting changed after results are on record."""
    key, values = w.rng.choice(w.SETTINGS)
    value = w.rng.choice([v for v in values if v != w.settings.get(key)])
    w.settings[key] = value
    done = w.sh(f"git ledger config set {key} {value} --reason 'the walk retunes it'")
    w.event("config-set", f"{key}={value}: exit {done.code}")
    if done.code != 0:
        w.note(f"config set {key} refused", done)


def remeasure(w: World) -> None:
    """Measure a concluded version again, to know the eval's noise for a reflection."""
    vid = w.concluded()
    if vid is None:
        return
    done = w.sh(f"git ledger run {vid} --gate recent --seeds 1,2 --remeasure 'eval noise'")
    w.event("remeasure", f"{vid}: exit {done.code}")
    if done.code != 0:
        w.note("run --remeasure refused", done)


def tamper(w: World) -> None:
    """A hand edit of a registered bet (a contract, the first weights), committed with
    --no-verify (an adversary)."""
    files = w.sh("git ls-files training_log").out.split()
    files = [f for f in files if re.fullmatch(w.TAMPER, f)]
    if not files:
        return
    rel = w.rng.choice(files)
    path = w.repo / rel
    text = path.read_text()
    tampered = re.sub(r"^bet: (.*)$", r"bet: \1 (tampered)", text, count=1, flags=re.M)
    if tampered == text:  # no bet: change the first number, or append a line
        tampered = re.sub(r"\d+", lambda m: str(int(m.group(0)) + 1), text, count=1)
    path.write_text(tampered if tampered != text else text + "Tampered.\n")
    done = w.sh(f"git commit -q --no-verify -m 'docs: fix a typo' -- {rel}")
    w.event("tamper", f"{rel}: exit {done.code}")


def _has_results(w: World) -> bool:
    return w.has_results()


BETWEEN: dict[str, tuple[Callable[[World], None], Callable[[World], bool]]] = {
    "stale-lock": (stale_lock, lambda w: True),
    "uncommitted": (uncommitted, lambda w: True),
    "revert": (revert, lambda w: True),
    "void": (void, lambda w: w.open_version() is not None),
    "config-set": (config_set, _has_results),
    "remeasure": (remeasure, lambda w: w.concluded() is not None),
    "tamper": (tamper, lambda w: True),
}


# --- world events that take the place of the proposed command --------------------------


def _plain_ledger(command: str) -> str | None:
    """The verb of a single ``git ledger VERB ...`` command (no ``cd``, no ``&&``)."""
    words = command.split()
    if "&&" in words or words[:2] != ["git", "ledger"] or len(words) < 3:
        return None
    return words[2]


def sigkill(w: World, nxt: dict[str, Any], command: str) -> None:
    verb = _plain_ledger(command)
    if verb not in w.TRANSITIONS:  # a transition of the walk's own: a result for the open version
        vid = w.open_version()
        if vid is None:
            return
        path = w.root / f"killed-{w.tally.steps}.json"
        path.write_text(json.dumps({"score": 57.0, "hit_rate": 0.5}))
        verb, command = (
            "record",
            f"git ledger record {vid} --gate recent --seed 9{w.tally.steps} {path}",
        )
    what = w.kill_later(command, verb)
    w.event("sigkill", f"{verb}: {what}")


def detached_kill(w: World, nxt: dict[str, Any], command: str) -> None:
    env = {**w.env, "WALK_EVAL_SLEEP": "1"}
    done = w.sh(command + " --detach --json", env=env)
    if done.code != 0:
        w.note("run --detach refused", done)
        return
    started = json.loads(done.out)
    if "pid" not in started:  # nothing was started in the background (e.g. all recorded)
        w.note("run --detach started nothing", done)
        return
    pid = int(started["pid"])
    delay = w.rng.uniform(0.1, 3.0)
    time.sleep(delay)
    try:
        os.killpg(pid, signal.SIGKILL)
        what = f"killed after {delay:.2f}s"
    except ProcessLookupError:
        what = "had ended"
    w.event("detached-kill", what)


def feature_branch(w: World, nxt: dict[str, Any], command: str) -> None:
    """Register on a feature branch, follow ``next`` there a few steps, merge it back
    with a merge commit or a squash."""
    branch = f"walk-feature-{w.tally.steps}"
    w.must(f"git checkout -q -b {branch}")
    how = w.rng.choice(["merge", "squash"])
    w.event("feature-branch", f"{branch} ({how})")
    repo = w.repo
    try:
        done = w.sh(command)
        if done.code != 0:
            w.fail("refused", f"(on {branch}) {command}", done, nxt)
        for _ in range(w.rng.randint(1, 4)):
            inner = w.next()
            if inner is None or inner.get("action") in ("register", "reflect"):
                break
            filled = w.fill(inner)
            done = w.sh(filled) if filled is not None else Done(0, "", "")
            if done.code != 0:
                w.fail("refused", f"(on {branch}) {filled}", done, inner)
        w.sh("git add -A src && git commit -q -m 'wip: the rest of the feature'")
    finally:
        if w.repo == repo:  # back on main, whatever happened on the branch
            w.sh("git checkout -q main || git checkout -q -f main")
    if how == "merge":
        merged = w.sh(f"git merge -q --no-ff -m 'Merge branch {branch}' {branch}")
        if merged.code != 0:
            w.note("merge of a feature branch refused", merged)
            w.sh("git merge --abort")
    else:
        merged = w.sh(f"git merge -q --squash {branch} && git commit -q -m 'feat: {branch}'")
        if merged.code != 0:
            w.note("squash of a feature branch refused", merged)
            w.sh("git reset -q --merge")
    w.recent.append(f"step {w.tally.steps}: {how} of {branch}: exit {merged.code}")


def matrix(w: World, nxt: dict[str, Any], command: str) -> None:
    mid = str(nxt.get("step"))
    cells = "ABCDEF"[: w.rng.randint(2, 6)]
    spec = w.root / f"matrix-{w.tally.repos}-{mid}.toml"
    spec.write_text(
        "".join(
            f'[cells.{c}]\nslug = "s{c.lower()}"\nbet = "Cell {c} moves the score"\n'
            f'gate = "recent"\nfiles = ["{f}"]\nfalsifier = "no gain"\n\n'
            # Disjoint files, as independent cells should have (src/cache.py is measured).
            for c, f in zip(
                cells,
                ["src/cache.py", *(f"src/cell_{c.lower()}.py" for c in cells[1:])],
                strict=True,
            )
        )
    )
    cites = re.search(r"--cites (\S+)", command)
    matrix_new = f"git ledger matrix new {mid} --spec {spec}" + (
        f" --cites {cites.group(1)}" if cites else ""
    )
    w.event("matrix", f"{mid} with {len(cells)} cells")
    done = w.sh(matrix_new)
    if done.code != 0:
        w.note("matrix new refused", done)


def phase(w: World, nxt: dict[str, Any], command: str) -> None:
    declare = (
        "git ledger phase declare --reason 'out of ideas' --exhausted sizes "
        "--resume-criterion 'a new idea' --force 'a walk detour'"
    )
    w.event("phase", "declare")
    done = w.sh(declare)
    if done.code != 0:
        w.note("phase declare refused", done)


def _registers(w: World, nxt: dict[str, Any], command: str) -> bool:
    return nxt.get("action") == "register" and _plain_ledger(command) == "register"


def _runs(w: World, nxt: dict[str, Any], command: str) -> bool:
    return _plain_ledger(command) == "run" and "--remeasure" not in command


DETOURS: dict[str, tuple[Callable[[World, dict[str, Any], str], None], Callable[..., bool]]] = {
    "sigkill": (
        sigkill,
        lambda w, nxt, c: _plain_ledger(c) in w.TRANSITIONS or bool(w.open_version()),
    ),
    "detached-kill": (detached_kill, _runs),
    "feature-branch": (feature_branch, _registers),
    "matrix": (matrix, _registers),
    "phase": (phase, _registers),
}


# --- the other presets ---------------------------------------------------------------


class TokenWorld(World):
    """A preset whose ``next`` marks what the walker supplies with bare words (TEXT,
    CANDIDATE, X, ``a|b``) rather than ``<PLACEHOLDERS>``, and may offer ``alternatives``
    (the ideas of tests/test_next_walk.py, run through git's dispatch here)."""

    def step(self) -> None:
        super().step()
        if self.done:  # the loop ended: the next walk starts in a fresh repository
            self.new_repo()

    def new_repo(self) -> None:
        self.done = False
        self.code_n = 0
        self.repo_steps = self.tally.steps
        super().new_repo()

    def setup(self) -> None:
        (self.repo / "src").mkdir()
        (self.repo / "src/app.py").write_text("x = 0\n")
        self.must("git add -A && git commit -q -m 'feat(src): the app'")
        self.must(f"git ledger init --preset {self.preset}")

    def fill(self, nxt: dict[str, Any]) -> str | None:
        if nxt.get("alternatives") and self.rng.random() < self.alternative_odds(nxt):
            nxt = self.rng.choice(nxt["alternatives"])
            self.tally.count(self.tally.actions, f"alt:{nxt.get('action')}")
        self.done = bool(nxt.get("done"))
        parts = []
        for part in str(nxt["command"]).split(" && "):
            words = shlex.split(part)
            if words[:1] == ["$EDITOR"]:
                if not self.edit_named(words[1]):
                    self.fail("unfillable", str(nxt["command"]), Done(2, "", part), nxt)
                    return None
                continue
            parts.append(shlex.join(self.words(words, nxt)))
        return " && ".join(parts) or "true"

    def alternative_odds(self, nxt: dict[str, Any]) -> float:
        return 0.08

    def has_results(self) -> bool:
        """Measurements on record: candidates, or topics."""
        return bool(self.sh("git ls-files training_log/candidates training_log/topics").out)

    def edit_named(self, rel: str) -> bool:
        return False

    def words(self, words: list[str], nxt: dict[str, Any]) -> list[str]:
        out = []
        for word in words:
            if word == "TEXT":
                word = f"text {self.tally.steps}"
            elif word in FILL:
                word = FILL[word]
            elif "|" in word and " " not in word:
                word = self.rng.choice(word.split("|"))
            out.append(word)
        return out

    def code_commit(self) -> str:
        """A candidate's code, committed as the step says (a refusal is the step's)."""
        self.code_n += 1
        rel = f"src/c{self.tally.repos}_{self.code_n}.py"
        (self.repo / rel).write_text(f"x = {self.code_n}\n")
        commit = f"git add {rel} && git commit -q -m 'perf(src): candidate {self.code_n}'"
        done = self.sh(commit)
        if done.code != 0:
            self.fail("refused", commit, done, {"action": "candidate (its code commit)"})
            raise _Abandoned  # the step cannot go on without its candidate
        return self.head()


class CampaignWorld(TokenWorld):
    preset = "campaign"
    EVENTS = ("sigkill", "stale-lock", "live-lock", "uncommitted", "revert", "config-set", "tamper")
    TRANSITIONS = ("candidate", "contract", "arm", "close", "benchmark", "mistake", "finish")
    SETTINGS = (
        ("campaign.noise_floor", ("0.5", "2.0")),
        ("campaign.correctness_tolerance", ("1e-4", "1e-3", "1e-2")),
    )
    TAMPER = r"training_log/contract\.md"

    def alternative_odds(self, nxt: dict[str, Any]) -> float:
        # Long enough in one repository: close the campaign so the walk sees its end.
        # Not instead of recording a commit a killed step left unrecorded (next names
        # it): finish refuses while one stands, so closing forever never reaches it.
        fresh = "--commit CANDIDATE" in str(nxt.get("command"))
        return 1.0 if fresh and self.tally.steps - self.repo_steps > 60 else 0.08

    def edit_named(self, rel: str) -> bool:
        if not rel.endswith("contract.md"):
            return False
        path = self.repo / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("# Contract\n\nWe measure speed on bench.py. Only src/ may change.\n")
        return True

    def words(self, words: list[str], nxt: dict[str, Any]) -> list[str]:
        verdict = None
        if "--verdict" in words:
            i = words.index("--verdict") + 1
            verdict = words[i] = self.rng.choice(words[i].split("|"))
        head = (nxt.get("bar") or {}).get("head")
        out = []
        for word in words:
            if word == "CANDIDATE":
                word = self.code_commit()
            elif word.endswith("=X"):
                word = f"{word[:-2]}={self.measure(word[:-2], verdict, head)}"
            out.append(word)
        return super().words(out, nxt)

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


class BatchesWorld(TokenWorld):
    preset = "batches"
    EVENTS = ("sigkill", "stale-lock", "live-lock", "uncommitted", "revert", "config-set", "tamper")
    TRANSITIONS = ("weights", "gate", "trace")
    SETTINGS = (("batches.fidelity_min", ("0.7", "0.8", "0.9")), ("batches.hard_line", ("6", "7")))
    TAMPER = r"training_log/weights/batch-0\.json"

    def new_repo(self) -> None:
        super().new_repo()
        self.weights = self.root / f"weights-{self.tally.repos}.json"
        style = {"tone": "plain", "length": 3, "B1.L0": 0.5}
        self.weights.write_text(json.dumps({"style": style, "label": "frozen-A"}))

    def words(self, words: list[str], nxt: dict[str, Any]) -> list[str]:
        out = []
        for i, word in enumerate(words):
            if word == "WEIGHTS.json":
                word = str(self.weights)
            elif word == "RUN":
                word = f"walk-{self.tally.repos}"
            elif word == "X" and words[i - 1] == "--fidelity-rate":
                word = f"{self.rng.uniform(0.75, 1.0):.4f}"
            elif word == "VALUE":
                key = words[words.index("--key") + 1]
                old = next(r["value"] for r in nxt.get("revisable", []) if r["key"] == key)
                word = json.dumps(self.revised(old))
            out.append(word)
        for flag in ("--mono", "--endpoint"):
            if flag in out:
                out[out.index(flag) + 1] = "true" if self.rng.random() < 0.97 else "false"
        if out[2:4] == ["weights", "init"] and "--frozen" not in out:
            out += ["--frozen", "label"]
        return super().words(out, nxt)

    def revised(self, old: Any) -> Any:
        if isinstance(old, bool):
            return not old
        if isinstance(old, int | float):
            return old + self.rng.choice([1, 2, 3])
        return f"{old}-{self.tally.steps}"


# --- collecting every distinct failure (python -m tests.walkworld) ----------------------

PRESETS: dict[str, type[World]] = {
    "versions": World,
    "campaign": CampaignWorld,
    "batches": BatchesWorld,
}


def sealed_env(root: Path) -> None:
    """What tests/conftest.py's ``hermetic`` fixture gives a test, for a run outside pytest."""
    home = root / "home"
    (home / "bin").mkdir(parents=True)
    (root / "templates").mkdir()
    for var in list(os.environ):
        if var.startswith(("GIT_", "LEDGER_")):
            del os.environ[var]
    (home / ".gitconfig").write_text(
        "[init]\n\tdefaultBranch = main\n[advice]\n\tdetachedHead = false\n"
        '[protocol "file"]\n\tallow = always\n'
    )
    shim = home / "bin/git-ledger"
    shim.write_text(
        f"#!{sys.executable}\nimport sys\nfrom ledger.__main__ import main\nsys.exit(main())\n"
    )
    shim.chmod(0o755)
    checkout = Path(__file__).resolve().parent.parent
    os.environ.update(
        HOME=str(home),
        XDG_CONFIG_HOME=str(home / ".config"),
        GIT_CONFIG_NOSYSTEM="1",
        GIT_CONFIG_GLOBAL=str(home / ".gitconfig"),
        GIT_TEMPLATE_DIR=str(root / "templates"),
        GIT_AUTHOR_NAME="Test Author",
        GIT_AUTHOR_EMAIL="author@example.com",
        GIT_COMMITTER_NAME="Test Committer",
        GIT_COMMITTER_EMAIL="committer@example.com",
        GIT_AUTHOR_DATE="@1767225600 +0000",
        GIT_COMMITTER_DATE="@1767225600 +0000",
        TZ="UTC",
        COLUMNS="200",
        PYTHONPATH=str(checkout),
        PATH=f"{home / 'bin'}{os.pathsep}{os.environ['PATH']}",
    )


def cause(failure: Failure) -> str:
    """A failure's signature: its kind, the action, the exit and the stderr's first line
    with ids, numbers and paths blurred."""
    line = re.sub(r"/\S+", "PATH", failure.first_line())
    line = re.sub(r"\b[0-9a-f]{7,40}\b", "SHA", line)
    line = re.sub(r"\b([A-Z]+)\d+(\.[A-Z])?\b", r"\1n", line)
    line = re.sub(r"\d+(\.\d+)?", "N", line)
    return f"{failure.kind} | exit {failure.code} | {line[:160]}"


def main(argv: list[str] | None = None) -> int:
    import argparse
    import tempfile

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("preset", choices=sorted(PRESETS))
    parser.add_argument("--seeds", default="1", help="N, N-M or N,M,...")
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--events", default="", help="comma-separated (default: every event)")
    parser.add_argument("--odds", type=float, default=0.3, help="a world event's odds a step")
    parser.add_argument("--collect", action="store_true", help="go on after a failure")
    parser.add_argument("--json", dest="as_json", help="write every failure here")
    opt = parser.parse_args(argv)
    if "-" in opt.seeds:
        low, high = opt.seeds.split("-")
        seeds = list(range(int(low), int(high) + 1))
    else:
        seeds = [int(s) for s in opt.seeds.split(",")]
    events = tuple(e for e in opt.events.split(",") if e) or None
    found: dict[str, list[Failure]] = {}
    with tempfile.TemporaryDirectory(prefix="walk-") as tmp:
        sealed_env(Path(tmp))
        for seed in seeds:
            root = Path(tmp) / f"seed-{seed}"
            root.mkdir()
            world = PRESETS[opt.preset](root, seed, events, odds=opt.odds, collect=opt.collect)
            started = time.monotonic()
            try:
                world.walk(opt.steps)
            except WalkFailed as exc:
                world.failures.append(exc.failure)
                print(exc.failure.report(), file=sys.stderr)
            t = world.tally
            print(
                f"seed {seed}: {t.steps} steps in {time.monotonic() - started:.0f}s, "
                f"{t.repos} repo(s), {len(world.failures)} failure(s), {t.checks} healthy "
                f"checks, person {t.person}\n  actions {t.actions}\n  events {t.events}"
                f"\n  notes {t.notes}",
                flush=True,
            )
            for failure in world.failures:
                found.setdefault(cause(failure), []).append(failure)
    for key, group in sorted(found.items(), key=lambda kv: -len(kv[1])):
        first = group[0]
        print(f"\n{len(group)}x {key}\n  e.g. seed {first.seed} step {first.step}: {first.command}")
        print(f"  events before: {first.events[-2:]}")
    if opt.as_json:
        Path(opt.as_json).write_text(
            json.dumps({k: [f.__dict__ for f in v] for k, v in found.items()}, indent=1)
        )
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
