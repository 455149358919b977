"""Entry files of the versions loop, as pydantic models (the file formats' edge).

Paths inside the ledger dir name what an entry is (one file per fact):

- ``V200.md``: a version's registration (frozen), results table, conclusion
- ``REFLECTION_V202.md``: a reflection with six required sections (seven
  after the Goodhart tripwire: its target audit)
- ``V213-matrix.md``: one pre-registration for every cell of a matrix
- ``CAMPAIGN_STATUS.md``: a declared phase transition and its resume criteria
- ``results/V200/<gate>/seed-42.json`` / ``window-<W>.json``: one ingested result
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from ledger.core.model.sections import REFLECTION_SECTIONS as REFLECTION_SECTIONS
from ledger.core.repobase import is_cell_name

Verdict = Literal["confirmed", "refuted", "inconclusive"]
VERDICTS: tuple[str, ...] = ("confirmed", "refuted", "inconclusive")

# The registered part of a version: frozen from its registration commit on.
REGISTERED_KEYS: tuple[str, ...] = (
    "id",
    "kind",
    "parent",
    "bet",
    "gate",
    "files",
    "falsifier",
    "subsystem",
    "noop_gates",
    "effect",
    "cites",
    "force_reason",
    "matrix",
    "ships",
)
HYPOTHESIS = "Hypothesis"


class _Entry(BaseModel):
    # defer_build: a model builds its validator on first use, so a verb pays
    # start-up only for the models it touches.
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)


class GateStat(_Entry):
    """The statistics behind one gate's part of a verdict."""

    gate: str
    metric: str
    direction: Literal["higher", "lower"]
    unit: str = ""
    mode: Literal["seeds", "walk-forward"] = "seeds"
    n: int
    n_eff: float
    mean: float | None
    baseline_version: str | None = None
    baseline_n: int = 0
    baseline_mean: float | None = None
    sigma: float | None = None
    sigma_source: str = ""
    delta: float | None = None
    se: float | None = None
    threshold: float | None = None
    threshold_source: str = ""
    outcome: str
    comparable: bool = True
    note: str = ""
    window_min_delta: float | None = None
    pairing: str = ""
    df: float | None = None
    critical_k: float | None = None
    mde: float | None = None
    bar: str = ""


class Conclusion(_Entry):
    verdict: Verdict
    next: str
    note: str | None = None
    override: str | None = None
    evidence: str = ""
    gates: list[GateStat] = Field(default_factory=list)
    # The >N-files yellow flag, counted over the version's code commits (issue 26).
    yellow_flag: str | None = None


class VersionFront(_Entry):
    id: str
    kind: Literal["version"] = "version"
    parent: str | None = None
    bet: str
    gate: str
    files: list[str] = Field(default_factory=list)
    falsifier: str
    subsystem: str | None = None
    noop_gates: list[str] = Field(default_factory=list)
    effect: float | None = None
    cites: str | None = None
    force_reason: str | None = None
    matrix: str | None = None
    # Observability deltas (reflection section 6) this registration ships (issue 26).
    ships: list[str] = Field(default_factory=list)
    conclusion: Conclusion | None = None
    # Set by ``git ledger void``: the version is closed, its results never count.
    void: str | None = None

    @field_validator("bet", "falsifier")
    @classmethod
    def _one_line(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be empty")
        if "\n" in value.strip():
            raise ValueError("must be one line")
        return value

    def registered(self) -> dict[str, Any]:
        data = self.model_dump(mode="json")
        return {k: data[k] for k in REGISTERED_KEYS}


class ReflectionFront(_Entry):
    id: str
    kind: Literal["reflection"] = "reflection"
    after: str
    triggers: list[str] = Field(default_factory=list)
    # Subsystems the audit names as dead ends: betting on one again needs --force REASON.
    exhausted: list[str] = Field(default_factory=list)
    # What the reflection found binds the loop ("instrument": the evaluation, not the
    # bets): one of the conditions 'phase declare' checks.
    binding_constraint: str | None = None
    # The gate the Goodhart tripwire fired on: the reflection then audits it as a target
    # ("## Target audit", ending in "keep as target" or "retire").
    target_gate: str | None = None


class PhaseFront(_Entry):
    kind: Literal["phase"] = "phase"
    state: Literal["parked", "active"]
    declared_after: str | None = None
    reason: str = ""
    exhausted: list[str] = Field(default_factory=list)
    resume_criteria: list[str] = Field(default_factory=list)
    # The declaration's three conditions, each "held: ..." or "not held: ...", and the
    # reason it was forced when one did not hold; the resume's criterion and evidence.
    conditions: dict[str, str] = Field(default_factory=dict)
    force: str | None = None
    resumed_on: str | None = None
    resume_evidence: str | None = None


# A cell's name and slug become a branch and a directory under .ledger/worktrees/:
# a matrix file arriving from a remote is held to what ``matrix new`` writes, so
# no pushed entry can steer a worktree (or a git command) anywhere else.
CELL_SLUG = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")


class MatrixCell(_Entry):
    name: str
    slug: str
    bet: str
    gate: str
    files: list[str] = Field(default_factory=list)
    falsifier: str
    branch: str
    subsystem: str | None = None  # what the cell patches; the triggers count it per cell


class MatrixFront(_Entry):
    id: str
    kind: Literal["matrix"] = "matrix"
    baselines: dict[str, str] = Field(default_factory=dict)
    cites: str | None = None
    cells: list[MatrixCell]
    concluded: bool = False
    winner: str | None = None
    override: str | None = None
    verdicts: dict[str, Verdict] = Field(default_factory=dict)
    comparison: dict[str, GateStat] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _cells_are_what_matrix_new_writes(self) -> MatrixFront:
        for cell in self.cells:
            if not is_cell_name(cell.name):
                raise ValueError(
                    f"cell name {cell.name!r} is not a capital letter and letters/digits"
                )
            if len(cell.slug) > 40 or not CELL_SLUG.fullmatch(cell.slug):
                raise ValueError(f"cell {cell.name}: slug {cell.slug!r} is not a-z, 0-9 and '-'")
            expected = f"ledger/{self.id}.{cell.name}-{cell.slug}"
            if cell.branch != expected:
                raise ValueError(f"cell {cell.name}: branch {cell.branch!r} is not {expected!r}")
        return self

    def cell(self, name: str) -> MatrixCell | None:
        return next((c for c in self.cells if c.name == name), None)


class Provenance(_Entry):
    source_sha256: str
    source_name: str
    code_commit: str | None
    dirty: bool
    conditions: dict[str, str] = Field(default_factory=dict)
    wall_time_s: float | None = None
    replaced: str | None = None
    remeasure: str | None = None


class ResultFile(_Entry):
    version: str
    gate: str
    seed: str | None = None
    window: str | None = None
    window_start: str | None = None
    window_end: str | None = None
    replicate: int | None = None
    metrics: dict[str, float]
    provenance: Provenance
    status: Literal["ok", "failed"] = "ok"
    exit_code: int | None = None
    log_tail: str | None = None
    # The results file's own "params" object, kept as it was (``compare`` shows it).
    params: dict[str, Any] | None = None
