"""The campaign's and the batches' pure rules, in process (fast)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ledger.core.errors import BadInput
from ledger.core.model.config import BatchesTable, parse_config
from ledger.core.store import Store
from ledger.presets.batches import loop as batches
from ledger.presets.batches.commands import parse_new
from ledger.presets.campaign import loop as campaign
from tests.helpers import Repo


@pytest.mark.parametrize("text", ["check-list", "Checklists", "check  list", "CHECK_LISTS"])
def test_leak_audit_normalises_case_hyphens_spacing_and_plurals(tmp_path: Path, text: str) -> None:
    (tmp_path / "vocab.txt").write_text("# comment\nchecklist\n")
    cfg = BatchesTable(forbidden_vocabulary="vocab.txt")
    assert batches.forbidden_words(tmp_path, cfg, f"follow the {text} closely") == ["checklist"]
    assert batches.forbidden_words(tmp_path, cfg, "check the list twice") == []


def test_a_missing_vocabulary_file_is_bad_input(tmp_path: Path) -> None:
    with pytest.raises(BadInput, match="missing"):
        batches.forbidden_words(tmp_path, BatchesTable(forbidden_vocabulary="gone.txt"), "x")


def test_new_values_keep_json_types() -> None:
    assert parse_new("4", False) == 4 and parse_new("0.5", False) == 0.5
    assert parse_new("true", False) is True and parse_new('{"a": 1}', False) == {"a": 1}
    assert parse_new("warm", False) == "warm"
    assert parse_new("4", True) == "4"


def test_a_torn_trace_line_uses_up_its_sequence_number() -> None:
    text = '{"event": "a", "seq": 1}\n{"event": "b", "se'
    repaired = batches.repair_trace(text)
    events = [json.loads(line) for line in repaired.splitlines()]
    assert [e["seq"] for e in events] == [1, 2] and events[1]["event"] == "torn-line"
    assert batches.last_seq(repaired) + 1 == 3
    whole = '{"event": "a", "seq": 1}\n{"event": "b", "seq": 2}'
    assert batches.repair_trace(whole) == whole + "\n"


def test_owner_is_the_first_configured_variable_set(
    repo: Repo, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = parse_config('[ledger]\npreset = "campaign"\n[campaign]\n', "ledger.toml")
    store = Store(repo.path)
    assert campaign.owner_id(config, store) == "Test Author <author@example.com>"
    monkeypatch.setenv("CLAUDE_CODE_SESSION_ID", "claude-1")
    monkeypatch.setenv("CODEX_THREAD_ID", "codex-1")
    assert campaign.owner_id(config, store) == "codex-1"
    monkeypatch.setenv("LEDGER_OWNER", "alice")
    assert campaign.owner_id(config, store) == "alice"


def test_measurements_by_name_and_alias() -> None:
    config = parse_config(
        '[ledger]\npreset = "campaign"\n[campaign]\nmeasurements = ["speed", "latency_ms"]\n',
        "ledger.toml",
    )
    got = campaign.parse_measures(config, ("latency_ms=N/A: no probe",), {"speed": "3"})
    assert got == {"speed": 3.0, "latency_ms": "N/A: no probe"}
    with pytest.raises(BadInput, match="not a measurement"):
        campaign.parse_measures(config, ("speed=1", "latency_ms=2", "colour=3"), {})
    with pytest.raises(BadInput, match="not a measurement"):
        campaign.parse_measures(config, ("speed=1", "latency_ms=2"), {"correctness": "0"})
    with pytest.raises(BadInput, match="missing"):
        campaign.parse_measures(config, ("speed=1",), {})
