"""Shell completion of the ledger's own names: version ids, matrix ids, cells, gates, seeds.

bash, zsh and fish all ask the program (click's completion protocol, see completion/),
so one set of completers serves the three. :func:`ledger.core.clikit.declare` attaches
them by parameter name (``step_id``, ``matrix_id``, ``cell``, ``--gate``, ``--seeds``...),
so a verb declared later completes the same way.

Fast, and never a failure: the names come from one ``git ls-tree`` of HEAD's ledger
dir, ``git for-each-ref`` of the cell branches and the configuration file read with
tomllib (no pygit2, no pydantic, no ledger state); anything that goes wrong completes
nothing.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ledger.core import repobase

RESULT = re.compile(
    r"^results/(?P<id>[^/]+)/(?P<gate>[^/]+)/seed-(?P<seed>[^/]+?)(?:-r\d+)?\.json$"
)
CELL_BRANCH = "refs/heads/ledger/"


def _git(top: str, *args: str) -> str:
    from ledger.core import gitcli

    proc = gitcli.run(list(args), Path(top), check=False)
    return proc.stdout if proc.returncode == 0 else ""


def _config(top: str) -> dict[str, Any]:
    # Imported here: every verb's declaration imports this module, and only completion
    # reads the configuration through it (tomllib costs a cached verify about 2 ms).
    import tomllib

    for name in repobase.CONFIG_FILES:
        try:
            data = tomllib.loads((Path(top) / name).read_text())
        except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError):
            continue
        table = repobase.ledger_table(data, name)
        if table is not None:
            return table
    return {}


def names(kind: str, cwd: str | None = None) -> list[str]:
    """The ledger's names of ``kind`` (ids, matrices, cells, gates, seeds), sorted."""
    try:
        found = repobase.locate(cwd or ".")
        if found is None:
            return []
        top = found[0]
        table = _config(top)
        if kind == "gates":
            gates = table.get("gates")
            return sorted(gates) if isinstance(gates, dict) else []
        directory = repobase.ledger_dir(table) or repobase.DEFAULT_DIR
        if kind == "cells":
            refs = _git(top, "for-each-ref", "--format=%(refname)", CELL_BRANCH)
            # ledger/V3.A-slug: the cell V3.A
            return sorted({r[len(CELL_BRANCH) :].split("-", 1)[0] for r in refs.split()})
        files = _git(top, "ls-tree", "-r", "--name-only", "HEAD", "--", f"{directory}/")
        rel = [f[len(directory) + 1 :] for f in files.splitlines()]
        prefix = str(table.get("ledger", {}).get("id_prefix", repobase.DEFAULT_ID_PREFIX))
        if kind == "ids":
            stems = [f[:-3] for f in rel if "/" not in f and f.endswith(".md")]
            return sorted(
                (s for s in stems if repobase.split_version(s, prefix) is not None),
                key=_id_order,
            )
        if kind == "matrices":
            return sorted(
                (f[: -len("-matrix.md")] for f in rel if f.endswith("-matrix.md")), key=_id_order
            )
        if kind == "seeds":
            seeds = {m["seed"] for f in rel if (m := RESULT.match(f))}
            return sorted(seeds, key=lambda s: (not s.isdigit(), int(s) if s.isdigit() else 0, s))
    except Exception:  # completion never fails a shell: it offers nothing
        return []
    return []


def _id_order(vid: str) -> tuple[int, str]:
    digits = re.search(r"\d+", vid)
    return (int(digits.group()) if digits else 0, vid)


def _complete(kind: str, listed: bool = False) -> Callable[[Any, Any, str], list[str]]:
    def complete(ctx: Any, param: Any, incomplete: str) -> list[str]:
        cwd = str(ctx.find_root().params.get("cwd") or ".")  # -C DIR
        if kind == "cell":
            matrix = str((ctx.params or {}).get("matrix_id") or "")
            cells = names("cells", cwd)
            wanted = [c.split(".", 1)[1] for c in cells if c.startswith(f"{matrix}.")]
        else:
            wanted = names(kind, cwd) + (names("cells", cwd) if kind == "ids" else [])
        if listed:  # --seeds 1,2,<TAB>: the items not given yet, after those given
            head, _, last = incomplete.rpartition(",")
            given = set(head.split(",")) if head else set()
            lead = head + "," if head else ""
            return [lead + s for s in wanted if s not in given and s.startswith(last)]
        return sorted({w for w in wanted if w.startswith(incomplete)}, key=_id_order)

    return complete


# Parameter name -> completer; clikit.declare attaches them.
COMPLETERS: dict[str, Callable[[Any, Any, str], list[str]]] = {
    "step_id": _complete("ids"),
    "after": _complete("ids"),
    "a": _complete("ids"),
    "b": _complete("ids"),
    "matrix_id": _complete("matrices"),
    "cell": _complete("cell"),
    "gate": _complete("gates"),
    "seed": _complete("seeds"),
    "seeds": _complete("seeds", listed=True),
}
