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
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ledger.core.errors import BadInput
from ledger.core.model.config import BatchesTable, LedgerConfig
from ledger.core.model.configfrozen import FrozenSetting
from ledger.core.model.documents import load_json
from ledger.core.store import Snapshot
from ledger.presets.batches.files import REVISION_LOG as REVISION_LOG

if TYPE_CHECKING:
    from pydantic import BaseModel

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
    topics: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    revisions: dict[int, dict[str, Any]] = field(default_factory=dict)
    view: bytes | None = None
    problems: list[tuple[str, str]] = field(default_factory=list)

    @property
    def current(self) -> int | None:
        return max(self.weights) if self.weights else None

    @property
    def run_id(self) -> str:
        return str((self.meta or {}).get("run_id", "run"))

    @property
    def converged_at(self) -> int | None:
        value = (self.meta or {}).get("converged")
        return int(value) if value is not None else None

    def closed(self, n: int) -> bool:
        return n in self.gates

    def ratios(self) -> list[float]:
        return [float(self.gates[n]["ratio"]) for n in sorted(self.gates)]

    def frozen(self) -> list[str]:
        return list((self.meta or {}).get("frozen", []))

    def thresholds(self) -> BatchesTable:
        """The thresholds frozen at ``weights init`` (else the configured ones)."""
        stored = (self.meta or {}).get("thresholds")
        cfg = table(self.config)
        return cfg.model_copy(update=stored) if stored else cfg

    def done_topics(self, n: int) -> list[dict[str, Any]]:
        return self.topics.get(n, [])


_TOPIC_ID = re.compile(r"t(\d+)")


def next_topic(done: list[dict[str, Any]]) -> tuple[str, int]:
    """The id and sequence number of a batch's next topic, from the topics present: one
    past the highest, so a topic withdrawn by ``git revert`` leaves a gap and never makes
    the count name a topic that is still recorded. ``gate topic --record`` takes this id
    when none is given, and ``next`` proposes it."""
    numbers = [int(m.group(1)) for t in done if (m := _TOPIC_ID.fullmatch(str(t["topic"])))]
    seqs = [int(t.get("seq", 0)) for t in done]
    number = max([len(done), *numbers]) + 1
    return f"t{number}", max([len(done), *seqs]) + 1


def _numbered(snap: Snapshot, folder: str) -> dict[int, tuple[str, str]]:
    out = {}
    for path, blob in snap.files(folder).items():
        match = _BATCH.search(path)
        if match and path.rsplit("/", 1)[0] == folder:
            out[int(match.group(1))] = (path, blob)
    return out


# ``topics/batch-N/T.json`` is a topic's first measurement, ``T~K.json`` its K-th
# re-measurement (``~`` is never part of a topic id, so the names never collide); the
# highest K present is the topic's result. Each file is only ever added.
_TOPIC = re.compile(r"/topics/batch-(\d+)/([^/~]+)(?:~(\d+))?\.json$")


def topic_file(base: str, n: int, topic: str, k: int = 0) -> str:
    """Where measurement ``k`` of ``topic`` in batch ``n`` lives (0: the first)."""
    return f"{base}/topics/batch-{n}/{topic}{f'~{k}' if k else ''}.json"


def topic_of(path: str) -> tuple[int, str, int] | None:
    """(batch, topic, k) of a topic file's path, else None."""
    match = _TOPIC.search(path)
    if match is None:
        return None
    return int(match.group(1)), match.group(2), int(match.group(3) or 0)


# The loop last read in this process, by its configuration and the ledger dir's tree id:
# a command reads it several times (its summary, its step, the trace check, its verb),
# and each read parsed every entry (six a step in a walk, a third of its time). And each
# entry parsed, by its model and blob id (a file's content never changes under its id):
# a process that reads the loop at one tree after another (the MCP server, a walk)
# parses only what is new.
_LAST: list[tuple[LedgerConfig, str, Batches]] = []
_PARSED: dict[tuple[str, str], dict[str, Any]] = {}
_PARSED_MAX = 1 << 16


def load(config: LedgerConfig, snap: Snapshot) -> Batches:
    """The loop at ``snap``; every entry parsed by its typed model, problems listed.

    Each call has its own containers (a verb adds to them); the entries in them are
    shared with the process's earlier read of the same tree, and never changed."""
    tree = snap.tree_id(config.dir)
    found = next((b for c, t, b in _LAST if t == tree and (c is config or c == config)), None)
    if found is None:
        found = _read(config, snap)
        if tree is not None:
            _LAST[:] = [(config, tree, found)]
    return replace(
        found,
        meta=dict(found.meta) if found.meta is not None else None,
        weights=dict(found.weights),
        weight_blobs=dict(found.weight_blobs),
        gates=dict(found.gates),
        topics={n: list(items) for n, items in found.topics.items()},
        revisions=dict(found.revisions),
        problems=list(found.problems),
    )


