"""``log -n 20`` and one transition at a large ledger, as ratios against git itself.

    python bench/logwalk.py                 # 10,000 steps (generated once, cached in bench/out/)
    python bench/logwalk.py --steps 1000

``log -n 20`` reads only what it shows (a lazy walk), so it should stay near
``log -n 20`` at a small ledger; a full ``log`` is printed for scale. A record
transition (commit, then ``git read-tree -m -u`` for index and work tree) is
compared with ``git add && git commit`` of one file in the same repository.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import git_add_commit, report, sealed_env, timed
from bench.gate import cached_ledger


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="ledger-logbench-"))
    (tmp / "home").mkdir()
    env = sealed_env(tmp / "home")
    small = cached_ledger(50, env, tmp)
    big = cached_ledger(args.steps, env, tmp)

    def cli(cwd: Path, *argv: str) -> float:
        return timed(
            lambda: subprocess.run(
                [sys.executable, "-m", "ledger", *argv],
                cwd=cwd,
                env=env,
                check=True,
                capture_output=True,
            )
        )

    def git(cwd: Path, *argv: str) -> float:
        return timed(
            lambda: subprocess.run(
                ["git", *argv], cwd=cwd, env=env, check=True, capture_output=True
            )
        )

    rounds = range(args.rounds)
    big_n = [cli(big, "log", "-n", "20") for _ in rounds]
    small_n = [cli(small, "log", "-n", "20") for _ in rounds]
    report(f"log -n 20 at {args.steps} steps vs at 50 steps", big_n, small_n, "50 steps")
    report(
        f"log -n 20 at {args.steps} steps vs git log -n 20",
        big_n,
        [git(big, "log", "-n", "20") for _ in rounds],
        "git log -n 20",
    )
    report(
        f"full log at {args.steps} steps vs git log",
        [cli(big, "log") for _ in range(2)],
        [git(big, "log") for _ in range(2)],
        "git log",
    )
    vid = f"V{args.steps + 1}"
    register = ["register", vid, "--bet", "b", "--gate", "recent", "--files", "src/m.py"]
    cli(big, *register, "--falsifier", "no gain")
    ours, theirs = [], []
    for i in rounds:
        results = tmp / f"r{i}.json"
        results.write_text(json.dumps({"score": 90 + i, "loss": 0.01}))
        ours.append(cli(big, "record", vid, "--gate", "recent", "--seed", str(i), str(results)))
        note = big / f"note{i}.txt"
        note.write_text(f"{i}\n")
        theirs.append(git_add_commit(big, note, env))
    report(f"record (one transition) at {args.steps} steps vs git add+commit", ours, theirs, "git")
    return 0


if __name__ == "__main__":
    sys.exit(main())
