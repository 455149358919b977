"""The small JSONPath subset ledger.toml uses to find a metric in a results file.

``$.a.b``, ``$.runs[0].loss`` and ``$["key with spaces"]`` are enough to map a
metric name to one value; filters and wildcards would make a metric ambiguous,
so they are refused.
"""

from __future__ import annotations

import re
from typing import Any

_TOKEN = re.compile(r"\.([A-Za-z_][A-Za-z0-9_-]*)|\[(\d+)\]|\[\"([^\"]+)\"\]")


def parse_path(path: str) -> list[str | int]:
    if not path.startswith("$"):
        raise ValueError(f"JSON path {path!r} must start with '$', e.g. '$.total_pnl_usd'")
    parts: list[str | int] = []
    pos = 1
    while pos < len(path):
        match = _TOKEN.match(path, pos)
        if not match:
            raise ValueError(f"JSON path {path!r} is not of the form $.a.b[0] (at {pos})")
        if match.group(1) is not None:
            parts.append(match.group(1))
        elif match.group(2) is not None:
            parts.append(int(match.group(2)))
        else:
            parts.append(match.group(3))
        pos = match.end()
    return parts


_MISSING = object()


def resolve(data: Any, path: str) -> Any:
    """The value at ``path``, or the sentinel :data:`MISSING`."""
    current = data
    for part in parse_path(path):
        if isinstance(part, int):
            if not isinstance(current, list) or part >= len(current):
                return MISSING
            current = current[part]
        else:
            if not isinstance(current, dict) or part not in current:
                return MISSING
            current = current[part]
    return current


MISSING: Any = _MISSING
