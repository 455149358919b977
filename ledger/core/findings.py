"""A finding: what a rule found, as one line a person or an agent can act on.

Every rule of every loop returns these (pure functions: state in, findings
out); the caller decides whether one refuses (exit 1) or warns.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Finding:
    rule: str
    message: str
    fix: str = ""
    evidence: dict[str, object] = field(default_factory=dict)

    def line(self) -> str:
        text = f"[{self.rule}] {self.message}"
        return f"{text} (fix: {self.fix})" if self.fix else text
