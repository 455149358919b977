"""A machine in the distributed fault suite: N transitions, syncing every K, then a final sync."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from ledger.core.store import Store
from tests.writer import write_notes


def sync(repo: str) -> None:
    """Sync as a user would: 'the remote kept moving' (exit 1) says to run it again."""
    for _ in range(5):
        done = subprocess.run(
            [sys.executable, "-m", "ledger", "sync"], cwd=repo, stdout=subprocess.DEVNULL
        )
        if done.returncode != 1:
            break
    done.check_returncode()


def main(repo: str, count: int, every: int, tag: str) -> int:
    write_notes(
        Store(Path(repo)), count, tag, lambda i: sync(repo) if (i + 1) % every == 0 else None
    )
    sync(repo)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]))
