"""`next` in the states where it used to propose a command that is then refused.

Each test puts a real repository (hooks installed) in one state an interrupted
session, a skipped hook or a second branch leaves behind, takes the command
``next --json`` gives, runs it as a user pastes it into a shell, and asserts it is
not refused unless ``next`` said a person must decide (``decide``). Then it
follows ``next`` back into the loop: the loop's own step works again, and where
history was at stake, ``verify`` and a push to a bare remote pass.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from tests.helpers import Repo
from tests.test_next_walk_states import FILL, register_cache, sh, shop

ROOT = Path(__file__).resolve().parent.parent


def concluded_v1(repo: Repo) -> Repo:
    """The shop with V1 measured and concluded: next registers V2."""
    shop(repo)
    register_cache(repo, "V1")
    repo.ok("run", "V1", "--gate", "recent", "--seeds", "1,2,3")
    repo.ok("conclude", "V1", "--verdict", "confirmed", "--next", "go on")
    return repo


def fill(repo: Repo, nxt: dict[str, Any]) -> str:
    for rel in nxt["edit"]:
        path = repo.path / rel
        if "REFLECTION_" in rel:
            text = path.read_text()
            # Each section its own answer (a repeat does not count), the target kept.
            text = re.sub(
                r"(## ([^\n]+)\n)",
                lambda m: f"{m[1]}\nOn {m[2].lower()}: answered with care; keep as target.\n",
                text,
            )
            path.write_text(text)
        else:
            path.write_text("SIZE = 96\n")
    command = str(nxt["command"])
    for placeholder in nxt["placeholders"]:
        command = command.replace(placeholder, FILL[placeholder])
    return command


def follow(repo: Repo, nxt: dict[str, Any]) -> subprocess.CompletedProcess[str]:
    """Run what next proposes; refused only where next said a person decides."""
    command = fill(repo, nxt)
    done = sh(repo, command)
    if "decide" not in nxt:
        assert done.returncode == 0, (
            f"next proposed ({nxt['action']}) {command!r}, which exited {done.returncode}:\n"
            f"{done.stderr}{done.stdout}"
        )
    return done


def walk_to(repo: Repo, action: str, limit: int = 8) -> list[str]:
    """Follow next until it proposes ``action`` (run too); the actions taken on the way."""
    taken = []
    for _ in range(limit):
        nxt = repo.ok("next", "--json").json()
        assert "decide" not in nxt, nxt
        taken.append(nxt["action"])
        follow(repo, nxt)
        if nxt["action"] == action:
            return taken
    raise AssertionError(f"next never proposed {action}: {taken}")


def pushes(repo: Repo, tmp: Path) -> None:
    remote = tmp / "remote.git"
    if not remote.exists():
        subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
        repo.git("remote", "add", "origin", str(remote))
    assert repo.run("verify").code == 0, repo.run("verify").out
    push = sh(repo, "git push -q origin HEAD:refs/heads/main")
    assert push.returncode == 0, push.stderr


def problems(repo: Repo) -> list[str]:
    return [line for line in repo.ok("status").out.splitlines() if line.startswith("problem: ")]


def test_uncommitted_entries_come_first_and_are_autosaved(bare_repo: Repo, tmp_path: Path) -> None:
    repo = concluded_v1(bare_repo)
    entry = repo.path / "training_log/V1.md"
    entry.write_text(entry.read_text() + "\nA note written after the verdict.\n")
    listed = problems(repo)
    nxt = repo.ok("next", "--json").json()
    follow(repo, nxt)
    assert nxt["command"] == "git ledger doctor --fix", nxt
    assert any("uncommitted ledger files: training_log/V1.md" in p for p in listed)
    assert walk_to(repo, "register") == ["register"]
    pushes(repo, tmp_path)


def test_a_copied_work_tree_is_read_by_content_and_its_index_left_as_it_is(
    bare_repo: Repo, tmp_path: Path
) -> None:
    """A copy (a restored backup, a cached CI checkout) has an index whose stat data
    matches no file: each unchanged file still reads as unchanged, an edit of the same
    size still shows, and no read rewrites the index."""
    repo = concluded_v1(bare_repo)
    copy = Repo(tmp_path / "copy")
    shutil.copytree(repo.path, copy.path, symlinks=True)
    index = (copy.path / ".git/index").read_bytes()
    assert problems(copy) == []
    assert copy.ok("next", "--json").json()["action"] == "register"
    assert (copy.path / ".git/index").read_bytes() == index
    entry = copy.path / "training_log/V1.md"
    text = entry.read_text()
    entry.write_text(text.replace("go on", "go 0n"))
    assert len(entry.read_bytes()) == len(text.encode())
    assert any("uncommitted ledger files: training_log/V1.md" in p for p in problems(copy))
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    push = sh(copy, f"git push -q {remote} HEAD:refs/heads/main")
    assert push.returncode == 1 and "training_log/V1.md" in push.stderr, push.stderr
    assert (copy.path / ".git/index").read_bytes() == index


def test_an_uncommitted_configuration_is_a_persons_decision_before_the_loop_goes_on(
    bare_repo: Repo, tmp_path: Path
) -> None:
    """A change to ledger.toml left uncommitted (an edit, a revert git stopped): every
    transition is refused on it, so next names it first, as a person's call."""
    repo = concluded_v1(bare_repo)
    toml = repo.path / "ledger.toml"
    toml.write_text(toml.read_text().replace("sigma_k = ", "sigma_k = 1", 1))
    register = "register V2 --bet b --gate recent --files src/cache.py --falsifier f"
    assert repo.run(*register.split()).code == 1
    assert any("ledger.toml has uncommitted changes" in p for p in problems(repo))
    nxt = repo.ok("next", "--json").json()
    assert nxt["action"] == "restore-config" and "decide" in nxt, nxt
    assert nxt["command"] == "git restore --staged --worktree -- ledger.toml"
    follow(repo, nxt)  # the person decided: the edit goes
    assert walk_to(repo, "register") == ["register"]
    pushes(repo, tmp_path)


