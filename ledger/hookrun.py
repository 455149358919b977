"""The entry point of hooks installed by git-ledger 0.2 (``from ledger.hookrun import run``).

Hooks written by ``hooks install`` since 0.3 boot :mod:`ledger.hooks.fast`
directly; this module keeps the hooks of a repository set up earlier working
until ``hooks install`` rewrites them (``doctor`` names them). Standard library
only, like the fast path it forwards to.
"""

from __future__ import annotations

from ledger.hooks.fast import run as run

__all__ = ["run"]
