"""Packaged templates and hook scripts, read with importlib.resources.

In a wheel they live in ``ledger/_data/`` (force-included from the top-level
``templates/`` and ``hooks/``); in an editable install or a source checkout
they are read from those top-level folders directly.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from string import Template

from ledger.core.errors import LedgerError


def read_resource(folder: str, name: str) -> str:
    packaged = resources.files("ledger").joinpath("_data", folder, name)
    if packaged.is_file():
        return packaged.read_text(encoding="utf-8")
    source = Path(__file__).resolve().parents[2] / folder / name
    if source.is_file():
        return source.read_text(encoding="utf-8")
    raise LedgerError(f"packaged resource {folder}/{name} is missing; reinstall git-ledger")


def render(text: str, **values: str) -> str:
    return Template(text).safe_substitute(values)
