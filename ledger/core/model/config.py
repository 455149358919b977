"""ledger.toml (or ``[tool.ledger]`` in pyproject.toml): the one place for numbers.

Every table forbids unknown keys, so a typo is an error that names the file,
the key and what is allowed instead of a threshold silently left at its
default.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from ledger.core import repobase
from ledger.core.configfile import has_tool_ledger
from ledger.core.errors import BadInput
from ledger.core.model.ids import case_twin
from ledger.core.repobase import CONFIG_FILE, PYPROJECT

__all__ = ["CONFIG_FILE", "PYPROJECT", "LedgerConfig", "has_tool_ledger", "parse_config"]
Direction = Literal["higher", "lower"]


@dataclass(frozen=True)
class PersonOnly:
    """Marks a setting that reaches outside the ledger's own numbers: a program to
    run, an argument list, a script, or a place read or written outside the ledger.

    Declared where the field is, so every reader of the declaration agrees: the MCP
    server refuses to set such a key (an agent handed the ledger's tools must not be
    able to make it run or read anything; ``ledger.core.model.reach``), and a test
    walks the model so that no such field goes unmarked. A person still sets it,
    in ledger.toml or with ``config set`` and a reason.
    """

    why: str


_RUNS = PersonOnly("names a program to run")
_READS = PersonOnly("names a file it reads")
_PUSHES = PersonOnly("decides whether the ledger is pushed to a remote")


class _Table(BaseModel):
    # defer_build: a model builds its validator on first use, so a verb pays
    # start-up only for the models it touches.
    # strict: `sigma_k = true` or `noise_floor = "1.0"` is an error naming the key, not a
    # silent coercion; inf and nan are never a threshold.
    model_config = ConfigDict(
        extra="forbid", frozen=True, defer_build=True, strict=True, allow_inf_nan=False
    )


class MetricSpec(_Table):
    """Where a metric sits in a results file and which way is better."""

    path: str
    direction: Direction | None = None
    unit: str = ""

    @field_validator("path")
    @classmethod
    def _path_syntax(cls, value: str) -> str:
        from ledger.core.model.jsonpath import parse_path

        parse_path(value)
        return value


class GateConfig(_Table):
    metric: str
    direction: Direction = "higher"
    mode: Literal["seeds", "walk-forward"] = "seeds"
    noise_floor: float | None = Field(default=None, gt=0)
    unit: str = ""
    window_floor: float | None = None
    command: Annotated[list[str] | None, _RUNS] = None
    noop_tolerance: float | None = Field(default=None, ge=0)
    # Walk-forward acceptance bar on the per-window Δ (any of mean, p25, min).
    # Unset: mean Δ > 0 and min Δ ≥ window_floor (or -noise_floor).
    bar: dict[Literal["mean", "p25", "min"], float] | None = None
    # A committed file of walk-forward windows, one "ID,START,END" a line: 'run --windows
    # ID,...' takes their dates from it, so effective N is computed from dates.
    windows_manifest: Annotated[str | None, _READS] = None
    metrics: dict[str, MetricSpec]

    @field_validator("metrics", mode="before")
    @classmethod
    def _short_form(cls, value: Any) -> Any:
        if isinstance(value, dict):
            return {k: {"path": v} if isinstance(v, str) else v for k, v in value.items()}
        return value

    @model_validator(mode="after")
    def _primary_metric_mapped(self) -> GateConfig:
        if self.metric not in self.metrics:
            raise ValueError(
                f"metric {self.metric!r} has no JSON path in its metrics table "
                f'(add {self.metric} = "$.{self.metric}")'
            )
        return self

    def direction_of(self, metric: str) -> Direction:
        spec = self.metrics.get(metric)
        if spec is not None and spec.direction is not None:
            return spec.direction
        return self.direction if metric == self.metric else "higher"

    def unit_of(self, metric: str) -> str:
        spec = self.metrics.get(metric)
        if spec is not None and spec.unit:
            return spec.unit
        return self.unit if metric == self.metric else ""

    def window_bar(self) -> dict[str, float]:
        if self.bar is not None:
            return {str(k): v for k, v in self.bar.items()}
        floor = self.window_floor if self.window_floor is not None else -(self.noise_floor or 0.0)
        return {"mean": 0.0, "min": floor}


class LedgerTable(_Table):
    dir: Annotated[str, PersonOnly("names the directory the ledger writes")] = repobase.DEFAULT_DIR
    preset: Literal["versions", "campaign", "batches"] = repobase.DEFAULT_PRESET
    id_prefix: str = repobase.DEFAULT_ID_PREFIX
    # The history rules this ledger opted into (ledger.core.repobase.RULES_EPOCH).
    rules: int = Field(default=1, ge=1, le=repobase.RULES_EPOCH)

    @field_validator("dir")
    @classmethod
    def _inside_repo(cls, value: str) -> str:
        path = PurePosixPath(value)
        if (
            not value
            or path.is_absolute()
            or ".." in path.parts
            or any(part.lower() in (".git", ".ledger") for part in path.parts)
            or "\\" in value
        ):
            raise ValueError("must be a relative path inside the repository, e.g. 'training_log'")
        return str(path)

    @field_validator("id_prefix")
    @classmethod
    def _prefix(cls, value: str) -> str:
        if not re.fullmatch(r"[A-Z][A-Za-z]{0,7}", value):
            raise ValueError("must be 1-8 letters starting with a capital, e.g. 'V'")
        return value


class StatsTable(_Table):
    sigma_k: float = Field(default=2.0, gt=0)
    alpha: float = Field(default=0.05, gt=0, lt=1)
    power: float = Field(default=0.8, gt=0, lt=1)
    min_windows: int = Field(default=5, ge=1)
    small_n: int = Field(default=30, ge=2)
    pairing: Literal["auto", "off"] = "auto"
    matrix_sigma: dict[str, float] = Field(default_factory=lambda: {"3": 2.5, "5": 3.0})

    @field_validator("matrix_sigma")
    @classmethod
    def _cell_counts(cls, value: dict[str, float]) -> dict[str, float]:
        for count, k in value.items():
            if not count.isdigit() or int(count) < 1 or k <= 0:
                raise ValueError('keys are cell counts, values σ multiples, e.g. {"3" = 2.5}')
        return value


class TriggersTable(_Table):
    consecutive_refutations: int = Field(default=3, ge=1)
    stagnation_versions: int = Field(default=3, ge=1)
    subsystem_k: int = Field(default=3, ge=2)
    drift_versions: int = Field(default=5, ge=1)
    noop_tolerance: float = Field(default=500.0, ge=0)
    # A reflection section counts as filled only with at least this many words of
    # its own (placeholders, "n/a", "-", "ok" and the pre-filled facts do not count).
    reflection_min_words: int = Field(default=3, ge=1)


class HooksTable(_Table):
    # The hooks' fast path reads these keys too: defaults and names in ledger.core.repobase.
    require_open_version: bool = repobase.DEFAULT_REQUIRE_OPEN_VERSION
    max_files_warning: int = Field(default=repobase.DEFAULT_MAX_FILES_WARNING, ge=1)
    warn_outside_plan: bool = repobase.DEFAULT_WARN_OUTSIDE_PLAN
    conventional_commits: bool = repobase.DEFAULT_CONVENTIONAL_COMMITS
    # Documentation and tooling: committed with no version open (see commitrules).
    free_paths: list[str] = Field(default_factory=lambda: list(repobase.DEFAULT_FREE_PATHS))


class RunTable(_Table):
    command: Annotated[list[str] | None, _RUNS] = None
    # "stdout": the gate command prints its results JSON instead of writing {out}
    results: Literal["file", "stdout"] = "file"
    output_dir: Annotated[str | None, PersonOnly("names a place results are written")] = None
    result_max_bytes: int = Field(default=1 << 20, gt=0)
    timeout_seconds: float | None = Field(default=None, gt=0)
    volatile_fields: list[str] = Field(default_factory=lambda: ["wall_time_s"])

    @field_validator("command")
    @classmethod
    def _argv(cls, value: list[str] | None) -> list[str] | None:
        if value is not None and not value:
            raise ValueError('must be a non-empty argv list, e.g. ["python3", "eval.py"]')
        return value


class DoctorTable(_Table):
    stale_lock_minutes: float = Field(default=10.0, ge=0)


class SyncTable(_Table):
    remote: Annotated[str | None, PersonOnly("names the remote the ledger is pushed to")] = None
    # Whether a register pushes to the remote: a person's "never push" is not an agent's
    # to undo (either name).
    sync_on_register: Annotated[bool | None, _PUSHES] = None
    # The same switch under the name that says what it does (register pushes the branch
    # and the witness to the remote); either one set to false turns the push off.
    push_on_register: Annotated[bool | None, _PUSHES] = None
    max_rounds: int = Field(default=8, ge=1)

    @model_validator(mode="after")
    def _one_answer(self) -> SyncTable:
        both = (self.sync_on_register, self.push_on_register)
        if None not in both and both[0] != both[1]:
            raise ValueError(
                "push_on_register and sync_on_register are one setting: give one of them"
            )
        return self

    @property
    def pushes_on_register(self) -> bool:
        return False not in (self.sync_on_register, self.push_on_register)


class ParamsTable(_Table):
    """Where a version's parameters live: files read at its code commit (``compare``)."""

    # Repository paths or globs (``conf/*.json``); JSON, YAML or TOML by the suffix.
    files: Annotated[list[str], _READS] = Field(default_factory=list)

    @field_validator("files")
    @classmethod
    def _readable(cls, value: list[str]) -> list[str]:
        for name in value:
            path = PurePosixPath(name)
            if not name or path.is_absolute() or ".." in path.parts or "\\" in name:
                raise ValueError(f"{name!r} must be a relative path or glob inside the repository")
            if path.suffix.lower() not in (".json", ".yaml", ".yml", ".toml"):
                raise ValueError(f"{name!r}: params are read from .json, .yaml/.yml or .toml files")
        return value


