"""``git ledger compare``: versions side by side, parameters against every metric of a gate.

One row per version (matrix cells included), like ``dvc exp show``. The
parameters come from the files ``[params] files`` names (JSON, YAML or TOML,
globs allowed), read at each version's code commit (the commit its results
were measured at), and from a ``params`` object in its results; only the
parameters that differ between the rows are shown. Each metric of the gate
has mean, sd and n, and its Δ against the version's parent says which test
it is: paired over the shared seeds, or a difference of means.
"""

from __future__ import annotations

import json
import re
import tomllib
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from ledger.core import output, stats
from ledger.core.context import Context, open_context
from ledger.core.errors import BadInput
from ledger.core.markdown import fmt, signed
from ledger.core.state import LedgerState, Result, Version
from ledger.core.store import Snapshot, Store
from ledger.presets.versions.baseline import _per_key
from ledger.presets.versions.metrics import Summaries

VOID = "void"
OPEN = "open"
STATUSES = ("confirmed", "refuted", "inconclusive", OPEN, VOID)


def status_of(version: Version) -> str:
    """What a version is now: void outranks any verdict it had before it was voided."""
    if version.front.void is not None:
        return VOID
    return version.verdict or OPEN


@cache
def _glob(pattern: str) -> re.Pattern[str]:
    """A path glob: ``*`` and ``?`` stay inside one directory, ``**/`` spans any."""
    out = ""
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out, i = out + "(?:.*/)?", i + 3
        elif pattern.startswith("**", i):
            out, i = out + ".*", i + 2
        elif pattern[i] == "*":
            out, i = out + "[^/]*", i + 1
        elif pattern[i] == "?":
            out, i = out + "[^/]", i + 1
        else:
            out, i = out + re.escape(pattern[i]), i + 1
    return re.compile(out + r"\Z")


