"""Many writers at once: throughput, retries and lost transitions (must be 0)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from bench.common import ROOT

WRITER = """
import sys
from pathlib import Path
from ledger.core.store import Snapshot, Store, Transition

store, count, tag = Store(Path(sys.argv[1])), int(sys.argv[2]), sys.argv[3]
attempts = 0
for i in range(count):
    def build(snap: Snapshot, i: int = i) -> Transition:
        global attempts
        attempts += 1
        return Transition("note", f"{tag}-{i}", f"note {tag} {i}", {f"notes/{tag}-{i:04d}.json": b"{}\\n"})
    store.transact(build)
print(attempts - count)
"""


def run(writers: int, each: int, env: dict[str, str], tmp: Path) -> None:
    repo = tmp / "concurrency"
    repo.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=repo, env=env, check=True)
    subprocess.run(
        [sys.executable, "-m", "ledger", "init"], cwd=repo, env=env, check=True, capture_output=True
    )
    trees = []
    for i in range(writers):
        path = tmp / f"cw{i}"
        subprocess.run(
            ["git", "worktree", "add", "-q", "-b", f"w{i}", str(path)],
            cwd=repo,
            env=env,
            check=True,
        )
        trees.append(path)
    started = time.perf_counter()
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(t), str(each), f"w{i}"],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            text=True,
        )
        for i, t in enumerate(trees)
    ]
    retries = sum(int(p.communicate()[0].strip() or 0) for p in procs)
    seconds = time.perf_counter() - started
    recorded = sum(
        len(
            subprocess.run(
                ["git", "log", f"w{i}", "--format=%s", "--grep", f"note w{i} "],
                cwd=repo,
                env=env,
                capture_output=True,
                text=True,
                check=True,
            ).stdout.split("\n")
        )
        - 1
        for i in range(writers)
    )
    serial = tmp / "serial"
    serial.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=serial, env=env, check=True)
    one = time.perf_counter()
    subprocess.run(
        [sys.executable, "-c", WRITER, str(serial), str(each), "s"],
        cwd=ROOT,
        env=env,
        check=True,
        capture_output=True,
    )
    single = each / (time.perf_counter() - one)
    total = writers * each
    print(
        f"concurrency {writers} writers x {each}: throughput ratio {recorded / seconds / single:.2f} "
        f"vs one writer ({recorded / seconds:.0f}/s vs {single:.0f}/s); retries {retries}; "
        f"attempted {total}, recorded {recorded}, lost {total - recorded}"
    )
