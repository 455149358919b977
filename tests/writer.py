"""A ledger writer process for concurrency and crash tests: N transitions via the store."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

from ledger.store import Snapshot, Store, Transition


def write_notes(
    store: Store, count: int, tag: str, after_each: Callable[[int], None] | None = None
) -> None:
    """``count`` transitions, each adding one note file."""
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
        if after_each is not None:
            after_each(i)


def main(repo: str, count: int, tag: str) -> int:
    write_notes(Store(Path(repo)), count, tag)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], int(sys.argv[2]), sys.argv[3]))