def _campaign_directions() -> dict[str, Direction]:
    return {
        "speed": "higher",
        "accel_mem_gb": "lower",
        "peak_cpu_gb": "lower",
        "correctness": "lower",
    }


class CampaignTable(_Table):
    target_metric: str = "speed"
    measurements: list[str] = Field(
        default_factory=lambda: ["speed", "accel_mem_gb", "peak_cpu_gb", "correctness"]
    )
    directions: dict[str, Direction] = Field(default_factory=_campaign_directions)
    units: dict[str, str] = Field(default_factory=dict)
    noise_floor: float = Field(default=0.0, ge=0)
    correctness_tolerance: float = Field(default=1e-3, ge=0)
    # Environment variables naming the owner, first set wins; else the git user.
    # An agent could name a secret's variable and have its value committed as the owner.
    owner_env: Annotated[
        list[str], PersonOnly("names environment variables whose values are recorded")
    ] = Field(default_factory=lambda: ["LEDGER_OWNER", "CODEX_THREAD_ID", "CLAUDE_CODE_SESSION_ID"])
    required_records: list[str] = Field(default_factory=list)
    # Globs of the files candidates may change (empty: anything).
    scope: list[str] = Field(default_factory=list)
    # The measuring script: commits that change it are delivered with the promoted ones.
    benchmark_script: Annotated[str | None, PersonOnly("names the measuring script")] = None
    # The measuring command `candidate record --run` starts (an argv, never a shell) at the
    # candidate's commit in a temporary worktree; it prints one JSON object of measurements.
    run: Annotated[list[str] | None, _RUNS] = None
    run_repeats: int = Field(default=3, ge=1)
    # Environment facts recorded with every run: name = the argv of a version command.
    environment: Annotated[dict[str, list[str]], PersonOnly("names programs to run")] = Field(
        default_factory=dict
    )

    @field_validator("run")
    @classmethod
    def _run_argv(cls, value: list[str] | None) -> list[str] | None:
        if value is not None and not value:
            raise ValueError('must be a non-empty argv list, e.g. ["python3", "bench.py"]')
        return value

    @field_validator("owner_env", mode="before")
    @classmethod
    def _one_env(cls, value: object) -> object:
        return [value] if isinstance(value, str) else value


