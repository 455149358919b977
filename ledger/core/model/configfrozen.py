"""Numbers of ledger.toml a loop froze: one declaration the loop's checks and ``config set``
both read.

A loop judges with some numbers as they were when it started (the batches loop's
thresholds at ``weights init``, the campaign's correctness tolerance at its
contract). Each loop says which ones are frozen at a state
(:meth:`ledger.core.loops.Preset.frozen_settings`); its checks refuse a ledger.toml
that breaks one (a hand edit), and ``git ledger config set`` refuses to change one, so
neither a gate nor ``next`` ever meets a setting the loop will not use. Standard
library only: the preset modules build these on their fast paths.
"""

from __future__ import annotations

import json
from dataclasses import dataclass


@dataclass(frozen=True)
class FrozenSetting:
    """``key`` (TABLE.KEY, as ``config set`` takes it) was frozen at ``value`` ``when``."""

    key: str
    value: float | int | str  # a str: a choice such as a direction, equal or broken
    when: str  # e.g. "when batch-0 was committed"
    # True: only a laxer value (lower) breaks the rule, a stricter one is kept
    # but not used; False: any other value breaks it.
    floor: bool = False

    @property
    def name(self) -> str:
        return self.key.rsplit(".", 1)[-1]

    @property
    def table(self) -> str:
        return self.key.rsplit(".", 1)[0]

    def literal(self) -> str:
        """The frozen value as ``config set`` and TOML write it."""
        return json.dumps(self.value)

    def broken_by(self, current: object) -> bool:
        """Does ``current`` (ledger.toml's value now) break the rule?"""
        if isinstance(self.value, str):
            return current != self.value
        if not isinstance(current, int | float) or isinstance(current, bool):
            return True
        return current < self.value if self.floor else current != self.value

    def breach(self, current: object) -> str | None:
        """What is wrong when ``current`` breaks the rule (None: it holds)."""
        if not self.broken_by(current):
            return None
        return f"[{self.table}] {self.name} is {current} but {self.value} was frozen {self.when}"

    def restore(self, reason: str = "TEXT") -> str:
        """The command that puts the frozen value back (``reason``: its --reason)."""
        return f"git ledger config set {self.key} {self.literal()} --reason {reason}"

    def refusal(self, new: object) -> str | None:
        """Why ``config set`` refuses to write ``new`` (None: it is the frozen value).

        Any change is refused, a stricter one too: the loop goes on judging with the
        frozen number, so a new one in ledger.toml would only say what is not used.
        """
        if new == self.value and not isinstance(new, bool):
            return None
        return (
            f"[config-frozen] {self.key} was frozen at {self.literal()} {self.when}; "
            f"the loop judges with it until it ends, so it is not set to {json.dumps(new)}"
        )
