"""A verdict stands on every seed that was started, measured on committed code."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

from tests.helpers import Repo
from tests.test_next_walk_states import register_cache, shop


def _hold_eval(repo: Repo) -> None:
    """Seeds other than 1 wait while the file 'hold' exists (no timing in the test)."""
    text = (repo.path / "eval.py").read_text()
    repo.write(
        "eval.py",
        text.replace(
            "if size < 0:",
            "import os, time\nwhile opt.seed != 1 and os.path.exists('hold'):\n"
            "    time.sleep(0.05)\nif size < 0:",
        ),
    )
    repo.write(".gitignore", "hold\n")
    repo.commit_all("chore: seeds can be held", "--no-verify")


def _records(repo: Repo) -> list[dict[str, object]]:
    runs = repo.path / ".git/ledger/runs"
    return [json.loads(p.read_text()) for p in runs.glob("*.json")] if runs.is_dir() else []


def _until(predicate: object, what: str) -> None:
    for _ in range(2000):
        if predicate():  # type: ignore[operator]
            return
        time.sleep(0.05)
    raise AssertionError(f"never happened: {what}")


def test_conclude_refuses_while_a_run_is_running_and_wait_waits(bare_repo: Repo) -> None:
    repo = shop(bare_repo)
    _hold_eval(repo)
    register_cache(repo, "V1")
    (repo.path / "hold").write_text("")
    repo.ok("run", "V1", "--gate", "recent", "--seeds", "1,2", "--detach")
    refused = repo.run("conclude", "V1", "--verdict", "confirmed", "--next", "x")
    assert refused.code == 1 and "[run-in-progress]" in refused.err, refused.err
    assert "--wait" in refused.err
    kinds = repo.git("log", "--format=%(trailers:key=Ledger-Transition,valueonly)").split()
    assert "conclude" not in kinds
    assert repo.ok("next", "--json").json()["action"] == "wait"
    (repo.path / "hold").unlink()
    repo.ok("conclude", "V1", "--verdict", "confirmed", "--next", "x", "--wait")
    shown = repo.ok("show", "V1", "--json").json()
    assert len([r for r in shown["results"] if r["status"] == "ok"]) == 2


def test_seeds_of_a_killed_run_are_not_silently_dropped(bare_repo: Repo) -> None:
    repo = shop(bare_repo)
    _hold_eval(repo)
    register_cache(repo, "V1")
    (repo.path / "hold").write_text("")
    repo.ok("run", "V1", "--gate", "recent", "--seeds", "1,2,3", "--detach")
    # A run commits its finished seeds in one transition when it ends; seed 1 finishes
    # (marked in its run record), 2 and 3 are held, and then the run is killed.
    _until(lambda: any(r.get("finished") for r in _records(repo)), "seed 1 finished")
    batch = next(r for r in _records(repo) if r.get("batch"))
    os.killpg(int(str(batch["pid"])), signal.SIGKILL)
    _until(
        lambda: all(
            not _alive(int(str(r["pid"]))) for r in _records(repo) if not r.get("finished")
        ),
        "run killed",
    )
    (repo.path / "hold").unlink()
    refused = repo.run("conclude", "V1", "--verdict", "confirmed", "--next", "x")
    assert refused.code == 1 and "[results-missing]" in refused.err, refused.err
    assert "V1" in refused.err
    # The finished seed is not lost: it is recorded from its run record, and next says so
    # before anything else (a machine problem, as doctor lists it).
    nxt = repo.ok("next", "--json").json()
    assert nxt["command"] == "git ledger run V1 --record-finished", nxt
    assert "finished run not on record" in repo.ok("status").out
    repo.ok("run", "V1", "--gate", "recent", "--record-finished")
    assert "seed-1" in repo.git("ls-tree", "-r", "--name-only", "HEAD")
    refused = repo.run("conclude", "V1", "--verdict", "confirmed", "--next", "x")
    assert refused.code == 1 and "[results-missing] seeds 2,3 of V1" in refused.err, refused.err
    hint = refused.err.split("run them: ")[1].split(" (or")[0]
    assert hint == "git ledger run V1 --gate recent --seeds 2,3"
    repo.ok(*hint.split()[2:])
    repo.ok("conclude", "V1", "--verdict", "confirmed", "--next", "x")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1][:1] != "Z"
    except OSError:
        return False


def test_results_of_a_dirty_tree_are_flagged_and_refused_without_override(bare_repo: Repo) -> None:
    repo = shop(bare_repo)
    register_cache(repo, "V1")
    repo.write("src/cache.py", "SIZE = 80\n")  # measured, never committed
    repo.ok("run", "V1", "--gate", "recent", "--seeds", "1,2")
    shown = repo.ok("show", "V1")
    assert "FLAGGED: measured on a dirty work tree" in shown.out
    status = repo.ok("status", "--json").json()
    assert status["flagged"] == [{"id": "V1", "dirty": 2, "before_code": 0}]
    assert "flagged: V1 has 2 result(s) measured on a dirty work tree" in repo.ok("status").out
    assert "(2 on a dirty tree)" in repo.ok("report").out
    assert "2 on a dirty tree" in repo.ok("report", "--format", "html", "--out", "-").out
    # next never offers the verdict conclude would refuse
    assert "--override '<REASON>'" in status["next"]["command"]
    refused = repo.run("conclude", "V1", "--verdict", "confirmed", "--next", "x")
    assert refused.code == 1 and "[unreproducible-results]" in refused.err
    repo.ok(
        "conclude",
        "V1",
        "--verdict",
        "confirmed",
        "--next",
        "x",
        "--override",
        "measured the idea before committing it",
    )
    assert repo.ok("show", "V1", "--json").json()["override"]


def test_results_before_the_code_commit_are_refused(bare_repo: Repo) -> None:
    repo = shop(bare_repo)
    register_cache(repo, "V1")
    repo.ok("run", "V1", "--gate", "recent", "--seeds", "1,2")
    repo.ok("conclude", "V1", "--verdict", "confirmed", "--next", "x")  # a baseline needs no code
    register_cache(repo, "V2")
    repo.ok("run", "V2", "--gate", "recent", "--seeds", "1,2")
    assert "measured before any code commit" in repo.ok("show", "V2").out
    status = repo.ok("status", "--json").json()
    assert status["flagged"] == [{"id": "V2", "dirty": 0, "before_code": 2}]
    assert "V2 has 2 result(s) measured before any code commit" in repo.ok("status").out
    report = repo.ok("report").out
    assert "(2 before code)" in report and "V1" in report
    assert "(2 before code)" not in report.split("| V2 ")[0]  # V1's row is not flagged
    assert "2 before code" in repo.ok("report", "--format", "html", "--out", "-").out
    assert "before any code commit" in status["next"]["reason"]
    assert "--override '<REASON>'" in status["next"]["command"]
    refused = repo.run("conclude", "V2", "--verdict", "refuted", "--next", "x")
    assert refused.code == 1 and "before any code commit" in refused.err
    repo.write("src/cache.py", "SIZE = 65\n")
    repo.commit_all("feat(cache): V2 — a size of 65")
    repo.ok("run", "V2", "--gate", "recent", "--seeds", "1,2", "--replace", "the code is in")
    assert "FLAGGED" not in repo.ok("show", "V2").out
    assert repo.ok("status", "--json").json()["flagged"] == []
    assert "before code" not in repo.ok("report").out
    nxt = repo.ok("next", "--json").json()
    assert nxt["action"] == "conclude"
    repo.ok(
        "conclude",
        "V2",
        "--verdict",
        nxt["command"].split("--verdict ")[1].split()[0],
        "--next",
        "x",
    )
