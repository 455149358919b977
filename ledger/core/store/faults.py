"""Where a crash test may stop a transition: ``after-objects``, ``after-ref``, ``during-index``.

The tests install :data:`fault_hook` from their own wrapper process
(tests/writer.py sets ``ledger.core.store.faults.fault_hook``); the program
itself never pauses and consults no environment variable for it.
"""

from __future__ import annotations

from collections.abc import Callable

fault_hook: Callable[[str], None] | None = None


def fault_point(name: str) -> None:
    if fault_hook is not None:
        fault_hook(name)
