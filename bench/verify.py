"""What ``git ledger verify`` costs: full replay, and incremental after one transition.

    python bench/verify.py           # ledgers of 1,000 and 10,000 steps
    python bench/verify.py --quick   # 200 and 1,000 steps

Figures, each a ratio against a baseline measured in the same run:

- full verify (no cache) vs ``git log --raw`` over the same history (git
  reading every commit and its changed paths: the floor for any replay);
- incremental verify after one new transition vs a warm ``status --json``
  (the target: at most the cost of a warm status).
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import report, sealed_env, timed
from bench.gate import cached_ledger


def cli(repo: Path, env: dict[str, str], *args: str) -> float:
    return timed(
        lambda: subprocess.run(
            [sys.executable, "-m", "ledger", *args],
            cwd=repo,
            env=env,
            check=True,
            capture_output=True,
        )
    )


def git_log(repo: Path, env: dict[str, str]) -> float:
    return timed(
        lambda: subprocess.run(
            ["git", "log", "--raw", "--no-abbrev", "--format=%H%n%B"],
            cwd=repo,
            env=env,
            check=True,
            capture_output=True,
        )
    )


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="ledger-bench-verify-"))
    try:
        (tmp / "home").mkdir()
        env = sealed_env(tmp / "home")
        for steps in (200, 1000) if args.quick else (1000, 10000):
            repo = cached_ledger(steps, env, tmp)
            commits = subprocess.run(
                ["git", "rev-list", "--count", "HEAD"],
                cwd=repo,
                env=env,
                check=True,
                capture_output=True,
                text=True,
            ).stdout.strip()
            full_rounds = max(1, args.rounds // (3 if steps >= 10000 else 1))
            full = []
            for _ in range(full_rounds):
                shutil.rmtree(repo / ".git" / "ledger", ignore_errors=True)
                full.append(cli(repo, env, "verify"))
            walk = [git_log(repo, env) for _ in range(full_rounds)]
            report(
                f"verify full at {steps} steps ({commits} commits) vs git log --raw",
                full,
                walk,
                "git log",
            )
            cli(repo, env, "status", "--json")
            incremental, warm = [], []
            for i in range(args.rounds):
                cli(
                    repo,
                    env,
                    "config",
                    "set",
                    "triggers.noop_tolerance",
                    f"{500 + i}.0",
                    "--reason",
                    "bench: one new transition",
                )
                cli(repo, env, "status", "--json")  # status itself verifies and caches
                incremental.append(cli(repo, env, "verify"))
                warm.append(cli(repo, env, "status", "--json"))
            # The figure the target is about: verify's own work on one new commit.
            fresh = []
            for i in range(args.rounds):
                cli(
                    repo,
                    env,
                    "config",
                    "set",
                    "triggers.noop_tolerance",
                    f"{600 + i}.0",
                    "--reason",
                    "bench: one new transition",
                )
                fresh.append(cli(repo, env, "verify"))
            report(
                f"verify incremental at {steps} steps (one new transition) vs warm status",
                fresh,
                warm,
                "warm status",
            )
            report(
                f"verify repeated at {steps} steps (nothing new) vs warm status",
                incremental,
                warm,
                "warm status",
            )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
