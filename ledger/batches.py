"""The batches loop: revise exactly one weight per batch until convergence (preset ``batches``).

Files under the ledger dir, one per fact:

- ``weights/batch-N.json``: the weights of batch N, ``{target: {key: value}}``
  (a frozen target may hold a plain value); ``weights/meta.json`` names the
  frozen targets and the run id
- ``gates/batch-N.json``: the batch gate that closed batch N (flags, ratio)
- ``revisions/batch-N.json``: the one revision that opened batch N+1
- ``trace/<run id>.jsonl``: trace events; not transitions, they ride along
  with the next transition commit (the batch close)

``revision_log.jsonl`` is a generated view of the revisions.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ledger.errors import BadInput
from ledger.model.config import BatchesTable, LedgerConfig
from ledger.model.documents import load_json
from ledger.store import Snapshot

REVISION_LOG = "revision_log.jsonl"
_BATCH = re.compile(r"batch-(\d+)\.json$")


def table(config: LedgerConfig) -> BatchesTable:
    return config.batches or BatchesTable()


@dataclass
class Batches:
    config: LedgerConfig
    meta: dict[str, Any] | None = None
    weights: dict[int, Any] = field(default_factory=dict)
    weight_blobs: dict[int, str] = field(default_factory=dict)
    gates: dict[int, dict[str, Any]] = field(default_factory=dict)
    revisions: dict[int, dict[str, Any]] = field(default_factory=dict)
    view: bytes | None = None

    @property
    def current(self) -> int | None:
        return max(self.weights) if self.weights else None

    @property
    def run_id(self) -> str:
        return str((self.meta or {}).get("run_id", "run"))

    def closed(self, n: int) -> bool:
        return n in self.gates

    def ratios(self) -> list[float]:
        return [float(self.gates[n]["ratio"]) for n in sorted(self.gates)]


def _numbered(snap: Snapshot, folder: str) -> dict[int, tuple[str, str]]:
    out = {}
    for path, blob in snap.files(folder).items():
        match = _BATCH.search(path)
        if match and path.rsplit("/", 1)[0] == folder:
            out[int(match.group(1))] = (path, blob)
    return out


def load(config: LedgerConfig, snap: Snapshot) -> Batches:
    base = config.dir
    b = Batches(config=config)
    meta = snap.read(f"{base}/weights/meta.json")
    b.meta = dict(load_json(meta, "weights/meta.json")) if meta is not None else None
    for n, (path, blob) in _numbered(snap, f"{base}/weights").items():
        b.weights[n] = load_json(snap.read_blob(blob), path)
        b.weight_blobs[n] = blob
    for n, (path, blob) in _numbered(snap, f"{base}/gates").items():
        b.gates[n] = dict(load_json(snap.read_blob(blob), path))
    for n, (path, blob) in _numbered(snap, f"{base}/revisions").items():
        b.revisions[n] = dict(load_json(snap.read_blob(blob), path))
    b.view = snap.read(f"{base}/{REVISION_LOG}")
    return b


def render_log(b: Batches) -> bytes:
    lines = [
        json.dumps(b.revisions[n], sort_keys=True, ensure_ascii=False) for n in sorted(b.revisions)
    ]
    return ("\n".join(lines) + "\n" if lines else "").encode()


def topic_gate(cfg: BatchesTable, fidelity: float, mono: bool, endpoint: bool) -> dict[str, Any]:
    passed = fidelity >= cfg.fidelity_min and mono and endpoint
    return {
        "inputs": {"fidelity_rate": fidelity, "monotonicity": mono, "endpoints": endpoint},
        "thresholds": {"fidelity_min": cfg.fidelity_min},
        "pass": passed,
        "rule": "fidelity_rate >= fidelity_min AND monotonicity AND endpoints",
    }


def batch_gate(cfg: BatchesTable, flags: list[bool]) -> dict[str, Any]:
    if not flags:
        raise BadInput("--flags is empty", "one true/false per topic, e.g. --flags true,true,false")
    passed = sum(flags)
    ratio = passed / len(flags)
    ok = ratio >= cfg.batch_ratio_min and passed >= cfg.hard_line
    return {
        "inputs": {"flags": flags, "passed": passed, "topics": len(flags)},
        "ratio": ratio,
        "thresholds": {"batch_ratio_min": cfg.batch_ratio_min, "hard_line": cfg.hard_line},
        "pass": ok,
        "rule": "ratio >= batch_ratio_min AND passed topics >= hard_line",
    }


def converged(cfg: BatchesTable, ratios: list[float]) -> dict[str, Any]:
    recent = ratios[-cfg.converge_k :]
    ok = len(recent) == cfg.converge_k and all(r >= cfg.batch_ratio_min for r in recent)
    return {
        "inputs": {"recent": recent},
        "thresholds": {"converge_k": cfg.converge_k, "batch_ratio_min": cfg.batch_ratio_min},
        "pass": ok,
        "rule": "the last converge_k batch ratios are all >= batch_ratio_min",
    }


def parse_bool(value: str, name: str) -> bool:
    lowered = value.strip().lower()
    if lowered in ("true", "1", "yes"):
        return True
    if lowered in ("false", "0", "no"):
        return False
    raise BadInput(f"{name}: {value!r} is not true or false")


def forbidden_words(root: Path, cfg: BatchesTable, text: str) -> list[str]:
    """Words of the forbidden vocabulary file that appear in ``text`` (leak audit)."""
    if not cfg.forbidden_vocabulary:
        return []
    path = root / cfg.forbidden_vocabulary
    if not path.is_file():
        return []
    words = [
        w.strip()
        for w in path.read_text(encoding="utf-8").splitlines()
        if w.strip() and not w.strip().startswith("#")
    ]
    lowered = text.lower()
    return [w for w in words if re.search(rf"(?<![\w]){re.escape(w.lower())}(?![\w])", lowered)]


def trace_path(config: LedgerConfig, run_id: str) -> str:
    return f"{config.dir}/trace/{run_id}.jsonl"


def last_seq(text: str) -> int:
    seq = 0
    for line in text.splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict) and isinstance(event.get("seq"), int):
            seq = max(seq, event["seq"])
    return seq
