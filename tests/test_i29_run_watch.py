"""Issue 29: a run you can watch. Under a terminal, ``run`` shows each seed's metric
values as that seed ends (before the run as a whole ends), a progress bar with time
left, and ends with a ``next:`` line; ``conclude`` ends with one too."""

from __future__ import annotations

import os
import pty
import re
import select
import subprocess
import sys
import time

import pytest

from tests.helpers import Repo, register

# Seed 3 waits until the test has seen seeds 1 and 2 on the terminal and says go:
# what the test sees of them is then seen before the run ends.
GATE = """\
import json, os, sys, time
seed, out = sys.argv[1], sys.argv[2]
if seed == "3":
    deadline = time.time() + 60
    while not os.path.exists("go") and time.time() < deadline:
        time.sleep(0.05)
with open(out, "w") as handle:
    json.dump({"score": 10.0 + int(seed) / 10, "loss": 1.0 / int(seed)}, handle)
"""

CONFIG = """\
[ledger]
dir = "training_log"

[gates.recent]
metric = "score"
noise_floor = 0.5
command = ["{python}", "gate.py", "{{seed}}", "{{out}}"]
[gates.recent.metrics]
score = "$.score"
loss = "$.loss"
"""

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07|\r")


@pytest.fixture
def gated(bare_repo: Repo) -> Repo:
    bare_repo.write("gate.py", GATE)
    bare_repo.write("ledger.toml", CONFIG.format(python=sys.executable))
    bare_repo.write(".gitignore", "go\n")
    bare_repo.commit_all("chore: gate")
    bare_repo.ok("init")
    assert register(bare_repo, "V1").code == 0
    return bare_repo


def _read(master: int, timeout: float) -> bytes:
    ready, _, _ = select.select([master], [], [], timeout)
    if not ready:
        return b""
    try:
        return os.read(master, 65536)
    except OSError:  # EIO: the terminal's other end is closed
        return b""


def test_run_under_a_terminal_shows_each_seed_as_it_ends_and_a_next_line(gated: Repo) -> None:
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        ["git", "ledger", "run", "V1", "--gate", "recent", "--seeds", "1,2,3"],
        cwd=gated.path,
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env={**os.environ, "TERM": "xterm-256color"},
    )
    os.close(slave)
    seen = b""
    deadline = time.monotonic() + 60
    try:
        while time.monotonic() < deadline:
            text = ANSI.sub("", seen.decode(errors="replace"))
            if "seed 1: score = 10.1, loss = 1" in text and "seed 2: score = 10.2" in text:
                break
            seen += _read(master, 0.2)
        before_end = ANSI.sub("", seen.decode(errors="replace"))
        assert proc.poll() is None, "the run waits for the go file: it has not ended yet"
        assert "V1 recent seed 1: score = 10.1, loss = 1 (" in before_end, before_end[-1500:]
        assert "V1 recent seed 2: score = 10.2, loss = 0.5 (" in before_end, before_end[-1500:]
        assert "seed 3: score" not in before_end
        assert "next:" not in before_end
        (gated.path / "go").write_text("")
        while proc.poll() is None:
            seen += _read(master, 0.2)
        while chunk := _read(master, 0.2):
            seen += chunk
    finally:
        (gated.path / "go").write_text("")
        proc.wait(timeout=60)
        os.close(master)
    text = ANSI.sub("", seen.decode(errors="replace"))
    assert proc.returncode == 0, text[-1500:]
    assert "V1 recent seed 3: score = 10.3, loss = 0.333333 (" in text, text[-1500:]
    # The bar: how many of the three runs are done, and the time left.
    assert "3/3" in text and "left" in text, text[-1500:]
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    assert lines[-1].startswith("next: git ledger "), lines[-3:]
    assert "V1" in lines[-1]


def test_run_piped_says_each_seed_values_and_ends_with_next(gated: Repo) -> None:
    (gated.path / "go").write_text("")
    proc = subprocess.run(
        ["git", "ledger", "run", "V1", "--gate", "recent", "--seeds", "1,2,3"],
        cwd=gated.path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.splitlines()
    assert "\x1b" not in proc.stdout, "piped output is plain"
    finished = [line for line in out if line.startswith("finished: ")]
    assert [line.split(":")[1].strip() for line in finished] == [
        "V1 recent seed 1",
        "V1 recent seed 2",
        "V1 recent seed 3",
    ]
    assert out[-1].startswith("next: git ledger conclude V1"), out


def test_conclude_ends_with_a_next_line(gated: Repo) -> None:
    (gated.path / "go").write_text("")
    gated.ok("hooks", "install")
    gated.write("src/model.py", "x = 1\n")
    gated.commit_all("feat: V1 code")
    gated.ok("run", "V1", "--gate", "recent", "--seeds", "1,2,3")
    result = gated.run("conclude", "V1", "--verdict", "inconclusive", "--next", "try more")
    assert result.code == 0, result.err + result.out
    last = result.out.strip().splitlines()[-1]
    assert last.startswith("next: git ledger "), result.out
