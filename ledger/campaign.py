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

from ledger.errors import BadInput
from ledger.model.config import CampaignTable, LedgerConfig
from ledger.model.documents import dump_json, load_json
from ledger.store import TRAILER_TRANSITION, Snapshot, Store

NA_PREFIX = "N/A:"
VERDICTS = ("base", "promoted", "rejected", "held")
JSONL = "records/candidates.jsonl"
CSV = "benchmark.csv"
MISTAKES = "mistakes.md"
CONTRACT = "contract.md"
REPORT = "latest-report.md"
OWNER = "owner.json"


def table(config: LedgerConfig) -> CampaignTable:
    return config.campaign or CampaignTable()


def parse_measurement(name: str, raw: str | None) -> float | str:
    """A number, or an explanation beginning ``N/A:``; anything else is bad input."""
    if raw is None or not raw.strip():
        raise BadInput(
            f"measurement '{name}' is missing",
            f'give --{name.replace("_", "-")} X, or "{NA_PREFIX} why it could not be measured"',
        )
    text = raw.strip()
    if text.upper().startswith(NA_PREFIX):
        reason = text[len(NA_PREFIX) :].strip()
        if not reason:
            raise BadInput(
                f"measurement '{name}' says N/A without a reason",
                f'"{NA_PREFIX} collection failed"',
            )
        return f"{NA_PREFIX} {reason}"
    try:
        value = float(text)
    except ValueError:
        raise BadInput(
            f"measurement '{name}' is {text!r}: not a number nor '{NA_PREFIX} reason'"
        ) from None
    if value != value or value in (float("inf"), float("-inf")):
        raise BadInput(f"measurement '{name}' is not finite")
    return value


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

    def number(self, name: str) -> float | None:
        value = self.measurements.get(name)
        return value if isinstance(value, float | int) and not isinstance(value, bool) else None


@dataclass
class Campaign:
    config: LedgerConfig
    contract: str | None = None
    setup_tolerance: float | None = None
    candidates: list[Candidate] = field(default_factory=list)
    epochs: list[dict[str, Any]] = field(default_factory=list)
    mistakes: list[dict[str, Any]] = field(default_factory=list)
    owner: dict[str, Any] | None = None
    report: str | None = None
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
        """The promoted head (in this epoch), else the base."""
        promoted = [c for c in self.current() if c.verdict == "promoted"]
        return promoted[-1] if promoted else self.base()

    def promoted_commits(self) -> list[str]:
        """Commits promoted in any epoch, in order, without repeats."""
        seen: list[str] = []
        for c in sorted(self.candidates, key=lambda c: c.seq):
            if c.verdict == "promoted" and c.commit not in seen:
                seen.append(c.commit)
        return seen


def setup_tolerance(store: Store, tip: str | None) -> float | None:
    """The correctness tolerance ledger.toml held when the contract was committed."""
    from ledger.context import load_config

    for info in store.walk(tip):
        if info.trailer(TRAILER_TRANSITION) == "contract":
            loaded = load_config(store, store.snapshot(info.id))
            return table(loaded[0]).correctness_tolerance if loaded else None
    return None


def load(config: LedgerConfig, snap: Snapshot, store: Store | None = None) -> Campaign:
    """The campaign at ``snap``; with ``store``, also the tolerance fixed at setup."""
    base = config.dir
    camp = Campaign(config=config)
    contract = snap.read(f"{base}/{CONTRACT}")
    if contract is not None:
        camp.contract = contract.decode("utf-8", errors="replace")
        if store is not None:
            camp.setup_tolerance = setup_tolerance(store, snap.commit_id or store.resolve(None))
    for path, blob in sorted(snap.files(f"{base}/candidates").items()):
        try:
            data = load_json(snap.read_blob(blob), path)
            camp.candidates.append(
                Candidate(
                    path=path,
                    commit=str(data["commit"]),
                    seq=int(data["seq"]),
                    epoch=int(data["epoch"]),
                    verdict=str(data["verdict"]),
                    reason=str(data.get("reason", "")),
                    measurements=dict(data["measurements"]),
                    notes=str(data.get("notes", "")),
                )
            )
        except (BadInput, KeyError, TypeError, ValueError) as exc:
            camp.problems.append((path, getattr(exc, "message", f"missing or bad field {exc}")))
    camp.candidates.sort(key=lambda c: (c.seq, c.path))
    for path, blob in sorted(snap.files(f"{base}/benchmark").items()):
        try:
            camp.epochs.append(dict(load_json(snap.read_blob(blob), path)))
        except (BadInput, TypeError, ValueError) as exc:
            camp.problems.append((path, getattr(exc, "message", str(exc))))
    for path, blob in sorted(snap.files(f"{base}/mistakes").items()):
        try:
            camp.mistakes.append(dict(load_json(snap.read_blob(blob), path)))
        except (BadInput, TypeError, ValueError) as exc:
            camp.problems.append((path, getattr(exc, "message", str(exc))))
    owner = snap.read(f"{base}/{OWNER}")
    camp.owner = dict(load_json(owner, OWNER)) if owner is not None else None
    report = snap.read(f"{base}/{REPORT}")
    camp.report = report.decode("utf-8", errors="replace") if report is not None else None
    for name in (JSONL, CSV, MISTAKES):
        camp.views[name] = snap.read(f"{base}/{name}")
    return camp


def candidate_path(config: LedgerConfig, commit: str, epoch: int) -> str:
    return f"{config.dir}/candidates/{commit[:12]}-e{epoch}.json"


def candidate_bytes(c: Candidate) -> bytes:
    return dump_json(
        {
            "commit": c.commit,
            "seq": c.seq,
            "epoch": c.epoch,
            "verdict": c.verdict,
            "reason": c.reason,
            "measurements": c.measurements,
            "notes": c.notes,
        }
    ).encode()


def render_views(camp: Campaign) -> dict[str, bytes]:
    """candidates.jsonl, benchmark.csv and mistakes.md, from the entries alone."""
    names = table(camp.config).measurements
    epoch = camp.epoch
    lines = []
    for c in camp.candidates:
        row = {
            "seq": c.seq,
            "commit": c.commit,
            "epoch": c.epoch,
            "verdict": c.verdict,
            "reason": c.reason,
            "invalidated": c.epoch < epoch,
            **c.measurements,
        }
        lines.append(json.dumps(row, sort_keys=True, ensure_ascii=False))
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["seq", "commit", "epoch", "verdict", *names, "invalidated", "reason"])
    for c in camp.candidates:
        writer.writerow(
            [
                c.seq,
                c.commit[:12],
                c.epoch,
                c.verdict,
                *[c.measurements.get(n, "") for n in names],
                str(c.epoch < epoch).lower(),
                c.reason,
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
