"""``git ledger record``: ingest one results JSON as its own entry, with provenance."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from ledger.core import gitcli, output
from ledger.core.context import open_context
from ledger.core.errors import BadInput
from ledger.core.model.ids import check_safe
from ledger.core.state import load_version
from ledger.core.store import Snapshot, Transition
from ledger.core.verify import REMEASURE_SLOT, TRAILER_REMEASURE
from ledger.presets.versions.ingest import Measurement, build_result, result_path


def parse_conditions(pairs: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    out = []
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise BadInput(f"--condition {pair!r} is not KEY=VALUE", "e.g. --condition sleep=0.5")
        out.append((check_safe(key, "condition name"), value))
    return tuple(sorted(out))


def _raw(file: Path | None, inline: str | None, limit: int) -> tuple[bytes, str]:
    """The results' bytes and the name provenance gives them: FILE's, or the inline JSON's
    (an agent's result, never written to the work tree: only the entry holds it)."""
    if (file is None) == (inline is None):
        raise BadInput("record takes FILE or --result JSON, one of them", "pass exactly one")
    if inline is not None:
        raw = inline.encode("utf-8")
        if len(raw) > limit:
            raise BadInput(
                f"--result is larger than {limit} bytes",
                "raise [run] result_max_bytes or record a smaller summary",
            )
        return raw, "inline.json"
    if file is None or not file.is_file():
        raise BadInput(f"no such results file: {file}", "pass the path of a JSON results file")
    if file.stat().st_size > limit:
        raise BadInput(
            f"{file} is larger than {limit} bytes",
            "raise [run] result_max_bytes or record a smaller summary",
        )
    return file.read_bytes(), file.name


def run(
    cwd: Path,
    vid: str,
    file: Path | None,
    measurement: Measurement,
    as_json: bool,
    *,
    inline: str | None = None,
) -> int:
    check_safe(vid, "version id")
    ctx = open_context(cwd)
    raw, source_name = _raw(file, inline, ctx.config.run.result_max_bytes)
    dirty_check = gitcli.DirtyCheck(ctx.store.require_workdir(), ctx.dir)
    from ledger.core.verify import ingest_config

    frozen = ingest_config(ctx.store, ctx.config, ctx.config_file, vid)

    def build(snap: Snapshot) -> Transition:
        version = load_version(ctx.config, snap, vid)  # only what this transition touches
        m = measurement
        if m.remeasure is not None:  # its own file: never one the verdict read
            replicate = REMEASURE_SLOT
            while snap.read(result_path(ctx.dir, replace(m, replicate=replicate))) is not None:
                replicate += 1
            m = replace(m, replicate=replicate)
        existing = snap.read(result_path(ctx.dir, m))
        path, data = build_result(
            frozen,
            version,
            m,
            raw,
            source_name,
            code_commit=snap.commit_id,
            dirty=dirty_check.result(),
            existing=existing,
        )
        key = (
            f"seed={measurement.seed}"
            if measurement.seed is not None
            else f"window={measurement.window}"
        )
        trailers = (
            (("Ledger-Replace", measurement.replace),)
            if existing is not None and measurement.replace
            else ()
        ) + (((TRAILER_REMEASURE, m.remeasure),) if m.remeasure else ())
        return Transition(
            kind="record",
            step=vid,
            subject=f"docs(ledger): {vid} {'re-measurement' if m.remeasure else 'result'} "
            f"{measurement.gate} {key}",
            writes={path: data},
            trailers=trailers,
        )

    commit_id, transition = ctx.store.transact(build)
    path = next(iter(transition.writes))
    if as_json:
        output.emit_json({"id": vid, "commit": commit_id, "path": path})
    else:
        output.say(f"recorded {path} ({commit_id[:10]})")
    return 0