def test_an_entry_doctor_would_not_autosave_is_a_persons_decision(bare_repo: Repo) -> None:
    repo = concluded_v1(bare_repo)
    # A registration written by hand: only 'register' brings a version into being.
    forged = repo.path / "training_log/V9.md"
    forged.write_text((repo.path / "training_log/V1.md").read_text().replace("V1", "V9"))
    nxt = repo.ok("next", "--json").json()
    assert nxt["action"] == "restore-entry" and "decide" in nxt, nxt
    assert nxt["command"] == "rm -- training_log/V9.md"
    assert any("only its transition writes" in p for p in problems(repo))
    follow(repo, nxt)  # the person decided: the hand-written result goes
    assert walk_to(repo, "register") == ["register"]


def test_a_stale_lock_is_removed_before_the_loop_goes_on(bare_repo: Repo, tmp_path: Path) -> None:
    repo = concluded_v1(bare_repo)
    lock = repo.path / ".git/index.lock"
    lock.write_text("")
    old = time.time() - 3600
    os.utime(lock, (old, old))
    listed = problems(repo)
    nxt = repo.ok("next", "--json").json()
    follow(repo, nxt)
    assert nxt["command"] == "git ledger doctor --fix", nxt
    assert any("stale lock" in p for p in listed)
    assert not lock.exists()
    assert walk_to(repo, "register") == ["register"]
    pushes(repo, tmp_path)


def test_a_history_finding_on_a_concluded_version_comes_before_registering(
    bare_repo: Repo, tmp_path: Path
) -> None:
    repo = concluded_v1(bare_repo)
    entry = repo.path / "training_log/V1.md"
    entry.write_text(entry.read_text().replace("bet: b", "bet: a better b", 1))
    repo.commit_all("docs(ledger): a sharper bet", "--no-verify")
    listed = problems(repo)
    nxt = repo.ok("next", "--json").json()
    follow(repo, nxt)
    pushes(repo, tmp_path)  # the command next gave cleared what refuses every push
    assert nxt["action"] == "void" and nxt["command"].startswith("git ledger void V1 "), nxt
    assert "void V1's verdict (confirmed)" in nxt["decide"]  # it was a verdict
    assert any("frozen-registration" in p for p in listed)
    assert walk_to(repo, "register") == ["register"]
    pushes(repo, tmp_path)