def _read(config: LedgerConfig, snap: Snapshot) -> Batches:
    # pydantic loads only when a command reads the loop's entries.
    from ledger.core.model.loops import parse_entry
    from ledger.presets.batches.models import (
        BatchGateEntry,
        RevisionEntry,
        TopicEntry,
        WeightsMeta,
    )

    base = config.dir
    b = Batches(config=config)
    meta_path = f"{base}/weights/meta.json"
    meta = snap.read(meta_path)
    if meta is not None:
        try:
            b.meta = parse_entry(WeightsMeta, meta, meta_path).model_dump(exclude_none=True)
        except BadInput as exc:
            b.problems.append((meta_path, exc.message))
    for n, (path, blob) in _numbered(snap, f"{base}/weights").items():
        try:
            data = load_json(snap.read_blob(blob), path)
            if not isinstance(data, dict):
                raise BadInput(f"{path}: weights must be a JSON object")
        except BadInput as exc:
            b.problems.append((path, exc.message))
            continue
        b.weights[n] = data
        b.weight_blobs[n] = blob
    for n, (path, blob) in _numbered(snap, f"{base}/gates").items():
        try:
            b.gates[n] = _parsed(BatchGateEntry, snap, blob, path, by_alias=True)
        except BadInput as exc:
            b.problems.append((path, exc.message))
    latest: dict[tuple[int, str], tuple[int, dict[str, Any]]] = {}
    for path, blob in sorted(snap.files(f"{base}/topics").items()):
        where = topic_of(path)
        try:
            if where is None:
                raise BadInput(f"{path}: not topics/batch-N/TOPIC.json (or TOPIC~K.json)")
            entry = _parsed(TopicEntry, snap, blob, path, by_alias=True)
        except BadInput as exc:
            b.problems.append((path, exc.message))
            continue
        n, name, k = where
        if (n, name) not in latest or latest[(n, name)][0] < k:
            latest[(n, name)] = (k, {**entry, "k": k})
    for (n, _name), (_k, item) in latest.items():
        b.topics.setdefault(n, []).append(item)
    for items in b.topics.values():
        items.sort(key=lambda t: (int(t.get("seq", 0)), str(t["topic"])))
    for n, (path, blob) in _numbered(snap, f"{base}/revisions").items():
        try:
            b.revisions[n] = _parsed(RevisionEntry, snap, blob, path, exclude_unset=True)
        except BadInput as exc:
            b.problems.append((path, exc.message))
    b.view = snap.read(f"{base}/{REVISION_LOG}")
    return b


def _parsed(
    model: type[BaseModel],
    snap: Snapshot,
    blob: str,
    path: str,
    by_alias: bool = False,
    exclude_unset: bool = False,
) -> dict[str, Any]:
    """The entry in ``blob`` parsed by ``model`` and dumped (with model_dump's flags),
    once per process; never changed by its readers."""
    from ledger.core.model.loops import parse_entry

    key = (f"{model.__name__} {by_alias} {exclude_unset}", blob)
    found = _PARSED.get(key)
    if found is None:
        entry = parse_entry(model, snap.read_blob(blob), path)
        found = entry.model_dump(by_alias=by_alias, exclude_unset=exclude_unset)
        if len(_PARSED) >= _PARSED_MAX:
            _PARSED.clear()
        _PARSED[key] = found
    return found


def render_log(b: Batches) -> bytes:
    lines = [
        json.dumps(b.revisions[n], sort_keys=True, ensure_ascii=False) for n in sorted(b.revisions)
    ]
    return ("\n".join(lines) + "\n" if lines else "").encode()


def topic_gate(cfg: BatchesTable, fidelity: float, mono: bool, endpoint: bool) -> dict[str, Any]:
    if not 0.0 <= fidelity <= 1.0:
        raise BadInput(f"--fidelity-rate {fidelity:g} is outside [0, 1]", "a rate is 0..1")
    passed = fidelity >= cfg.fidelity_min and mono and endpoint
    return {
        "inputs": {"fidelity_rate": fidelity, "monotonicity": mono, "endpoints": endpoint},
        "thresholds": {"fidelity_min": cfg.fidelity_min},
        "pass": passed,
        "rule": "fidelity_rate >= fidelity_min AND monotonicity AND endpoints",
    }


def batch_gate(cfg: BatchesTable, flags: list[bool]) -> dict[str, Any]:
    if len(flags) != cfg.topics_per_batch:
        raise BadInput(
            f"--flags has {len(flags)} value(s) but a batch has {cfg.topics_per_batch} topics",
            "one true/false per topic ([batches] topics_per_batch)",
        )
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


