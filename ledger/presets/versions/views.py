"""Generated views: rebuilt from entries, fenced by markers, checked for drift.

A view is never edited by hand; ``expected_views`` says what every fenced block
must contain for a given state, so the CLI writes it, the hooks compare it and
the merge driver regenerates it after a merge.
"""

from __future__ import annotations

from ledger.core.markdown import fmt
from ledger.core.model.documents import get_block, set_block
from ledger.core.state import README, LedgerState
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


VIEW_BLOCKS = ("index", "baseline")  # the README's generated blocks, in order


def readme_views(state: LedgerState) -> dict[str, str]:
    renderers = {"index": render_index, "baseline": render_baseline}
    return {name: renderers[name](state) for name in VIEW_BLOCKS}


def apply_views(text: str, views: dict[str, str]) -> str:
    for name, content in views.items():
        text = set_block(text, name, content)
    return text


def readme_path(state: LedgerState) -> str:
    return f"{state.config.dir}/{README}"


def drift(text: str | None, views: dict[str, str], where: str) -> list[str]:
    """Blocks of ``text`` that differ from what the entries generate."""
    if text is None:
        return [f"{where} is missing"]
    found = []
    for name, content in views.items():
        if get_block(text, name) != content:
            found.append(f"{where}: generated block '{name}' is out of date")
    return found


def readme_update(snap: Snapshot, state: LedgerState) -> dict[str, bytes | None]:
    """The README write that brings its generated blocks in line with ``state``."""
    from ledger.core.resources import read_resource

    path = readme_path(state)
    current = snap.read(path)
    text = (
        current.decode() if current is not None else read_resource("templates", "ledger-README.md")
    )
    updated = apply_views(text, readme_views(state)).encode()
    return {} if updated == current else {path: updated}