def test_a_history_finding_no_verb_clears_is_a_persons_decision(bare_repo: Repo) -> None:
    repo = concluded_v1(bare_repo)
    toml = repo.path / "ledger.toml"
    toml.write_text(toml.read_text().replace("noise_floor = 1.0", "noise_floor = 0.1", 1))
    repo.write("src/cache.py", "SIZE = 65\n")
    repo.commit_all("chore: a narrower floor, with the code", "--no-verify")
    nxt = repo.ok("next", "--json").json()
    # No verb clears it: the commit, the tip nobody pulled, goes if the person says so.
    assert nxt["action"] == "drop-commit" and "decide" in nxt, nxt
    assert "config-frozen" in nxt["reason"]
    assert follow(repo, nxt).returncode == 0
    assert "noise_floor = 1.0" in toml.read_text()
    assert repo.run("verify").code == 0


def interrupted_conclude(repo: Repo, tmp_path: Path) -> Repo:
    """V1 run, and its conclude killed after its ref moved: an interrupted transition."""
    register_cache(repo, "V1")
    repo.ok("run", "V1", "--gate", "recent", "--seeds", "1,2,3")
    signal_file = tmp_path / "reached"
    writer = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.writer",
            "--pause-at",
            "after-ref",
            str(signal_file),
            "--cli",
            "-C",
            str(repo.path),
            "conclude",
            "V1",
            "--verdict",
            "confirmed",
            "--next",
            "go on",
        ],
        cwd=ROOT,
    )
    try:
        for _ in range(3000):
            if signal_file.exists():
                break
            assert writer.poll() is None, "the writer ended before its fault point"
            time.sleep(0.01)
    finally:
        writer.kill()
        writer.wait()
    return repo


def test_an_interrupted_transition_is_finished_first(bare_repo: Repo, tmp_path: Path) -> None:
    repo = interrupted_conclude(shop(bare_repo), tmp_path)
    assert repo.git("status", "--porcelain", "--", "training_log")  # shown undone
    listed = problems(repo)
    nxt = repo.ok("next", "--json").json()
    follow(repo, nxt)
    assert nxt["command"] == "git ledger doctor --fix", nxt
    assert any("a transition was interrupted" in p for p in listed)
    assert repo.git("status", "--porcelain", "--", "training_log") == ""
    assert walk_to(repo, "register") == ["register"]
    pushes(repo, tmp_path)


def test_dirty_results_are_measured_again_before_any_override(bare_repo: Repo) -> None:
    repo = concluded_v1(bare_repo)
    register_cache(repo, "V2")
    repo.write("src/cache.py", "SIZE = 96\n")
    repo.commit_all("feat(cache): V2 — a bigger cache")
    dirty = "echo 'SIZE = 70' > src/cache.py && git ledger run V2 --gate recent --seeds 1,2,3"
    assert sh(repo, dirty + " && git checkout -- src/cache.py").returncode == 0
    nxt = repo.ok("next", "--json").json()
    assert nxt["action"] == "re-measure" and "--override" not in nxt["command"], nxt
    assert "--seeds 1,2,3 --replace" in nxt["command"]
    assert "--override '<REASON>'" in nxt["alternatives"][0]["command"]
    follow(repo, nxt)
    assert repo.ok("status", "--json").json()["flagged"] == []
    assert walk_to(repo, "conclude") == ["conclude"]
    assert repo.ok("show", "V2", "--json").json()["override"] is None


def test_a_parked_phase_waits_for_a_person(bare_repo: Repo) -> None:
    repo = concluded_v1(bare_repo)
    repo.ok(
        "phase",
        "declare",
        "--reason",
        "out of ideas",
        "--exhausted",
        "sizes",
        "--resume-criterion",
        "a new evaluation set",
        "--force",  # issue 26: the conditions do not hold here
        "testing",
    )
    nxt = repo.ok("next", "--json").json()
    assert nxt["command"] == (
        "git ledger phase resume --criterion 'a new evaluation set' --evidence '<EVIDENCE>'"
    ), nxt
    assert "a new evaluation set" in nxt["decide"]
    follow(repo, nxt)
    assert walk_to(repo, "register") == ["register"]


