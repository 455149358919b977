"""The campaign loop: candidates measured against a fixed contract (preset ``campaign``).

Files under the ledger dir, one per fact:

- ``contract.md``: what is measured and what may change, committed as written;
  the correctness tolerance in ledger.toml *at that commit* is the one fixed at
  setup (read from history, so the number still lives only in ledger.toml),
  and widening it later is refused
- ``candidates/<commit12>-e<epoch>.json``: one candidate verdict
- ``benchmark/adjust-<epoch>.json``: the measuring script changed; every number
  of an earlier epoch is invalidated
- ``mistakes/<seq>-<hash>.json``: one mistake, how it was caught, what should have
- ``owner.json``: who armed the campaign, and whether it still is
- ``latest-report.md``: the human report; ``finish`` wants ``status: closed``

Generated views (rebuilt from the entries, checked by the hooks):
``records/candidates.jsonl``, ``benchmark.csv`` and ``mistakes.md``.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
from dataclasses import dataclass, field
from typing import Any

from ledger.core.errors import BadInput
from ledger.core.model.config import CampaignTable, LedgerConfig
from ledger.core.model.documents import dump_json
from ledger.core.store import TRAILER_TRANSITION, Snapshot, Store
from ledger.presets.campaign.files import CONTRACT as CONTRACT
from ledger.presets.campaign.files import CSV as CSV
from ledger.presets.campaign.files import DELIVERED as DELIVERED
from ledger.presets.campaign.files import JSONL as JSONL
from ledger.presets.campaign.files import MISTAKES as MISTAKES
from ledger.presets.campaign.files import OWNER as OWNER
from ledger.presets.campaign.files import REPORT as REPORT
from ledger.presets.campaign.files import VERDICTS as VERDICTS
from ledger.presets.campaign.measures import NA_PREFIX as NA_PREFIX
from ledger.presets.campaign.measures import describe
from ledger.presets.campaign.measures import parse_measurement as parse_measurement
from ledger.presets.campaign.measures import parse_measures as parse_measures
from ledger.presets.campaign.measures import parse_repeats as parse_repeats


def table(config: LedgerConfig) -> CampaignTable:
    return config.campaign or CampaignTable()


def delivered_paths(required: list[str]) -> list[str]:
    """The ledger files (inside its directory) a delivery branch keeps: the closed
    report, the records, the mistakes log and every required record. ``deliver``
    writes them; ``verify`` allows a delivery to write nothing else."""
    return list(dict.fromkeys([REPORT, JSONL, CSV, MISTAKES, *required]))


@dataclass(frozen=True)
class Candidate:
    path: str
    commit: str
    seq: int
    epoch: int
    verdict: str
    reason: str
    measurements: dict[str, float | str]
    notes: str
    # Each repeated measurement's values (the measurement is their mean).
    repeats: dict[str, list[float]] = field(default_factory=dict)
    # The target against the head when it was recorded (judge.Judgement.as_dict).
    comparison: dict[str, Any] | None = None
    # setting | dependency | code, and the size of its change ({"files": n, "lines": m}):
    # both read from git when it was recorded (:mod:`ledger.presets.campaign.invasive`).
    kind: str = "code"
    diff: dict[str, int] | None = None
    # Why a larger change won over an equal-gain smaller one (the less-invasive rule).
    larger_diff_reason: str = ""
    # The measuring command, the script's blob, the code commit, the environment facts.
    provenance: dict[str, Any] | None = None

    def number(self, name: str) -> float | None:
        value = self.measurements.get(name)
        return value if isinstance(value, float | int) and not isinstance(value, bool) else None

    def summary(self, current_epoch: int) -> dict[str, Any]:
        """What the views and the report say of a candidate (a benchmark adjustment
        since it was measured invalidates it)."""
        return {
            "seq": self.seq,
            "commit": self.commit,
            "epoch": self.epoch,
            "verdict": self.verdict,
            "reason": self.reason,
            "notes": self.notes,
            "invalidated": self.epoch < current_epoch,
        }


@dataclass
class Campaign:
    config: LedgerConfig
    contract: str | None = None
    setup_tolerance: float | None = None
    # [campaign] as it was when the campaign was first armed (noise floor, directions).
    armed_table: CampaignTable | None = None
    candidates: list[Candidate] = field(default_factory=list)
    epochs: list[dict[str, Any]] = field(default_factory=list)
    mistakes: list[dict[str, Any]] = field(default_factory=list)
    owner: dict[str, Any] | None = None
    report: str | None = None
    delivered: bytes | None = None
    problems: list[tuple[str, str]] = field(default_factory=list)
    views: dict[str, bytes | None] = field(default_factory=dict)

    @property
    def epoch(self) -> int:
        return max((int(e["epoch"]) for e in self.epochs), default=0)

    def current(self) -> list[Candidate]:
        return [c for c in self.candidates if c.epoch == self.epoch]

    def base(self) -> Candidate | None:
        return next((c for c in self.current() if c.verdict == "base"), None)

    def head(self) -> Candidate | None:
        """The promoted head: the latest promoted or held candidate of the current
        benchmark epoch (a re-measured head counts after an adjustment), else the base."""
        kept = [c for c in self.current() if c.verdict in ("promoted", "held")]
        return kept[-1] if kept else self.base()

    def previous_head(self) -> Candidate | None:
        """The head of the latest earlier epoch that had one (to re-measure after an adjustment)."""
        for epoch in range(self.epoch - 1, -1, -1):
            kept = [
                c for c in self.candidates if c.epoch == epoch and c.verdict in ("promoted", "held")
            ]
            if kept:
                return kept[-1]
        return None

    def latest_verdicts(self) -> dict[str, Candidate]:
        """Each commit's verdict from the latest epoch that measured it."""
        latest: dict[str, Candidate] = {}
        for c in sorted(self.candidates, key=lambda c: (c.epoch, c.seq)):
            latest[c.commit] = c
        return latest

    def promoted_commits(self) -> list[str]:
        """Commits ever promoted or held whose latest verdict still keeps them, in the
        order they were first kept (the head's code is what ships); a commit rejected in
        a later epoch is never delivered."""
        latest = self.latest_verdicts()
        seen: list[str] = []
        for c in sorted(self.candidates, key=lambda c: c.seq):
            if (
                c.verdict in ("promoted", "held")
                and c.commit not in seen
                and latest[c.commit].verdict in ("promoted", "held")
            ):
                seen.append(c.commit)
        return seen

    def adjustments(self) -> list[dict[str, Any]]:
        return sorted(self.epochs, key=lambda e: int(e["epoch"]))


