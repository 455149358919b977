"""The versions loop (preset ``versions``): pre-registered bets, gates, honest verdicts.

Its entries (version files, results, reflections, matrices) are parsed by
:mod:`ledger.core.state` itself, so their problems are already in the state.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ledger.core.loops import Preset

if TYPE_CHECKING:
    from ledger.core.context import Context
    from ledger.core.model.config import LedgerConfig
    from ledger.core.state import LedgerState
    from ledger.core.store import Snapshot, Store


class VersionsPreset(Preset):
    name = "versions"

    def entry_paths(self, config: LedgerConfig) -> list[str]:
        base = config.dir
        prefix = config.ledger.id_prefix
        return [
            f"{base}/{prefix}*.md",
            f"{base}/results/**/*.json",
            f"{base}/REFLECTION_*.md",
            f"{base}/*-matrix.md",
        ]

    def problems(self, store: Store, config: LedgerConfig, snap: Snapshot) -> list[tuple[str, str]]:
        return []  # listed by ledger.core.state while it parses them

    def history_rules(self) -> list[dict[str, str]]:
        return [
            {
                "paths": "<V>.md",
                "changed_by": "register,conclude",
                "rule": "front matter and Hypothesis frozen once registered",
            },
            {
                "paths": "results/**",
                "changed_by": "record,run,remeasure",
                "rule": "added, never edited; after the verdict only a re-measurement "
                "(remeasure: record/run --remeasure) adds one, in its own slot",
            },
            {"paths": "REFLECTION_*.md", "changed_by": "reflect,hand", "rule": "the reflection"},
        ]

    def summary(self, ctx: Context, state: LedgerState) -> dict[str, Any]:
        return {}

    def next_action(self, ctx: Context, state: LedgerState) -> dict[str, Any]:
        from ledger.presets.versions.nextstep import next_action

        action = dict(next_action(state).as_dict())
        if action["action"] == "conclude":
            supported = supported_verdicts(state, action["command"].split()[3])
            if supported:
                action["command"] = action["command"].replace(
                    "confirmed|refuted|inconclusive", "|".join(supported)
                )
        return action


def supported_verdicts(state: LedgerState, vid: str) -> list[str]:
    """The verdicts the numbers do not contradict (what ``conclude`` accepts)."""
    from ledger.presets.versions.verdicts import contradiction, evidence

    version = state.version(vid)
    gates = evidence(state, vid) if version is not None else []
    if version is None or not gates:
        return []
    return [
        v
        for v in ("confirmed", "refuted", "inconclusive")
        if contradiction(v, gates[0], version.front.effect) is None
    ]


PRESET = VersionsPreset()
