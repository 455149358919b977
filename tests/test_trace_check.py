"""The batch loop's ``next`` and ``status`` say what the next transition will do about the
trace on disk (a line no verb wrote refuses it), and what they keep of that answer
(``trace-check.json``) is never another content's. Through ``git ledger`` with hooks
installed; the race is played in process, where its timing can be chosen."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import Repo
from tests.test_i27b_trace_meta import TRACE, append, batch  # noqa: F401 (fixture)
from tests.test_loops_walkfix_versions import gl, next_json, ok

HAND_LINE = {"seq": 2, "event": "batch-ratio", "batch": 0, "fields": {"ratio": 1.0}}
GATE = ("gate", "topic", "--record", "--topic", "t1", "--fidelity-rate", "0.9",
        "--mono", "true", "--endpoint", "true")  # fmt: skip


def test_an_answer_is_kept_only_under_the_trace_it_read(
    batch: Repo,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The trace changes while ``next`` reads it (an agent's edit racing a poller): what
    it found is not kept under the content it hashed first."""
    from ledger.cli.status import _status
    from ledger.presets.batches import preset

    ok(batch, "trace", "emit", "topic-start", "--field", "topic=t1")
    trace = batch.path / TRACE
    clean = trace.read_text()
    append(batch, HAND_LINE)
    dirty = trace.read_text()
    real = preset._trace_problem

    def racing(top: Path, commit: str | None) -> list[str]:
        trace.write_text(clean)  # the hand line taken out while next reads
        return real(top, commit)

    monkeypatch.setattr(preset, "_trace_problem", racing)
    monkeypatch.chdir(batch.path)
    assert _status(Path("."))[0]["next"]["action"] != "fix-trace"  # what it read: clean
    trace.write_text(dirty)
    nxt = next_json(batch)
    assert nxt["action"] == "fix-trace" and "[trace-hand-written]" in nxt["reason"], nxt
    refused = gl(batch, *GATE)
    assert refused.returncode == 1 and "[trace-hand-written]" in refused.stderr


def test_a_commit_landing_while_next_reads_is_not_kept_under_the_earlier_commit(
    batch: Repo,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """HEAD moves between ``next`` reading it (the key of what it keeps) and reading the
    committed trace (a plain ``git commit`` right after a verb, as a verb's own warm-up
    meets it): the answer is the key's commit's, not the later one's (a helper's race:
    after a ``git reset`` back to the earlier commit, next said topic, a cold read
    fix-trace)."""
    from ledger.cli.status import _status
    from ledger.presets.batches import preset

    ok(batch, "trace", "emit", "topic-start", "--field", "topic=t1")
    append(batch, HAND_LINE)
    before = batch.head()
    real = preset._trace_problem

    def racing(top: Path, commit: str | None) -> list[str]:
        batch.git("add", "--", TRACE)  # the hand line committed as next reads
        batch.git("commit", "-q", "--no-verify", "-m", "chore: the trace as it stands")
        return real(top, commit)

    monkeypatch.setattr(preset, "_trace_problem", racing)
    monkeypatch.chdir(batch.path)
    assert _status(Path("."))[0]["next"]["action"] == "fix-trace"  # at the commit it keyed
    monkeypatch.setattr(preset, "_trace_problem", real)
    batch.git("reset", "-q", before)  # back, the hand line still on disk
    nxt = next_json(batch)
    assert nxt["action"] == "fix-trace" and "[trace-hand-written]" in nxt["reason"], nxt


def test_a_hand_line_that_names_a_torn_line_is_no_repair(batch: Repo) -> None:  # noqa: F811
    """Only the event the repair of a torn last line makes is the verbs' own, not any
    line that mentions one: next refuses what the transition refuses."""
    ok(batch, "trace", "emit", "topic-start", "--field", "topic=t1")
    append(batch, {**HAND_LINE, "fields": {"ratio": 1.0, "note": "torn-line"}})
    nxt = next_json(batch)
    assert nxt["action"] == "fix-trace", nxt
    refused = gl(batch, *GATE)
    assert refused.returncode == 1 and "[trace-hand-written]" in refused.stderr


def test_a_torn_last_line_is_the_repair_next_expects(batch: Repo) -> None:  # noqa: F811
    """The case the rule above is for: a writer killed mid-line leaves a fragment, which
    the next transition keeps as a ``torn-line`` event of its own."""
    ok(batch, "trace", "emit", "topic-start", "--field", "topic=t1")
    with (batch.path / TRACE).open("a") as handle:
        handle.write('{"seq": 2, "event": "topic-en')  # no newline: torn
    assert next_json(batch)["action"] != "fix-trace"
    ok(batch, *GATE)
    events = [
        json.loads(line)["event"] for line in batch.git("show", f"HEAD:{TRACE}").split("\n") if line
    ]
    assert "torn-line" in events


@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_a_trace_that_is_no_regular_file_never_hangs_next(batch: Repo, kind: str) -> None:  # noqa: F811
    ok(batch, "trace", "emit", "topic-start", "--field", "topic=t1")
    trace = batch.path / TRACE
    trace.unlink()
    if kind == "fifo":
        os.mkfifo(trace)
    else:
        trace.symlink_to("/dev/zero")
    for verb in ("next", "status"):
        done = subprocess.run(
            ["git", "ledger", verb, "--json"],
            cwd=batch.path, capture_output=True, text=True, check=False, timeout=60,
        )  # fmt: skip
        assert done.returncode == 0, (verb, done.stderr)
        assert "Traceback" not in done.stderr


def test_a_damaged_journal_is_no_internal_error(batch: Repo) -> None:  # noqa: F811
    """Bytes that are no digest in ``.git/ledger/trace-lines`` match no line: the lines
    the verbs wrote are still known, and nothing exits 3."""
    ok(batch, "trace", "emit", "topic-start", "--field", "topic=t1")
    with (batch.path / ".git" / "ledger" / "trace-lines").open("ab") as handle:
        handle.write(b"\xff\xfe\n")
    nxt: dict[str, Any] = next_json(batch)
    assert nxt["action"] != "fix-trace", nxt
    assert gl(batch, "status").returncode == 0
    ok(batch, *GATE)


@pytest.mark.parametrize("planted", [["fix-trace"], [1, 2, 3], ["a", "b", None]])
def test_a_kept_answer_of_another_shape_is_asked_again(
    batch: Repo,  # noqa: F811
    planted: list[object],
) -> None:
    """Under the right key but not of this code's shape (a damaged file, a person's
    edit): next asks the trace again instead of failing or believing it."""
    ok(batch, "trace", "emit", "topic-start", "--field", "topic=t1")
    fresh = next_json(batch)
    path = batch.path / ".git" / "ledger" / "cache" / "trace-check.json"
    record = json.loads(path.read_text())
    record["data"] = {item: planted for item in record["data"]}
    path.write_text(json.dumps(record))
    assert next_json(batch) == fresh
