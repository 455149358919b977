"""A ledger writer process for concurrency and crash tests: N transitions via the store.

``--pause-at POINT SIGNAL_FILE`` installs the store's fault hook: at that
injection point the process creates SIGNAL_FILE and waits to be killed, so a
test can SIGKILL it at exactly that point. ``--fail-at POINT ERRNO`` makes
that point fail as the system would (an ``OSError`` with that errno name, e.g.
``EIO``). ``--cli ARGS...`` then runs the real command line (``git ledger
ARGS...``) in this process instead of writing notes. The hooks live here, in
the tests; the program has no switch for them.
"""

from __future__ import annotations

import errno
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

from ledger.core.store import Snapshot, Store, Transition, faults


def pause_at(point: str, signal_file: str) -> Callable[[str], None]:
    def hook(name: str) -> None:
        if name == point:
            Path(signal_file).write_text(name)
            time.sleep(3600)

    return hook


def fail_at(point: str, name: str) -> Callable[[str], None]:
    """``name``: an errno name, or ``LedgerError`` (an error no class explains: a bug)."""
    code = getattr(errno, name, 0)

    def hook(reached: str) -> None:
        if reached == point and name == "LedgerError":
            from ledger.core.errors import LedgerError

            raise LedgerError(f"injected at {point}")
        if reached == point:
            raise OSError(code, f"{os.strerror(code)} (injected at {point})")

    return hook


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
    args = sys.argv[1:]
    if args[:1] == ["--pause-at"]:
        faults.fault_hook = pause_at(args[1], args[2])
        args = args[3:]
    elif args[:1] == ["--fail-at"]:
        faults.fault_hook = fail_at(args[1], args[2])
        args = args[3:]
    if args[:1] == ["--cli"]:
        from ledger.cli.app import main as cli_main

        cli_main(args[1:])
    sys.exit(main(args[0], int(args[1]), args[2]))
