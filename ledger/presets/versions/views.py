"""The versions loop's README blocks: its index of versions and its standing baseline.

How blocks are fenced, written and compared is :mod:`ledger.core.views`; this
module says what they hold (:meth:`VersionsPreset.readme_views`).
"""

from __future__ import annotations

from ledger.core import views
from ledger.core.markdown import fmt
from ledger.core.state import LedgerState
from ledger.core.store import Snapshot

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ledger.presets.versions.baseline import BaselineRow


def _cell(text: str | None) -> str:
    return (text or "").replace("|", "\\|").replace("\n", " ")


def render_index(state: LedgerState) -> str:
    if not state.versions:
        return "_No versions yet: `git ledger register --bet ... --gate ...`._\n"
    lines = ["| version | bet | gate | verdict |", "|---|---|---|---|"]
    for version in state.versions:
        verdict = version.verdict or "open"
        if version.front.conclusion and version.front.conclusion.override:
            verdict += " (override)"
        lines.append(
            f"| [{version.id}]({version.id}.md) | {_cell(version.front.bet)} "
            f"| {version.front.gate} | {verdict} |"
        )
    return "\n".join(lines) + "\n"


def delta_against(delta: float | None, against: str | None) -> str:
    from ledger.core.markdown import signed

    return f"{signed(delta)} ({against})" if delta is not None and against else "—"


BASELINE_COLUMNS = (
    "gate",
    "metric",
    "best (version)",
    "mean",
    "n",
    "σ",
    "latest (version)",
    "latest mean",
    "status",
    "Δ vs parent",
    "Δ vs best",
)


def baseline_cells(row: BaselineRow) -> tuple[str, ...]:
    """One gate's row of the standing baseline, as the README view and ``baseline`` show it."""
    return (
        row.gate,
        f"{row.metric} ({row.direction})",
        row.version,
        fmt(row.mean),
        str(row.n),
        fmt(row.sigma),
        row.latest_version or "—",
        fmt(row.latest_mean),
        row.status,
        delta_against(row.delta_vs_parent, row.latest_parent),
        delta_against(row.delta_vs_best, row.version),
    )


def render_baseline(state: LedgerState) -> str:
    from ledger.presets.versions.baseline import baseline_rows

    rows = baseline_rows(state)
    if not rows:
        return "_No baseline yet: the first concluded version with results establishes it._\n"
    lines = [
        "| " + " | ".join(BASELINE_COLUMNS) + " |",
        "|" + "---|" * len(BASELINE_COLUMNS),
    ]
    lines += ["| " + " | ".join(baseline_cells(row)) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def readme_views(state: LedgerState) -> dict[str, str]:
    """The README's blocks (:attr:`VersionsPreset.readme_blocks`, in order) for ``state``."""
    return {"index": render_index(state), "baseline": render_baseline(state)}


def readme_update(snap: Snapshot, state: LedgerState) -> dict[str, bytes | None]:
    """The README write that brings its generated blocks in line with ``state``."""
    from ledger.core.loops import preset_for

    return views.readme_update(snap, state, preset_for(state.config))