def setup_tables(store: Store, tip: str | None) -> tuple[float | None, CampaignTable | None]:
    """The correctness tolerance ledger.toml held when the contract was committed, and
    the [campaign] table it held when the campaign was first armed."""
    from ledger.core.context import load_config

    first_arm: str | None = None
    for info in store.walk(tip):
        kind = info.trailer(TRAILER_TRANSITION)
        if kind == "arm":
            first_arm = info.id  # newest first: the last one seen is the first arm
        if kind == "contract":
            loaded = load_config(store, store.snapshot(info.id))
            armed = load_config(store, store.snapshot(first_arm)) if first_arm else None
            return (
                table(loaded[0]).correctness_tolerance if loaded else None,
                table(armed[0]) if armed else None,
            )
    return None, None


def _problem(exc: Exception) -> str:
    return getattr(exc, "message", None) or f"missing or bad field {exc}"


def load(config: LedgerConfig, snap: Snapshot, store: Store | None = None) -> Campaign:
    """The campaign at ``snap``; with ``store``, also the tolerance fixed at setup.

    Every entry is parsed by its typed model (:mod:`ledger.presets.campaign.models`); one
    that does not parse is listed in ``problems``, never dropped silently."""
    # pydantic loads only when a command reads the campaign's entries.
    from ledger.core.model.loops import parse_entry
    from ledger.presets.campaign.models import (
        AdjustmentEntry,
        CandidateEntry,
        MistakeEntry,
        OwnerEntry,
    )

    base = config.dir
    camp = Campaign(config=config)
    contract = snap.read(f"{base}/{CONTRACT}")
    if contract is not None:
        camp.contract = contract.decode("utf-8", errors="replace")
        if store is not None:
            tip = snap.commit_id or store.resolve(None)
            camp.setup_tolerance, camp.armed_table = setup_tables(store, tip)
    for path, blob in sorted(snap.files(f"{base}/candidates").items()):
        try:
            entry = parse_entry(CandidateEntry, snap.read_blob(blob), path)
        except BadInput as exc:
            camp.problems.append((path, _problem(exc)))
            continue
        camp.candidates.append(
            Candidate(
                path=path,
                commit=entry.commit,
                seq=entry.seq,
                epoch=entry.epoch,
                verdict=entry.verdict,
                reason=entry.reason,
                measurements=dict(entry.measurements),
                notes=entry.notes,
                repeats={k: list(v) for k, v in entry.repeats.items()},
                comparison=dict(entry.comparison) if entry.comparison else None,
                kind=entry.kind,
                diff=dict(entry.diff) if entry.diff is not None else None,
                larger_diff_reason=entry.larger_diff_reason,
                provenance=dict(entry.provenance) if entry.provenance else None,
            )
        )
    camp.candidates.sort(key=lambda c: (c.seq, c.path))
    for path, blob in sorted(snap.files(f"{base}/benchmark").items()):
        try:
            camp.epochs.append(
                parse_entry(AdjustmentEntry, snap.read_blob(blob), path).model_dump()
            )
        except BadInput as exc:
            camp.problems.append((path, _problem(exc)))
    camp.epochs.sort(key=lambda e: int(e["epoch"]))
    for path, blob in sorted(snap.files(f"{base}/mistakes").items()):
        try:
            camp.mistakes.append(parse_entry(MistakeEntry, snap.read_blob(blob), path).model_dump())
        except BadInput as exc:
            camp.problems.append((path, _problem(exc)))
    camp.mistakes.sort(key=lambda m: int(m["seq"]))
    owner = snap.read(f"{base}/{OWNER}")
    if owner is not None:
        try:
            camp.owner = parse_entry(OwnerEntry, owner, f"{base}/{OWNER}").model_dump()
        except BadInput as exc:
            camp.problems.append((f"{base}/{OWNER}", _problem(exc)))
    camp.delivered = snap.read(f"{base}/{DELIVERED}")
    report = snap.read(f"{base}/{REPORT}")
    camp.report = report.decode("utf-8", errors="replace") if report is not None else None
    for name in (JSONL, CSV, MISTAKES):
        camp.views[name] = snap.read(f"{base}/{name}")
    return camp