def _flatten(data: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(data, dict):
        out: dict[str, Any] = {}
        for key, value in data.items():
            out.update(_flatten(value, f"{prefix}{key}."))
        return out
    return {prefix.rstrip("."): data}


def _parse(path: str, data: bytes) -> dict[str, Any]:
    text = data.decode("utf-8", errors="replace")
    suffix = Path(path).suffix.lower()
    try:
        if suffix == ".json":
            parsed = json.loads(text)
        elif suffix == ".toml":
            parsed = tomllib.loads(text)
        else:
            import yaml

            parsed = yaml.safe_load(text)
    except Exception as exc:  # a broken params file at one commit: say so, keep going
        output.warn(f"{path}: not readable as {suffix[1:]}: {str(exc).splitlines()[0]}")
        return {}
    if not isinstance(parsed, dict):
        return {}
    return _flatten(parsed)


def params_at(snap: Snapshot, patterns: Iterable[str]) -> dict[str, Any]:
    """Every parameter the ``[params] files`` hold in ``snap``'s tree, keys dotted
    (``model.lr``); a key two files both hold is named by its file (``a.yaml:lr``)."""
    patterns = list(patterns)
    if not patterns:
        return {}
    literal = [p for p in patterns if not any(c in p for c in "*?[")]
    paths = [p for p in literal if snap.blob_id(p) is not None]
    if len(literal) < len(patterns):
        every = snap.files("")
        paths += sorted(
            p for p in every if p not in paths and any(_glob(g).match(p) for g in patterns)
        )
    per_file = {p: _parse(p, snap.read(p) or b"") for p in paths}
    counts = Counter(k for found in per_file.values() for k in found)
    out: dict[str, Any] = {}
    for path, found in per_file.items():
        for key, value in found.items():
            out[key if counts[key] == 1 else f"{path}:{key}"] = value
    return out


def code_commit(results: list[Result]) -> str | None:
    """The commit most of a version's results were measured at."""
    commits = Counter(c for c in (r.ran_at[1] for r in results) if c)
    return commits.most_common(1)[0][0] if commits else None


def _interval(sample: stats.Sample, level: float = 0.95) -> tuple[float, float] | None:
    if sample.sd is None:
        return None
    from ledger.core.distributions import t_quantile

    half = t_quantile(0.5 + level / 2, sample.n - 1) * sample.sd / sample.n**0.5
    return sample.mean - half, sample.mean + half


def metric_cell(
    mine: list[Result],
    theirs: list[Result],
    metric: str,
    keyed: tuple[dict[str, float], dict[str, float]] | None = None,
    values: list[float] | None = None,
) -> dict[str, Any]:
    """mean, sd, n, 95% interval of ``metric``; Δ against ``theirs`` and the test behind it.
    ``keyed``: both sides' values per seed or window, ``values``: ``mine``'s values of
    ``metric``, when the caller has them."""
    if values is None:
        values = [r.metrics[metric] for r in mine if metric in r.metrics]
    cell: dict[str, Any] = {"n": len(values), "mean": None, "sd": None, "ci95": None}
    cell.update(delta=None, test=None)
    if not values:
        return cell
    own = stats.sample(values)
    ci = _interval(own)
    cell.update(mean=own.mean, sd=own.sd, ci95=list(ci) if ci else None)
    new, base = keyed or (_per_key(mine, metric), _per_key(theirs, metric))
    if not base:
        return cell
    shared = sorted(set(new) & set(base))
    if shared:
        diffs = [new[k] - base[k] for k in shared]
        cell.update(delta=stats.sample(diffs).mean, test=f"paired over {len(shared)} shared seeds")
    else:
        delta = own.mean - stats.sample(list(base.values())).mean
        cell.update(delta=delta, test="difference of means")
    return cell


@dataclass(frozen=True)
class Filters:
    gate: str | None = None
    verdict: str | None = None
    branch: str | None = None
    sort: str | None = None


def _gate_for(state: LedgerState, versions: list[Version], gate: str | None) -> str:
    if gate is not None:
        state.config.gate(gate)  # unknown: bad input naming the gates there are
        return gate
    for version in reversed(versions):
        if version.front.gate in state.config.gates:
            return version.front.gate
    if not state.config.gates:
        raise BadInput("no gates in ledger.toml", "add a [gates.NAME] table")
    return sorted(state.config.gates)[0]


def _on_branch(ctx: Context, branch: str) -> set[str]:
    """The versions registered on ``branch`` since it left the default branch."""
    from ledger.core.branches import fork_point

    workdir = ctx.store.require_workdir()
    tip = ctx.store.snapshot(branch)
    ids = {v.id for v in ctx.state(tip).versions}
    fork = fork_point(workdir, branch)
    if fork is not None:
        ids -= {v.id for v in ctx.state(ctx.store.snapshot(fork[1])).versions}
    return ids


def build(
    ctx: Context,
    state: LedgerState,
    filters: Filters,
    only: set[str] | None = None,
    summaries: Summaries | None = None,
) -> dict[str, Any]:
    """The table as data (what ``--json`` prints and the reports render); ``only``:
    these versions (a report's range); ``summaries``: the results already read, shared
    with the report's other tables."""
    if filters.verdict is not None and filters.verdict not in STATUSES:
        raise BadInput(f"unknown --verdict {filters.verdict!r}", f"one of {', '.join(STATUSES)}")
    versions = [v for v in state.versions if only is None or v.id in only]
    if filters.branch is not None:
        keep = _on_branch(ctx, filters.branch)
        versions = [v for v in versions if v.id in keep]
    gate = _gate_for(state, versions, filters.gate)
    if filters.gate is not None:
        versions = [v for v in versions if v.front.gate == gate or state.results_for(v.id, gate)]
    if filters.verdict is not None:
        versions = [v for v in versions if status_of(v) == filters.verdict]
    cfg = state.config.gates[gate]
    metrics = [cfg.metric, *sorted(m for m in cfg.metrics if m != cfg.metric)]
    store: Store = ctx.store
    snaps: dict[str, dict[str, Any]] = {}
    rows: list[dict[str, Any]] = []
    # Every result of each row's version (any gate, any status: the code commit and the
    # params), grouped in one pass: a scan per row was O(versions x results), 5 million
    # reads for the report at 1,000 versions.
    every_of: dict[str, list[Result]] = {v.id: [] for v in versions}
    for r in state.results:
        if r.version in every_of:
            every_of[r.version].append(r)
    # A version's values per seed, by metric: its own row needs them, and so does the row
    # of each version whose parent it is (read once, in ``summaries``).
    summaries = summaries or Summaries(state)
    for version in versions:
        mine = summaries.results(version.id, gate)
        parent = version.front.parent
        found = state.matrix(version.front.matrix) if version.front.matrix else None
        if parent is None and found is not None:  # a cell: against the matrix's baseline
            parent = found[1].baselines.get(gate)
        theirs = summaries.results(parent, gate) if parent else []
        every = every_of[version.id]
        commit = code_commit(every)
        params: dict[str, Any] = {}
        if commit is not None and ctx.config.params.files:
            if commit not in snaps:
                snaps[commit] = (
                    params_at(store.snapshot(commit), ctx.config.params.files)
                    if store.has_commit(commit)
                    else {}
                )
            params.update(snaps[commit])
        for r in every:  # a results file's own "params" object, when it carried one
            own = r.params
            if own:
                params.update(_flatten(own))
        rows.append(
            {
                "id": version.id,
                "parent": parent,
                "gate": version.front.gate,
                "status": status_of(version),
                "void": version.front.void,
                "code_commit": commit,
                "params": params,
                "metrics": {
                    m: metric_cell(
                        mine,
                        theirs,
                        m,
                        (summaries.keyed(version.id, gate, m), summaries.keyed(parent, gate, m)),
                        summaries.values(version.id, gate, m),
                    )
                    for m in metrics
                },
            }
        )
    keys = sorted({k for row in rows for k in row["params"]})
    if len(rows) > 1:
        keys = [k for k in keys if len({_key(row["params"].get(k)) for row in rows}) > 1]
    for row in rows:
        row["params"] = {k: row["params"].get(k) for k in keys}
    _sort(rows, filters.sort, metrics, keys, cfg.direction_of)
    return {"gate": gate, "metric": cfg.metric, "params": keys, "metrics": metrics, "rows": rows}


def _key(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def _sort(
    rows: list[dict[str, Any]], by: str | None, metrics: list[str], keys: list[str], direction: Any
) -> None:
    if by is None or by == "id":
        return
    if by in metrics:
        sign = -1.0 if direction(by) == "higher" else 1.0  # best first
        rows.sort(
            key=lambda r: (r["metrics"][by]["mean"] is None, sign * (r["metrics"][by]["mean"] or 0))
        )
    elif by in keys:
        rows.sort(key=lambda r: _key(r["params"].get(by)))
    elif by in ("status", "verdict"):
        rows.sort(key=lambda r: STATUSES.index(r["status"]))
    else:
        known = ", ".join(["id", "status", *metrics, *keys])
        raise BadInput(f"--sort {by!r}: no such column", f"one of {known}")


def _value(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, str):
        return value
    # A parameter is shown as written (0.1 stays 0.1), not rounded like a measurement.
    return str(value) if isinstance(value, int | float) else _key(value)


def _metric_text(cell: dict[str, Any]) -> tuple[str, str]:
    if cell["mean"] is None:
        return "—", "—"
    sd = f" ± {fmt(cell['sd'])}" if cell["sd"] is not None else ""
    shown = f"{fmt(cell['mean'])}{sd} (n={cell['n']})"
    if cell["delta"] is None:
        return shown, "—"
    test = "paired" if str(cell["test"]).startswith("paired") else "means"
    return shown, f"{signed(cell['delta'])} ({test})"


def columns(data: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    """Headers and cells of the table (plain text, markdown and HTML share them)."""
    headers = ["version", "status", *data["params"]]
    for m in data["metrics"]:
        headers += [f"{m} mean ± sd (n)", f"{m} Δ vs parent"]
    cells = []
    for row in data["rows"]:
        line = [row["id"], row["status"], *(_value(row["params"][k]) for k in data["params"])]
        for m in data["metrics"]:
            line += list(_metric_text(row["metrics"][m]))
        cells.append(line)
    return headers, cells


def markdown(data: dict[str, Any]) -> str:
    headers, cells = columns(data)

    def esc(text: str) -> str:
        return text.replace("|", "\\|").replace("\n", " ")

    lines = ["| " + " | ".join(esc(h) for h in headers) + " |"]
    lines.append("|" + "|".join("---" for _ in headers) + "|")
    lines += ["| " + " | ".join(esc(c) for c in row) + " |" for row in cells]
    note = (
        f"Gate `{data['gate']}`; Δ against each version's parent: "
        "paired over the shared seeds, or a difference of means."
    )
    return "\n".join(lines) + "\n\n" + note + "\n"


def run(cwd: Path, filters: Filters, fmt_name: str) -> int:
    ctx = open_context(cwd)
    data = build(ctx, ctx.state(), filters)
    if fmt_name == "json":
        output.emit_json(data)
    elif fmt_name == "md":
        output.say(markdown(data).rstrip("\n"))
    else:
        headers, cells = columns(data)
        output.table(f"compare: gate {data['gate']}", headers, cells)
    return 0
