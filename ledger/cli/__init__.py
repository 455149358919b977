"""The command line: the click app (``app``) and the generic verbs, one module each.

``from ledger.cli import main`` is the entry that 0.2 wrote into users'
``.git/config`` (the ``ledger-views`` merge driver), so it stays importable.
"""

from __future__ import annotations


def main() -> None:
    """Run the command line (the entry point older merge-driver configs boot)."""
    from ledger.cli.app import main as app_main

    app_main()
