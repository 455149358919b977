"""Issue 27, batches loop: the document's signals are inputs. ``gate topic`` records the
rigor-floor flag and the z⊥C confound check; endpoints not separated with the rigor floor
set is an alarm that permits only a copy; a not-flat confound voids the topic's loss-2;
``weights revise`` names the topic and signal it answers, and ``next`` proposes the
target of the decision table (loss-1 > loss-2 middle collision > whole card), not the
first weight by name. Through ``git ledger`` with hooks installed."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from tests.helpers import Repo, fingerprint
from tests.test_loops_walkfix_versions import gl, next_json, ok

WORDS = {"VALUE": "0.75", "TEXT": "the middle rungs collide"}


@pytest.fixture
def batch(bare_repo: Repo, tmp_path: Path) -> Repo:
    bare_repo.write("src/app.py", "x = 0\n")
    bare_repo.commit_all("feat(src): the app")
    ok(bare_repo, "init", "--preset", "batches")
    ok(bare_repo, "hooks", "install")
    weights = tmp_path / "weights.json"
    weights.write_text(
        json.dumps(
            {
                "assembler_params": {"knob": 1},
                "axis_prose": {"A.L1": "plain"},
                "interp_params": {"endpoint_spread": 0.5},
            }
        )
    )
    ok(bare_repo, "weights", "init", str(weights), "--run-id", "walk")
    return bare_repo


def measure(repo: Repo, name: str, rate: str, mono: str, ends: str, *extra: str) -> None:
    ok(
        repo, "gate", "topic", "--record", "--topic", name, "--fidelity-rate", rate,
        "--mono", mono, "--endpoint", ends, *extra,
    )  # fmt: skip


def close(repo: Repo, *odd: tuple[str, str, str, str, tuple[str, ...]]) -> None:
    """Topics t1..t8 pass, except the ``odd`` ones (name, rate, mono, endpoint, extra)."""
    special = {o[0]: o for o in odd}
    for i in range(1, 9):
        name = f"t{i}"
        if name in special:
            _, rate, mono, ends, extra = special[name]
            measure(repo, name, rate, mono, ends, *extra)
        else:
            measure(repo, name, "0.9", "true", "true")
    ok(repo, "gate", "batch", "--record")


@pytest.mark.parametrize(
    "odd, target, key, topic, signal",
    [
        ((("t8", "0.9", "false", "true", ()),), "interp_params", "endpoint_spread", "t8",
         "loss-2-middle"),
        ((("t7", "0.5", "true", "true", ()), ("t8", "0.9", "false", "true", ())),
         "axis_prose", "A.L1", "t7", "loss-1"),
    ],
)  # fmt: skip
def test_next_proposes_the_decision_tables_target_and_revise_names_what_it_answers(
    batch: Repo,
    odd: tuple[tuple[str, str, str, str, tuple[str, ...]], ...],
    target: str,
    key: str,
    topic: str,
    signal: str,
) -> None:
    close(batch, *odd)
    nxt = next_json(batch)
    assert nxt["action"] == "revise"
    words = shlex.split(nxt["command"])
    assert words[words.index("--target") + 1] == target, nxt
    assert words[words.index("--key") + 1] == key
    assert words[words.index("--topic") + 1] == topic
    assert words[words.index("--signal") + 1] == signal
    ok(batch, *[WORDS.get(w, w) for w in words[2:]])
    revision = json.loads((batch.path / "training_log/revisions/batch-0.json").read_text())
    assert (revision["topic"], revision["signal"], revision["target"]) == (topic, signal, target)
    assert gl(batch, "verify").returncode == 0


def test_endpoints_not_separated_with_the_rigor_floor_set_permit_only_a_copy(
    batch: Repo,
) -> None:
    close(batch, ("t8", "0.9", "true", "false", ("--rigor-floor", "true")))
    topic = json.loads((batch.path / "training_log/topics/batch-0/t8.json").read_text())
    assert topic["inputs"]["rigor_floor_flag"] is True and topic["pass"] is False
    before = fingerprint(batch.path)
    done = gl(
        batch, "weights", "revise", "--target", "axis_prose", "--key", "A.L1",
        "--new", "vivid", "--reason", "endpoints",
    )  # fmt: skip
    assert done.returncode == 1 and "[rigor-floor-alarm]" in done.stderr
    assert fingerprint(batch.path) == before
    nxt = next_json(batch)
    assert nxt["action"] == "copy" and "[rigor-floor-alarm]" in nxt["reason"]
    ok(batch, "weights", "copy")


def test_a_not_flat_confound_voids_the_topics_loss_2(batch: Repo) -> None:
    close(batch, ("t8", "0.9", "false", "true", ("--confound", "not-flat")))
    done = gl(
        batch, "weights", "revise", "--target", "interp_params", "--key", "endpoint_spread",
        "--topic", "t8", "--signal", "loss-2-middle", "--new", "0.75", "--reason", "collide",
    )  # fmt: skip
    assert done.returncode == 1 and "[confound-void]" in done.stderr
    nxt = next_json(batch)
    assert "--topic t8" not in nxt["command"]


def test_the_documents_loop_end_to_end_by_next_alone(batch: Repo) -> None:
    """Every step is the command ``next`` proposes (placeholders filled), trace events
    emitted through the verb as the document says, until the loop converges."""
    fill = {**WORDS, "X": "0.9", "true|false": "true"}
    steps: list[str] = []
    for _ in range(60):
        nxt = next_json(batch)
        if nxt.get("done"):
            break
        steps.append(nxt["action"])
        words = [fill.get(w, w) for w in shlex.split(nxt["command"])]
        if nxt["action"] == "topic" and len(steps) == 8:  # batch 0's last topic collides
            words[words.index("--mono") + 1] = "false"
        if nxt["action"] == "topic":
            ok(batch, "trace", "emit", "topic_done", "--field", f"step={len(steps)}")
        ok(batch, *words[2:])
    assert steps.count("close-batch") == 3 and steps[-1] == "converge"
    assert steps.count("revise") == 2
    first = json.loads((batch.path / "training_log/revisions/batch-0.json").read_text())
    assert (first["target"], first["signal"]) == ("interp_params", "loss-2-middle")
    trace = (batch.path / "training_log/trace/walk.jsonl").read_text().splitlines()
    events = [json.loads(line)["event"] for line in trace]
    assert events[-2:] == ["converged", "run_end"] and events.count("topic_done") == 24
    assert [json.loads(line)["seq"] for line in trace] == list(range(1, len(trace) + 1))
    late = gl(batch, "trace", "emit", "late")
    assert late.returncode == 1 and "[trace-after-run-end]" in late.stderr
    assert gl(batch, "verify").returncode == 0
