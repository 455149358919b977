"""Issue 27, batches loop: trace events come only from the verbs (verify finds a hand-written
line, a reused seq, an event after run_end), and ``weights/meta.json`` is checked against
history (a hand edit is a ``verify`` finding, and every transition refuses while it
stands). Through ``git ledger`` with hooks installed, as an adversary would."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.helpers import Repo, fingerprint
from tests.test_i27b_batches import topic
from tests.test_loops_walkfix_versions import gl, next_json, ok

TRACE = "training_log/trace/walk.jsonl"


@pytest.fixture
def batch(bare_repo: Repo, tmp_path: Path) -> Repo:
    bare_repo.write("src/app.py", "x = 0\n")
    bare_repo.commit_all("feat(src): the app")
    ok(bare_repo, "init", "--preset", "batches")
    ok(bare_repo, "hooks", "install")
    weights = tmp_path / "weights.json"
    weights.write_text(json.dumps({"style": {"tone": "plain"}, "rubric": {"bar": 1}}))
    ok(bare_repo, "weights", "init", str(weights), "--run-id", "walk", "--frozen", "rubric")
    return bare_repo


def forge(repo: Repo, subject: str, kind: str, step: str) -> str:
    """Commit what is staged past the hooks, under a forged transition trailer."""
    message = f"{subject}\n\nLedger-Transition: {kind}\nLedger-Step: {step}\n"
    repo.git("commit", "-q", "--no-verify", "-m", message)
    return repo.git("rev-parse", "HEAD").strip()


def append(repo: Repo, event: dict[str, object]) -> None:
    with (repo.path / TRACE).open("a") as handle:
        handle.write(json.dumps(event, sort_keys=True) + "\n")


def test_a_hand_written_trace_line_refuses_the_transition_it_would_ride_along_with(
    batch: Repo,
) -> None:
    ok(batch, "trace", "emit", "topic-start", "--field", "topic=t1")
    assert next_json(batch)["action"] != "fix-trace"  # next's answer, kept for this trace
    # A line with the next seq and an invented ratio, written by hand.
    append(batch, {"seq": 2, "event": "batch-ratio", "batch": 0, "fields": {"ratio": 1.0}})
    before = fingerprint(batch.path)
    done = gl(
        batch, "gate", "topic", "--record", "--topic", "t1", "--fidelity-rate", "0.9",
        "--mono", "true", "--endpoint", "true",
    )  # fmt: skip
    assert done.returncode == 1 and "[trace-hand-written]" in done.stderr, done.stderr
    assert "'batch-ratio' (seq 2)" in done.stderr
    assert fingerprint(batch.path) == before
    nxt = next_json(batch)
    assert nxt["action"] == "fix-trace" and "[trace-hand-written]" in nxt["reason"]
    lines = (batch.path / TRACE).read_text().splitlines()
    (batch.path / TRACE).write_text(lines[0] + "\n")  # the hand-written line removed
    assert next_json(batch)["action"] != "fix-trace"
    topic(batch, "t1")
    committed = batch.git("show", f"HEAD:{TRACE}").splitlines()
    assert [json.loads(line)["event"] for line in committed] == ["topic-start"]
    assert gl(batch, "verify").returncode == 0


def test_a_trace_line_committed_by_hand_is_refused_by_the_hook_and_found_by_verify(
    batch: Repo,
) -> None:
    ok(batch, "trace", "emit", "topic-start")
    batch.git("add", TRACE)
    hooked = gl(batch, "verify")  # nothing committed yet: clean
    assert hooked.returncode == 0
    refused = batch.git("commit", "-q", "-m", "chore: trace", check=False)
    assert batch.git("diff", "--cached", "--name-only").strip() == TRACE, refused
    batch.git("commit", "-q", "--no-verify", "-m", "chore: trace")
    found = gl(batch, "verify")
    assert found.returncode == 1 and "[trace-transitions-only]" in found.stdout, found.stdout
    done = gl(
        batch, "gate", "topic", "--record", "--topic", "t1", "--fidelity-rate", "0.9",
        "--mono", "true", "--endpoint", "true",
    )  # fmt: skip
    assert done.returncode == 1 and "[history-findings]" in done.stderr
    assert "[trace-transitions-only]" in done.stderr
    nxt = next_json(batch)
    assert nxt["action"] in ("drop-commit", "verify") and "trace" in nxt["reason"]


def test_verify_finds_a_reused_seq_and_an_event_after_run_end_under_forged_trailers(
    batch: Repo,
) -> None:
    ok(batch, "trace", "emit", "a")
    topic(batch, "t1")  # seq 1 rides along
    append(batch, {"seq": 1, "event": "again", "batch": 0, "fields": {}})
    batch.git("add", TRACE)
    forged = forge(batch, "docs(batches): batch-0 topic t2 pass", "topic", "batch-0-t2")
    found = gl(batch, "verify")
    assert found.returncode == 1
    line = next(x for x in found.stdout.splitlines() if "[trace-seq]" in x)
    assert forged[:10] in line and "seq 1 where 2 comes next" in line
    batch.git("reset", "-q", "--hard", "HEAD~1")
    append(batch, {"seq": 2, "event": "run_end", "batch": 0, "fields": {}})
    append(batch, {"seq": 3, "event": "late", "batch": 0, "fields": {"ratio": 1.0}})
    batch.git("add", TRACE)
    forged = forge(batch, "docs(batches): batch-0 topic t2 pass", "topic", "batch-0-t2")
    found = gl(batch, "verify")
    assert found.returncode == 1
    line = next(x for x in found.stdout.splitlines() if "[trace-after-run-end]" in x)
    assert forged[:10] in line and "'late'" in line


def test_trace_emit_after_run_end_is_refused(batch: Repo) -> None:
    ok(batch, "trace", "emit", "a")
    append(batch, {"seq": 2, "event": "run_end", "batch": 0, "fields": {}})
    done = gl(batch, "trace", "emit", "late")
    assert done.returncode == 1 and "[trace-after-run-end]" in done.stderr


def test_a_hand_edited_meta_json_is_found_and_refuses_every_transition(batch: Repo) -> None:
    for i in range(1, 9):
        topic(batch, f"t{i}")
    ok(batch, "gate", "batch", "--record")
    meta = batch.path / "training_log/weights/meta.json"
    data = json.loads(meta.read_text())
    data["frozen"] = []  # unfreeze the rubric
    meta.write_text(json.dumps(data, sort_keys=True, indent=2) + "\n")
    batch.git("commit", "-qam", "chore: unfreeze", check=False)
    assert batch.git("status", "--porcelain").strip()  # the hook refused it
    batch.git("commit", "-qam", "chore: unfreeze", "--no-verify")
    found = gl(batch, "verify")
    assert found.returncode == 1 and "weights/meta.json" in found.stdout
    before = fingerprint(batch.path)
    for verb in (["weights", "copy"], ["weights", "revise", "--target", "rubric", "--key",
                 "bar", "--new", "2", "--reason", "unfrozen by hand"]):  # fmt: skip
        refused = gl(batch, *verb)
        assert refused.returncode == 1 and "[history-findings]" in refused.stderr
        assert "weights/meta.json" in refused.stderr and "[transitions-only]" in refused.stderr
    assert fingerprint(batch.path) == before
    nxt = next_json(batch)
    assert nxt["action"] in ("drop-commit", "verify") and "meta.json" in nxt["reason"]


def test_trace_emit_takes_many_events_in_one_call_each_with_its_own_seq(batch: Repo) -> None:
    ok(batch, "trace", "emit", "run-start")
    lines = [{"event": "topic-done", "fields": {"topic": f"t{i}", "ratio": 0.5}} for i in range(5)]
    (batch.path / "events.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    done = gl(batch, "trace", "emit", "--events", "events.jsonl", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"seq": 2, "last_seq": 6, "events": 5, "path": TRACE}
    written = [json.loads(x) for x in (batch.path / TRACE).read_text().splitlines()]
    assert [x["seq"] for x in written] == [1, 2, 3, 4, 5, 6]
    assert [x["fields"]["topic"] for x in written[1:]] == [f"t{i}" for i in range(5)]
    # Standard input works as a file does, and the batch is still the verbs' own writing:
    # the next transition takes it along (no hand-written line).
    piped = subprocess.run(
        ["git", "ledger", "trace", "emit", "--events", "-"],
        cwd=batch.path,
        input='{"event": "topic-start"}\n',
        capture_output=True,
        text=True,
        check=False,
    )
    assert piped.returncode == 0 and "seq 7" in piped.stdout
    topic(batch, "t1")
    assert gl(batch, "verify").returncode == 0


@pytest.mark.parametrize(
    "text",
    [
        '{"event": "ok"}\nnot json\n',
        '{"event": "ok"}\n{"fields": {}}\n',
        '{"event": "ok", "seq": 99}\n',
        '{"event": "ok", "fields": [1]}\n',
        '{"event": "a b"}\n',
        "\n",
    ],
)
def test_a_bad_line_of_trace_events_is_bad_input_and_nothing_is_written(
    batch: Repo, text: str
) -> None:
    (batch.path / "events.jsonl").write_text(text)
    before = fingerprint(batch.path)
    done = gl(batch, "trace", "emit", "--events", "events.jsonl")
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert fingerprint(batch.path) == before
