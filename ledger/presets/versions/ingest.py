"""Turn one results JSON into one result entry, with provenance. Shared by record and run.

Refused as bad input (exit 2, nothing written): a file too large, not JSON, a
mapped metric missing, not a number, NaN or infinite; an unknown gate; a
duplicate of an existing result unless it is explicitly replaced with a reason.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from ledger.core.errors import BadInput, Refused
from ledger.core.model.config import LedgerConfig
from ledger.core.model.documents import dump_json, is_finite_number, load_json
from ledger.core.model.entries import Provenance, ResultFile
from ledger.core.model.ids import check_safe
from ledger.core.model.jsonpath import MISSING, resolve
from ledger.core.repobase import result_path as _result_path
from ledger.core.repobase import result_stem
from ledger.core.state import Version


@dataclass(frozen=True)
class Measurement:
    """What a caller knows about one measurement, besides the file itself."""

    version: str
    gate: str
    seed: str | None = None
    window: str | None = None
    window_start: str | None = None
    window_end: str | None = None
    replicate: int | None = None
    conditions: tuple[tuple[str, str], ...] = ()
    wall_time_s: float | None = None
    replace: str | None = None
    # A re-measurement of a concluded version: kept apart from the results the
    # verdict stands on (it never changes it) and read by the reflection.
    remeasure: str | None = None


def result_path(dir_: str, m: Measurement, failed: bool = False) -> str:
    return _result_path(dir_, m.version, m.gate, result_stem(m.seed, m.window, m.replicate, failed))


def extract_metrics(config: LedgerConfig, gate: str, data: object, where: str) -> dict[str, float]:
    cfg = config.gate(gate)
    if not isinstance(data, dict):
        raise BadInput(f"{where}: a results file must be a JSON object")
    metrics: dict[str, float] = {}
    for name, spec in sorted(cfg.metrics.items()):
        value = resolve(data, spec.path)
        if value is MISSING:
            raise BadInput(
                f"{where}: metric '{name}' is missing (no value at {spec.path})",
                f"the gate '{gate}' maps {name} = \"{spec.path}\" in ledger.toml",
            )
        if not is_finite_number(value):
            raise BadInput(
                f"{where}: metric '{name}' at {spec.path} is {value!r}, not a finite number"
            )
        if abs(float(value)) > 1e150:
            raise BadInput(
                f"{where}: metric '{name}' at {spec.path} is {value!r}: its square overflows, so "
                "no statistic can be computed on it",
                "record the metric in a unit where it stays within ±1e150",
            )
        metrics[name] = float(value)
    return metrics


def check_measurement(config: LedgerConfig, version: Version | None, m: Measurement) -> None:
    """``version`` is the entry ``m.version`` names (None: it does not exist)."""
    config.gate(m.gate)
    if (m.seed is None) == (m.window is None):
        raise BadInput("give exactly one of --seed or --window")
    check_safe(m.seed if m.seed is not None else str(m.window), "seed/window")
    if version is None:
        raise BadInput(f"no version {m.version!r} in {config.dir}/", "register it first")
    if version.front.void:
        raise Refused(
            f"{m.version} is void ({version.front.void}): its results never count",
            "register a new version to measure again",
        )
    if version.concluded and m.remeasure is None:
        raise Refused(
            f"{m.version} is concluded: a result recorded after its verdict could not have informed it",
            "register a new version, or --remeasure REASON (kept apart, never changes the verdict)",
        )
    if m.remeasure is not None and not m.remeasure.strip():
        raise BadInput("--remeasure needs a reason", "e.g. --remeasure 'eval stability, seed 42'")
    if m.remeasure is not None and not version.concluded:
        raise BadInput(
            f"{m.version} is still open: record its results normally",
            "--remeasure is for a concluded version",
        )
    for key, _ in m.conditions:
        check_safe(key, "condition name")


def build_result(
    config: LedgerConfig,
    version: Version | None,
    m: Measurement,
    raw: bytes,
    source_name: str,
    *,
    code_commit: str | None,
    dirty: bool,
    existing: bytes | None,
) -> tuple[str, bytes]:
    """The path and bytes of the result entry for ``raw``."""
    check_measurement(config, version, m)
    path = result_path(config.dir, m)
    if existing is not None and m.replace is None:
        raise BadInput(f"{path} is already recorded", "pass --replace REASON to replace it")
    data = load_json(raw, source_name, config.run.result_max_bytes)
    metrics = extract_metrics(config, m.gate, data, source_name)
    wall = m.wall_time_s
    if wall is None and isinstance(data, dict) and is_finite_number(data.get("wall_time_s")):
        wall = float(data["wall_time_s"])
    provenance = Provenance(
        source_sha256=hashlib.sha256(raw).hexdigest(),
        source_name=source_name,
        code_commit=code_commit,
        dirty=dirty,
        conditions=dict(m.conditions),
        wall_time_s=wall,
        replaced=m.replace if existing is not None else None,
        remeasure=m.remeasure,
    )
    # The run's own parameters, when its results file carries them ('compare' shows them).
    params = data.get("params") if isinstance(data, dict) else None
    extra: dict[str, object] | None = (
        {"params": params} if isinstance(params, dict) and params else None
    )
    return path, _entry_bytes(m, metrics, provenance, extra)


def build_failure(
    config: LedgerConfig,
    version: Version | None,
    m: Measurement,
    *,
    exit_code: int,
    log_tail: str,
    code_commit: str | None,
    dirty: bool,
) -> tuple[str, bytes]:
    """A failed run is on record (exit code, log tail) but never counts as a result."""
    check_measurement(config, version, m)
    provenance = Provenance(
        source_sha256="",
        source_name="",
        code_commit=code_commit,
        dirty=dirty,
        conditions=dict(m.conditions),
        wall_time_s=m.wall_time_s,
    )
    failure = {"status": "failed", "exit_code": exit_code, "log_tail": log_tail[-4000:]}
    return result_path(config.dir, m, failed=True), _entry_bytes(m, {}, provenance, failure)


def _entry_bytes(
    m: Measurement,
    metrics: dict[str, float],
    provenance: Provenance,
    failure: dict[str, object] | None = None,
) -> bytes:
    """The result entry's JSON: what was measured (``m``), its metrics and provenance."""
    entry = ResultFile.model_validate(
        {
            "version": m.version,
            "gate": m.gate,
            "seed": m.seed,
            "window": m.window,
            "window_start": m.window_start,
            "window_end": m.window_end,
            "replicate": m.replicate,
            "metrics": metrics,
            "provenance": provenance,
            **(failure or {}),
        }
    )
    return dump_json(entry.model_dump(mode="json", exclude_none=True)).encode()
