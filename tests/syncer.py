"""A machine in the distributed fault suite: N transitions, syncing every K, then a final sync."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from ledger.store import Snapshot, Store, Transition


def main(repo: str, count: int, every: int, tag: str) -> int:
    store = Store(Path(repo))
    for i in range(count):
        path = f"training_log/notes/{tag}-{i:04d}.json"

        def build(snap: Snapshot, path: str = path, i: int = i) -> Transition:
            return Transition(
                kind="note",
                step=f"{tag}-{i}",
                subject=f"note {tag} {i}",
                writes={path: f'{{"i": {i}, "tag": "{tag}"}}\n'.encode()},
            )

        store.transact(build)
        if (i + 1) % every == 0:
            subprocess.run(
                [sys.executable, "-m", "ledger", "sync", "--json"],
                cwd=repo,
                check=True,
                stdout=subprocess.DEVNULL,
            )
    subprocess.run(
        [sys.executable, "-m", "ledger", "sync"], cwd=repo, check=True, stdout=subprocess.DEVNULL
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]))