def test_an_id_registered_on_an_unmerged_branch_is_not_proposed(bare_repo: Repo) -> None:
    repo = concluded_v1(bare_repo)
    repo.git("switch", "-q", "-c", "idea")
    register_cache(repo, "V2")
    repo.git("switch", "-q", "main")
    nxt = repo.ok("next", "--json").json()
    follow(repo, nxt)
    assert nxt["action"] == "register" and nxt["step"] == "V3", nxt
    assert "register V3 " in nxt["command"] and "V2 was registered" in nxt["reason"]


def test_a_metric_fixed_after_registration_is_not_judged_by_todays_config(
    bare_repo: Repo,
) -> None:
    """The template's `score` renamed once the evaluation's output is known. Issue 30:
    ingest reads the mapping frozen at V1's registration too, so V1's results carry
    `score` and V1 is judged (and concluded) by it; the rename applies from V2 on.
    (Before issue 30 ingest used today's mapping: V1's results carried `points`, which
    its frozen configuration lacks, and next proposed void.)"""
    repo = shop(bare_repo)
    register_cache(repo, "V1")
    toml = repo.path / "ledger.toml"
    text = toml.read_text().replace('metric = "score"', 'metric = "points"', 1)
    toml.write_text(text.replace('score = "$.score"', 'points = "$.score"', 1))
    repo.commit_all("chore(config): the metric is called points", "--trailer", "Ledger-Reason: r")
    repo.ok("run", "V1", "--gate", "recent", "--seeds", "1,2")
    stored = json.loads((repo.path / "training_log/results/V1/recent/seed-1.json").read_text())
    assert set(stored["metrics"]) == {"score"}, stored
    listed = problems(repo)
    assert not any("carry no" in p for p in listed), listed
    nxt = repo.ok("next", "--json").json()
    assert nxt["action"] == "conclude" and nxt["step"] == "V1", nxt
    assert walk_to(repo, "register") == ["conclude", "register"]  # V2, registered
    repo.ok("run", "V2", "--gate", "recent", "--seeds", "1")
    later = json.loads((repo.path / "training_log/results/V2/recent/seed-1.json").read_text())
    assert set(later["metrics"]) == {"points"}, later


def test_dry_run_next_and_conclude_read_the_configuration_frozen_at_registration(
    bare_repo: Repo,
) -> None:
    """`config set` after the results changes nothing any judgment of the version says."""
    repo = shop(bare_repo)
    repo.ok("config", "set", "gates.recent.noise_floor", "10", "--reason", "a wide floor")
    register_cache(repo, "V1")
    repo.ok("run", "V1", "--gate", "recent", "--seeds", "1")
    repo.ok("conclude", "V1", "--verdict", "confirmed", "--next", "go on")
    register_cache(repo, "V2")
    repo.write("src/cache.py", "SIZE = 96\n")  # +4 on the score: inside a floor of 10
    repo.commit_all("feat(cache): V2 — a bigger cache")
    repo.ok("run", "V2", "--gate", "recent", "--seeds", "1")
    repo.ok("config", "set", "gates.recent.noise_floor", "1", "--reason", "a narrow floor")
    dry = repo.ok("conclude", "V2", "--dry-run", "--json").json()
    assert "confirmed" not in dry["allowed"], dry
    assert "threshold ±20" in dry["refused"]["confirmed"]
    assert "σ=10" in repo.ok("conclude", "V2", "--dry-run").out
    status = repo.ok("status", "--json").json()
    nxt = repo.ok("next", "--json").json()
    assert status["next"] == nxt and "--verdict confirmed" not in nxt["command"], nxt
    refused = repo.run("conclude", "V2", "--verdict", "confirmed", "--next", "x")
    assert refused.code == 1 and dry["refused"]["confirmed"] in refused.err
    follow(repo, nxt)
    shown = repo.ok("show", "V2", "--json").json()
    assert shown["evidence"][0]["threshold"] == 20.0