class BatchesTable(_Table):
    fidelity_min: float = Field(default=0.8, ge=0, le=1)
    batch_ratio_min: float = Field(default=0.875, ge=0, le=1)
    hard_line: int = Field(default=7, ge=0)
    topics_per_batch: int = Field(default=8, ge=1)
    converge_k: int = Field(default=3, ge=1)
    forbidden_vocabulary: Annotated[str | None, _READS] = "training_log/forbidden.txt"


class LedgerConfig(_Table):
    ledger: LedgerTable = Field(default_factory=LedgerTable)
    gates: dict[str, GateConfig] = Field(default_factory=dict)
    stats: StatsTable = Field(default_factory=StatsTable)
    triggers: TriggersTable = Field(default_factory=TriggersTable)
    hooks: HooksTable = Field(default_factory=HooksTable)
    run: RunTable = Field(default_factory=RunTable)
    doctor: DoctorTable = Field(default_factory=DoctorTable)
    sync: SyncTable = Field(default_factory=SyncTable)
    params: ParamsTable = Field(default_factory=ParamsTable)
    campaign: CampaignTable | None = None
    batches: BatchesTable | None = None

    @field_validator("gates")
    @classmethod
    def _gate_names(cls, value: dict[str, GateConfig]) -> dict[str, GateConfig]:
        # Checked first so that both names are given: gate names are directory
        # names under results/, one directory on a case-insensitive file system.
        names = list(value)
        for i, name in enumerate(names):
            twin = case_twin(name, names[:i])
            if twin is not None:
                raise ValueError(
                    f"gate names {twin!r} and {name!r} differ only in letter case "
                    "(one directory on macOS and Windows file systems); rename one"
                )
        for name in value:
            if not re.fullmatch(r"[a-z0-9][a-z0-9_-]{0,31}", name):
                raise ValueError(
                    f"gate name {name!r} must be lower-case letters, digits, '_' or '-'"
                )
        return value

    @property
    def dir(self) -> str:
        return self.ledger.dir

    def gate(self, name: str) -> GateConfig:
        try:
            return self.gates[name]
        except KeyError:
            known = ", ".join(sorted(self.gates)) or "none configured"
            raise BadInput(f"unknown gate {name!r}", f"gates in ledger.toml: {known}") from None


