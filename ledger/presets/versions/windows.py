"""Walk-forward windows as ``run --windows`` names them: ids, each with its dates.

Without dates a window's overlap with the next is unknown and effective N falls back
to the nominal N (issue 26). ``--windows`` takes ``ID=START..END`` items
(``a=2024-01-01..2024-03-31``); a bare ``ID`` takes its dates from the gate's
``windows_manifest`` (a committed file named in ledger.toml, one ``ID,START,END`` a
line, ``#`` comments), or has none when the gate names no manifest.
"""

from __future__ import annotations

import re
from datetime import date

from ledger.core.context import Context
from ledger.core.errors import BadInput

_ITEM = re.compile(r"^(?P<id>[^=]+)=(?P<start>[^.]+)\.\.(?P<end>.+)$")
Dates = dict[str, tuple[str, str]]


def _checked(window: str, start: str, end: str, where: str) -> tuple[str, str]:
    try:
        first, last = date.fromisoformat(start.strip()), date.fromisoformat(end.strip())
    except ValueError:
        raise BadInput(
            f"{where}: window {window!r} has dates {start!r}..{end!r}, not YYYY-MM-DD",
            "give each window as ID=YYYY-MM-DD..YYYY-MM-DD",
        ) from None
    if last < first:
        raise BadInput(f"{where}: window {window!r} ends before it starts ({start}..{end})")
    return first.isoformat(), last.isoformat()


def manifest(ctx: Context, gate: str) -> tuple[str, Dates] | None:
    """The gate's window manifest as committed at HEAD: its path and dates (None: none)."""
    path = ctx.config.gate(gate).windows_manifest
    if not path:
        return None
    raw = ctx.store.snapshot().read(path)
    if raw is None:
        raise BadInput(
            f"[gates.{gate}] windows_manifest = {path!r} is not committed",
            f"commit {path} (one 'ID,START,END' a line), or remove the key",
        )
    dates: Dates = {}
    for number, line in enumerate(raw.decode("utf-8", "replace").splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        parts = [p.strip() for p in re.split(r"[,\s]+", line) if p.strip()]
        if len(parts) != 3:
            raise BadInput(f"{path}:{number}: expected 'ID,START,END', got {line!r}")
        dates[parts[0]] = _checked(parts[0], parts[1], parts[2], f"{path}:{number}")
    return path, dates


def parse(ctx: Context, gate: str | None, raw: str | None) -> tuple[list[str], Dates]:
    """``--windows``: the window ids, in order, and the dates known for them."""
    items = [item.strip() for item in (raw or "").split(",") if item.strip()]
    ids: list[str] = []
    dates: Dates = {}
    for item in items:
        found = _ITEM.match(item)
        if found is None:
            ids.append(item)
            continue
        window = found["id"].strip()
        ids.append(window)
        dates[window] = _checked(window, found["start"], found["end"], "--windows")
    bare = [w for w in ids if w not in dates]
    if bare and gate is not None and gate in ctx.config.gates:
        known = manifest(ctx, gate)
        if known is not None:
            path, listed = known
            missing = [w for w in bare if w not in listed]
            if missing:
                raise BadInput(
                    f"--windows: {', '.join(missing)} not in the manifest {path}",
                    f"add them to {path}, or give their dates: ID=YYYY-MM-DD..YYYY-MM-DD",
                )
            dates.update({w: listed[w] for w in bare})
    return ids, dates