def vocabulary(root: Path, cfg: BatchesTable) -> list[str]:
    """The forbidden vocabulary in the work tree; a configured file that is missing is bad
    input. (The verbs audit with the committed vocabulary frozen at ``weights init``:
    :func:`frozen_vocabulary`.)"""
    from ledger.presets.batches.leak import read_words

    if not cfg.forbidden_vocabulary:
        return []
    path = root / cfg.forbidden_vocabulary
    if not path.is_file():
        raise _missing(cfg.forbidden_vocabulary)
    return read_words(path.read_text(encoding="utf-8"))


def _missing(name: str) -> BadInput:
    return BadInput(
        f"the forbidden-vocabulary file {name} is missing",
        'restore it (one word or phrase a line), or set [batches] forbidden_vocabulary = "" '
        "to turn the leak audit off knowingly",
    )


def committed_vocabulary(snap: Snapshot, cfg: BatchesTable) -> list[str]:
    """The forbidden vocabulary as committed at ``snap`` (the work tree does not count)."""
    from ledger.presets.batches.leak import read_words

    if not cfg.forbidden_vocabulary:
        return []
    data = snap.read(cfg.forbidden_vocabulary)
    if data is None:
        raise _missing(cfg.forbidden_vocabulary)
    return read_words(data.decode("utf-8", errors="replace"))


def frozen_vocabulary(b: Batches, snap: Snapshot) -> list[str]:
    """The vocabulary the leak audit uses: frozen into meta.json at ``weights init`` (or by
    ``weights vocabulary``); the committed file for a ledger that froze none."""
    frozen = (b.meta or {}).get("vocabulary")
    if isinstance(frozen, list):
        return [str(w) for w in frozen]
    return committed_vocabulary(snap, table(b.config))


def forbidden_words(root: Path, cfg: BatchesTable, text: str) -> list[str]:
    """Words of the work tree's forbidden vocabulary that appear in ``text`` in any form
    (:mod:`ledger.presets.batches.leak`: stems, compounds, case, spacing)."""
    from ledger.presets.batches.leak import matches

    return matches(vocabulary(root, cfg), text)


FORBIDDEN_TEMPLATE = """\
# Forbidden vocabulary for the leak audit of git-ledger's batches loop.
# One word or phrase a line; 'weights revise' refuses a new value that uses any
# of them in any form: stems and parts of compounds ("re-checklisted",
# "checklist-driven", "quality_checklist" and "check  list" all hit "checklist").
# Commit it before 'weights init', which freezes it; change it later with
# 'git ledger weights vocabulary --reason TEXT'. Lines starting with # are comments.
"""


def trace_path(config: LedgerConfig, run_id: str) -> str:
    return f"{config.dir}/trace/{run_id}.jsonl"


def repair_trace(text: str) -> str:
    """A trace whose last line was torn (no newline: the writer died mid-line) with
    that line kept as a ``torn-line`` event of its own: never glued to the next
    event, and its sequence number is used up, never reused."""
    if not text or text.endswith("\n"):
        return text
    head, _, fragment = text.rpartition("\n")
    head = head + "\n" if head else ""
    try:
        event = json.loads(fragment)
        if isinstance(event, dict) and isinstance(event.get("seq"), int):
            return head + fragment + "\n"
    except ValueError:
        pass
    seq = last_seq(head) + 1
    line = json.dumps(
        {"seq": seq, "event": "torn-line", "fields": {"fragment": fragment}}, sort_keys=True
    )
    return head + line + "\n"


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


BARS = ("fidelity_min", "batch_ratio_min", "hard_line", "converge_k")


def frozen_settings(b: Batches) -> list[FrozenSetting]:
    """The thresholds frozen at ``weights init``, as keys of ledger.toml: a bar may not be
    lowered below its frozen value, and ``topics_per_batch`` may not change."""
    stored = (b.meta or {}).get("thresholds") or {}
    when = "when batch-0 was committed"
    found = [
        FrozenSetting(f"batches.{n}", stored[n], when, floor=True) for n in BARS if n in stored
    ]
    if "topics_per_batch" in stored:
        found.append(FrozenSetting("batches.topics_per_batch", stored["topics_per_batch"], when))
    return found


def broken_threshold(config: LedgerConfig, b: Batches) -> tuple[FrozenSetting, str] | None:
    """The first frozen threshold ledger.toml breaks (a bar lowered since ``weights init``),
    and what is wrong; every gate refuses it and ``next`` proposes restoring it."""
    current = table(config)
    for setting in frozen_settings(b):
        line = setting.breach(getattr(current, setting.name))
        if line is not None:
            return setting, line
    return None
