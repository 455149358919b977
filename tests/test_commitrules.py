"""The commit-message rules the commit-msg hook applies (pure, standard library only)."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ledger.core.commitrules import check_message, is_conventional, step_trailers, version_ids

REFERENCE = re.compile(
    r"^(feat|fix|perf|refactor|docs|test|tests|chore|build|ci|style|revert)(\([^()\s][^()]*\))?!?: \S"
)


@pytest.mark.parametrize(
    "subject, ok",
    [
        ("feat(x): V200 — bet", True),
        ("fix: typo", True),
        ("feat!: breaking", True),
        ("docs(ledger): V1 log", True),
        ("feat(a b): x", True),
        ("tweak things", False),
        ("feat(): x", False),
        ("feat( x): y", False),
        ("feat(x):y", False),
        ("feat(x): ", False),
        ("wip(x): y", False),
        ("feat((x)): y", False),
    ],
)
def test_conventional_subjects(subject: str, ok: bool) -> None:
    assert is_conventional(subject) is ok


@given(st.text(alphabet="featfixdocs(): !xab-_", max_size=20))
def test_conventional_check_agrees_with_the_reference_regex(subject: str) -> None:
    assert is_conventional(subject) == bool(REFERENCE.match(subject))


def test_version_ids_and_trailers() -> None:
    assert version_ids("feat(x): V199 and V200a, not V2000abc or AV12", "V") == {"V199", "V200a"}
    assert step_trailers("subject\n\nLedger-Step: V200\nOther: x\n") == {"V200"}


def test_check_message_rules() -> None:
    kwargs = dict(
        id_prefix="V",
        conventional=True,
        require_open_version=True,
        max_files=3,
        warn_outside_plan=True,
    )
    none_open = check_message(
        "feat(x): y", code_paths=["a.py"], open_version=None, plan=[], **kwargs
    )
    assert [f.rule for f in none_open] == ["one-bet-per-version"]
    other = check_message(
        "feat(x): V199 y", code_paths=["a.py"], open_version="V200", plan=["a.py"], **kwargs
    )
    assert [f.rule for f in other] == ["one-bet-per-version"]
    fine = check_message(
        "feat(x): V200 y", code_paths=["a.py"], open_version="V200", plan=["a.py"], **kwargs
    )
    assert fine == []
    ledger_only = check_message(
        "docs(ledger): note", code_paths=[], open_version=None, plan=[], **kwargs
    )
    assert ledger_only == []
