"""``git ledger weights init|revise|copy``: batch-0, then one revision (or a copy)
per closed batch, which opens the next one.

A revision names one weight (an exact key, else a dotted path), is audited for
forbidden words, never touches a frozen target and never replaces a container
with a scalar unless asked to.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

from ledger.core import output
from ledger.core.context import Context
from ledger.core.errors import BadInput, Refused
from ledger.core.model.documents import dump_json, load_json
from ledger.core.model.ids import check_safe
from ledger.core.store import Snapshot, Transition
from ledger.presets.batches import leak, rules
from ledger.presets.batches import loop as batches
from ledger.presets.batches.commands.common import (
    open_batches,
    require_clean_history,
    require_not_converged,
    say,
    trace_ride_along,
)
from ledger.presets.batches.loop import Batches


def weights_init(
    cwd: Path, file: Path, frozen: tuple[str, ...], run_id: str | None, as_json: bool
) -> int:
    ctx = open_batches(cwd)
    if not file.is_file():
        raise BadInput(f"no such weights file: {file}")
    data = load_json(file.read_bytes(), str(file))
    if not isinstance(data, dict) or not data:
        raise BadInput(f"{file}: weights must be a JSON object {{target: {{key: value}}}}")
    for target, value in data.items():
        if target not in frozen and not isinstance(value, dict):
            raise BadInput(f"{file}: target {target!r} must map keys to values (or be --frozen)")
    for target in frozen:
        if target not in data:
            raise BadInput(f"--frozen {target}: no such target in {file}")
    if run_id is not None:
        check_safe(run_id, "--run-id")
    cfg = batches.table(ctx.config)
    ctx.require_committed_config()
    words = _committed_words(ctx)
    meta = {
        "frozen": sorted(frozen),
        "run_id": run_id or f"run-{uuid.uuid4().hex[:8]}",
        "thresholds": {
            "fidelity_min": cfg.fidelity_min,
            "batch_ratio_min": cfg.batch_ratio_min,
            "hard_line": cfg.hard_line,
            "topics_per_batch": cfg.topics_per_batch,
            "converge_k": cfg.converge_k,
        },
        "vocabulary": words,
    }

    def build(snap: Snapshot) -> Transition:
        if batches.load(ctx.config, snap).weights:
            raise Refused("weights are already initialised", "git ledger resume")
        base = ctx.dir
        return Transition(
            kind="weights-init",
            step="batch-0",
            subject="docs(batches): batch-0 weights",
            writes={
                f"{base}/weights/batch-0.json": dump_json(data).encode(),
                f"{base}/weights/meta.json": dump_json(meta).encode(),
            },
        )

    commit_id, _ = ctx.store.transact(build)
    loud_if_empty(ctx, words)
    say(
        as_json,
        {"commit": commit_id, "batch": 0, "run_id": meta["run_id"], "vocabulary": len(words)},
        f"batch-0 committed ({commit_id[:10]}); run id {meta['run_id']}; "
        f"{len(words)} forbidden word(s) frozen",
    )
    return 0


def _committed_words(ctx: Context) -> list[str]:
    """The committed forbidden vocabulary; refused while the file has uncommitted changes
    (the audit must use what review saw)."""
    cfg = batches.table(ctx.config)
    words = batches.committed_vocabulary(ctx.store.snapshot(), cfg)
    name = cfg.forbidden_vocabulary
    if name:
        on_disk = ctx.store.require_workdir() / name
        committed = ctx.store.snapshot().read(name)
        if not on_disk.is_file() or on_disk.read_bytes() != committed:
            raise BadInput(
                f"{name} has uncommitted changes; the leak audit uses the committed vocabulary",
                f"commit it first (git commit {name})",
            )
    return words


def loud_if_empty(ctx: Context, words: list[str]) -> None:
    """An empty vocabulary audits nothing: say so every time, on stderr."""
    if not words:
        name = batches.table(ctx.config).forbidden_vocabulary or "(none configured)"
        output.warn(
            f"[leak-audit] the forbidden vocabulary {name} is empty: the leak audit checks "
            "nothing (add words, commit them, then git ledger weights vocabulary --reason TEXT)"
        )


def weights_vocabulary(cwd: Path, reason: str, as_json: bool) -> int:
    """Freeze the committed forbidden vocabulary anew: a transition with a reason."""
    ctx = open_batches(cwd)
    if not reason.strip():
        raise BadInput("--reason is empty", "say why the vocabulary changes")
    require_clean_history(ctx)
    words = _committed_words(ctx)

    def build(snap: Snapshot) -> Transition:
        b = batches.load(ctx.config, snap)
        require_not_converged(b)
        if b.meta is None:
            raise Refused("no weights yet", "git ledger weights init FILE (it freezes it)")
        if b.meta.get("vocabulary") == words:
            raise BadInput(
                "the committed vocabulary is the frozen one already",
                f"edit and commit {batches.table(ctx.config).forbidden_vocabulary} first",
            )
        meta = {**b.meta, "vocabulary": words}
        return Transition(
            kind="vocabulary",
            step=f"vocabulary-{b.current}",
            subject=f"docs(batches): forbidden vocabulary ({len(words)} word(s))",
            body=reason.strip(),
            writes={f"{ctx.dir}/weights/meta.json": dump_json(meta).encode()},
        )

    commit_id, _ = ctx.store.transact(build)
    loud_if_empty(ctx, words)
    say(
        as_json,
        {"commit": commit_id, "vocabulary": len(words)},
        f"{len(words)} forbidden word(s) frozen ({commit_id[:10]})",
    )
    return 0


def _open_next(ctx: Context, b: Batches) -> int:
    """The batch whose revision is allowed now (the current one, once it is closed)."""
    require_not_converged(b)
    current = b.current
    if current is None:
        raise Refused("no weights yet", "git ledger weights init FILE")
    if not b.closed(current):
        if current - 1 in b.revisions or (current > 0 and current - 1 in b.gates):
            raise Refused(
                f"batch {current - 1} was already revised or copied (batch {current} is open); "
                "one revision per closed batch",
                f"close batch {current} first: git ledger gate batch --flags ... --record",
            )
        raise Refused(
            f"batch {current} is not closed", "git ledger gate batch --flags ... --record"
        )
    return current


def parse_new(new: str, as_string: bool) -> Any:
    """``--new`` as JSON when it is valid JSON, else (or with ``--string``) a string."""
    if as_string:
        return new
    try:
        return json.loads(new)
    except ValueError:
        return new


def _locate(weights: dict[str, Any], target: str, key: str, n: int) -> tuple[dict[str, Any], str]:
    """The object holding ``key`` in ``target``: an exact key first, else a dotted path."""
    node = weights.get(target)
    if not isinstance(node, dict):
        raise BadInput(f"no target {target!r} with keys in batch-{n}", "revise an existing weight")
    if key in node:
        return node, key
    parts = key.split(".")
    for part in parts[:-1]:
        node = node.get(part) if isinstance(node, dict) else None
        if not isinstance(node, dict):
            break
    if isinstance(node, dict) and parts[-1] in node:
        return node, parts[-1]
    raise BadInput(f"no weight {target}.{key} in batch-{n}", "revise an existing weight")


def weights_change(
    cwd: Path,
    *,
    copy: bool,
    target: str | None,
    key: str | None,
    new: str | None,
    reason: str | None,
    as_string: bool = False,
    replace_container: bool = False,
    allow_null: bool = False,
    topic: str | None = None,
    signal: str | None = None,
    as_json: bool,
) -> int:
    ctx = open_batches(cwd)
    cfg = batches.table(ctx.config)
    if not copy:
        if not target or not key or new is None or not (reason or "").strip():
            raise BadInput("weights revise needs --target, --key, --new and --reason")
        # A configured vocabulary file that is gone is bad input (a misconfiguration), even
        # though the audit uses the copy frozen at weights init.
        batches.vocabulary(ctx.store.require_workdir(), cfg)
        snap = ctx.store.snapshot()
        words = batches.frozen_vocabulary(batches.load(ctx.config, snap), snap)
        loud_if_empty(ctx, words)
        leaks = leak.matches(words, new)
        if leaks:
            raise Refused(
                f"[leak-audit] the revised text uses forbidden words: {', '.join(leaks)}",
                f"rephrase without them ({cfg.forbidden_vocabulary})",
            )

    require_clean_history(ctx)
    # Validated above for a revision; plain strings from here on.
    target_s, key_s, new_s = target or "", key or "", new or ""
    value: Any = parse_new(new_s, as_string)
    if not copy and value is None and not allow_null:
        # JSON null would silently erase the weight's text (issue 27).
        raise BadInput(
            f"--new {new_s!r} is JSON null: it would erase {target_s}.{key_s}",
            "pass --string to store the text, or --allow-null to clear the weight",
        )

    def build(snap: Snapshot) -> Transition:
        b = batches.load(ctx.config, snap)
        n = _open_next(ctx, b)
        base = ctx.dir
        writes: dict[str, bytes | None] = trace_ride_along(ctx, b, snap)
        if copy:
            writes[f"{base}/weights/batch-{n + 1}.json"] = snap.read_blob(b.weight_blobs[n])
            return Transition(
                kind="weights-copy",
                step=f"batch-{n + 1}",
                subject=f"docs(batches): batch-{n + 1} copies batch-{n}",
                writes=writes,
            )
        blockers = rules.revise_blockers(b, n, b.thresholds().fidelity_min, topic, signal)
        if blockers:
            raise Refused.of(blockers)
        if target_s in b.frozen():
            raise Refused(f"[frozen-target] {target_s} is frozen", "revise another target")
        weights = json.loads(json.dumps(b.weights[n]))
        holder, leaf = _locate(weights, target_s, key_s, n)
        old = holder[leaf]
        if (
            isinstance(old, dict | list)
            and not isinstance(value, dict | list)
            and not replace_container
        ):
            raise BadInput(
                f"{target_s}.{key_s} is a {'object' if isinstance(old, dict) else 'list'}; "
                f"--new {new_s!r} would replace it with a scalar",
                "name a key inside it, or pass --replace-container",
            )
        if value == old and type(value) is type(old):
            raise BadInput(
                f"{target_s}.{key_s} already is {old!r}",
                "use 'git ledger weights copy' to carry it forward",
            )
        holder[leaf] = value
        revision = {
            "batch": n,
            "target": target_s,
            "key": key_s,
            "old": old,
            "new": value,
            "reason": (reason or "").strip(),
            **({"topic": topic} if topic is not None else {}),
            **({"signal": signal} if signal is not None else {}),
        }
        b.revisions[n] = revision
        writes[f"{base}/weights/batch-{n + 1}.json"] = dump_json(weights).encode()
        writes[f"{base}/revisions/batch-{n}.json"] = dump_json(revision).encode()
        writes[f"{base}/{batches.REVISION_LOG}"] = batches.render_log(b)
        return Transition(
            kind="weights-revise",
            step=f"batch-{n + 1}",
            subject=f"docs(batches): batch-{n + 1} revises {target_s}.{key_s}",
            body=revision["reason"],
            writes=writes,
        )

    commit_id, transition = ctx.store.transact(build)
    say(
        as_json,
        {"commit": commit_id, "opened": transition.step},
        f"{transition.subject} ({commit_id[:10]})",
    )
    return 0