def _model_in(annotation: Any) -> type[BaseModel] | None:
    """The model inside ``X``, ``X | None`` or ``dict[str, X]``."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in getattr(annotation, "__args__", ()):
        found = _model_in(arg)
        if found is not None:
            return found
    return None


def _allowed_keys(loc: tuple[int | str, ...]) -> list[str]:
    """The keys allowed in the table where validation failed."""
    current: type[BaseModel] = LedgerConfig
    for part in loc[:-1]:
        field = current.model_fields.get(str(part))
        if field is None:  # a free-form key such as a gate name: same table type
            continue
        inner = _model_in(field.annotation)
        if inner is None:
            return []
        current = inner
    return list(current.model_fields)


def _describe(exc: ValidationError, where: str, prefix: tuple[str, ...]) -> BadInput:
    err = exc.errors()[0]
    loc = tuple(err["loc"])
    key = ".".join(str(p) for p in prefix + loc) or "(top level)"
    if err["type"] == "extra_forbidden":
        allowed = _allowed_keys(loc)
        hint = f"allowed here: {', '.join(allowed)}" if allowed else "remove it"
        return BadInput(f"{where}: unknown key '{key}'", hint)
    message = err["msg"].removeprefix("Value error, ")
    return BadInput(f"{where}: invalid value for '{key}': {message}")


def parse_config(text: str, where: str = CONFIG_FILE) -> LedgerConfig:
    """Parse ledger.toml text, or pyproject.toml's ``[tool.ledger]`` table."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise BadInput(f"{where}: not valid TOML: {exc}", "fix the syntax error") from None
    prefix = ("tool", "ledger") if where.endswith(PYPROJECT) else ()
    data = repobase.ledger_table(data, where) or {}
    try:
        return LedgerConfig.model_validate(data)
    except ValidationError as exc:
        raise _describe(exc, where, prefix) from None