def candidate_path(config: LedgerConfig, commit: str, epoch: int) -> str:
    return f"{config.dir}/candidates/{commit[:12]}-e{epoch}.json"


def candidate_bytes(c: Candidate) -> bytes:
    data: dict[str, Any] = {
        "commit": c.commit,
        "seq": c.seq,
        "epoch": c.epoch,
        "verdict": c.verdict,
        "reason": c.reason,
        "measurements": c.measurements,
        "notes": c.notes,
    }
    if c.repeats:
        data["repeats"] = c.repeats
    if c.comparison is not None:
        data["comparison"] = c.comparison
    if c.diff is not None:
        data["kind"] = c.kind
        data["diff"] = c.diff
    if c.larger_diff_reason:
        data["larger_diff_reason"] = c.larger_diff_reason
    if c.provenance is not None:
        data["provenance"] = c.provenance
    return dump_json(data).encode()


def _header(name: str, units: dict[str, str]) -> str:
    return f"{name} ({units[name]})" if name in units else name


def render_views(camp: Campaign) -> dict[str, bytes]:
    """candidates.jsonl, benchmark.csv and mistakes.md, from the entries alone.

    A benchmark adjustment is a row of its own, before the candidates of the
    epoch it opened; measurement columns carry their ``[campaign] units``."""
    cfg = table(camp.config)
    names = cfg.measurements
    epoch = camp.epoch
    rows: list[tuple[int, int, int, Candidate | dict[str, Any]]] = [
        (c.epoch, 1, c.seq, c) for c in camp.candidates
    ]
    rows += [(int(e["epoch"]), 0, 0, e) for e in camp.adjustments()]
    rows.sort(key=lambda r: r[:3])
    lines = []
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(
        [
            "seq",
            "commit",
            "epoch",
            "verdict",
            *[_header(n, cfg.units) for n in names],
            "invalidated",
            "reason",
            "notes",
        ]
    )
    for _, _, _, item in rows:
        if isinstance(item, dict):
            reason = str(item.get("reason", ""))
            lines.append(
                json.dumps(
                    {"kind": "benchmark-adjustment", "epoch": item["epoch"], "reason": reason},
                    sort_keys=True,
                    ensure_ascii=False,
                )
            )
            writer.writerow(
                ["", "", item["epoch"], "adjustment", *["" for _ in names], "false", reason, ""]
            )
            continue
        c = item
        row: dict[str, object] = {"kind": "candidate", **c.summary(epoch), **c.measurements}
        if cfg.units:
            row["units"] = {n: cfg.units[n] for n in names if n in cfg.units}
        lines.append(json.dumps(row, sort_keys=True, ensure_ascii=False))
        writer.writerow(
            [
                c.seq,
                c.commit[:12],
                c.epoch,
                c.verdict,
                *[c.measurements.get(n, "") for n in names],
                str(c.epoch < epoch).lower(),
                c.reason,
                c.notes,
            ]
        )
    mistakes = [
        "# Mistakes",
        "",
        "Generated from mistakes/*.json by git-ledger; add with `git ledger mistake add`.",
        "",
    ]
    for m in camp.mistakes:
        mistakes += [
            f"## {m.get('seq')}. {m.get('text')}",
            "",
            f"- Caught by: {m.get('caught_by')}",
            f"- Should have been caught by: {m.get('should_have_caught')}",
            "",
        ]
    return {
        JSONL: ("\n".join(lines) + "\n" if lines else "").encode(),
        CSV: out.getvalue().encode(),
        MISTAKES: "\n".join(mistakes).encode(),
    }


def view_writes(camp: Campaign) -> dict[str, bytes | None]:
    rendered = render_views(camp)
    return {
        f"{camp.config.dir}/{name}": data
        for name, data in rendered.items()
        if camp.views.get(name) != data
    }


def view_drift(camp: Campaign) -> list[str]:
    rendered = render_views(camp)
    return [
        f"{camp.config.dir}/{name} is out of step with its entries"
        for name, data in rendered.items()
        if camp.views.get(name) is not None and camp.views[name] != data
    ]


def mistake_name(seq: int, text: str) -> str:
    return f"{seq:04d}-{hashlib.sha256(text.encode()).hexdigest()[:8]}.json"


def owner_id(config: LedgerConfig, store: Store) -> str:
    """Who is acting: the first ``[campaign] owner_env`` variable that is set, else the git user."""
    import os

    for name in table(config).owner_env:
        value = os.environ.get(name, "").strip()
        if value:
            return value
    sig = store.signature("author")
    return f"{sig.name} <{sig.email}>"


def out_of_scope(config: LedgerConfig, paths: list[str]) -> list[str]:
    """Paths outside ``[campaign] scope`` (none when no scope is configured)."""
    from ledger.core.commitrules import outside_scope

    return outside_scope(paths, list(table(config).scope))


def report_text(camp: Campaign, summary: str) -> str:
    """The closed report: summary, head, every candidate with its reason and notes,
    every benchmark adjustment, every mistake; ends with ``status: closed``."""
    cfg = table(camp.config)
    units = cfg.units
    head = camp.head()
    lines = ["# Campaign report", "", summary.strip(), ""]
    if head is not None:
        lines += [f"Head: {head.commit[:12]} ({head.verdict}, epoch {head.epoch})", ""]
    lines += ["## Candidates", ""]
    for c in camp.candidates:
        numbers = ", ".join(
            f"{n}={c.measurements.get(n, '')}{' ' + units[n] if n in units else ''}"
            for n in cfg.measurements
        )
        line = f"- {c.seq}. {c.commit[:12]} epoch {c.epoch}: {c.verdict} ({numbers})"
        if c.reason:
            line += f"; reason: {c.reason}"
        if c.notes:
            line += f"; notes: {c.notes}"
        if c.comparison:
            line += f"; judged: {describe(c.comparison)}"
        if c.diff is not None:
            line += (
                f"; {c.kind} change of {c.diff.get('files')} file(s), {c.diff.get('lines')} line(s)"
            )
        if c.larger_diff_reason:
            line += f"; larger change kept because: {c.larger_diff_reason}"
        lines.append(line)
    lines += ["", "## Benchmark adjustments", ""]
    lines += [f"- adjustment {e['epoch']}: {e['reason']}" for e in camp.adjustments()] or ["- none"]
    lines += ["", "## Mistakes", ""]
    lines += [f"- {m['seq']}. {m['text']}" for m in camp.mistakes] or ["- none"]
    lines += ["", "status: closed", ""]
    return "\n".join(lines)


def report_is_closed(report: str | None) -> bool:
    return any(line.strip().lower() == "status: closed" for line in (report or "").splitlines())


def unnamed_adjustments(camp: Campaign) -> list[int]:
    """Benchmark adjustments the report does not name (``adjustment N``)."""
    text = (camp.report or "").lower()
    return [int(e["epoch"]) for e in camp.adjustments() if f"adjustment {e['epoch']}" not in text]
