"""Machine problems (ledger/core/machine.py) found by issue 25's walk, each held through
``git ledger`` in a real repository with the hooks installed: what ``status``/``next``
say is what doctor and the pre-push hook do (one rule each, never two copies).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from ledger.cli.doctor import INDEX_WAIT
from tests.helpers import Repo
from tests.test_next_refusals import (
    concluded_v1,
    fill,
    follow,
    interrupted_conclude,
    pushes,
    shop,
    walk_to,
)
from tests.test_next_walk_states import sh

FLICKER = """\
import os, sys, time
lock, end = sys.argv[1], time.monotonic() + float(sys.argv[2])
while time.monotonic() < end:
    open(lock, "w").close()
    os.unlink(lock)
"""


def _push(repo: Repo) -> subprocess.CompletedProcess[str]:
    return sh(repo, "git push -q origin HEAD:refs/heads/main")


def _machine(repo: Repo) -> list[dict[str, str]]:
    machine: list[dict[str, str]] = repo.ok("status", "--json").json()["machine"]
    return machine


def test_doctor_does_not_crash_when_a_lock_goes_while_it_looks(bare_repo: Repo) -> None:
    repo = concluded_v1(bare_repo)
    for lock in (repo.path / ".git/index.lock", repo.path / ".git/refs/heads/main.lock"):
        flicker = subprocess.Popen([sys.executable, "-c", FLICKER, str(lock), "4"])
        try:
            for _ in range(4):
                for args in (("doctor",), ("status", "--json"), ("next", "--json")):
                    done = repo.run(*args)
                    assert done.code in (0, 1), f"{args}: exit {done.code}\n{done.err}"
                    assert "Traceback" not in done.err
        finally:
            flicker.wait()


def test_a_lock_a_working_git_holds_is_waited_for_before_the_entry_is_saved(
    bare_repo: Repo, tmp_path: Path
) -> None:
    repo = concluded_v1(bare_repo)
    entry = repo.path / "training_log/V1.md"
    entry.write_text(entry.read_text() + "\nA note written after the verdict.\n")
    lock = repo.path / ".git/index.lock"
    lock.write_text("")
    # A git at work in the repository (waiting on its stdin), as a long 'git add' is.
    working = subprocess.Popen(
        ["git", "cat-file", "--batch"], cwd=repo.path, stdin=subprocess.PIPE, text=True
    )
    try:
        nxt = repo.ok("next", "--json").json()
        assert nxt["action"] == "wait-for-lock" and "decide" not in nxt, nxt
        assert nxt["command"] == "git ledger doctor --wait-for-locks"
        kinds = [p["kind"] for p in _machine(repo)]
        assert kinds[0] == "lock" and "uncommitted-entries" in kinds, kinds
        waiting = subprocess.Popen(
            ["bash", "-c", nxt["command"]], cwd=repo.path, env={**os.environ}, text=True
        )
        time.sleep(1.5)
        assert waiting.poll() is None, "doctor --wait-for-locks did not wait"
        working.communicate("")
        lock.unlink()
        assert waiting.wait(timeout=60) == 0
    finally:
        if working.poll() is None:
            working.kill()
    nxt = repo.ok("next", "--json").json()
    assert nxt["command"] == "git ledger doctor --fix", nxt
    follow(repo, nxt)
    assert walk_to(repo, "register") == ["register"]
    pushes(repo, tmp_path)


def test_a_recent_lock_nobody_holds_is_a_persons_decision(bare_repo: Repo, tmp_path: Path) -> None:
    repo = concluded_v1(bare_repo)
    lock = repo.path / ".git/refs/heads/main.lock"
    lock.write_text("")
    nxt = repo.ok("next", "--json").json()
    assert nxt["action"] == "remove-lock" and "decide" in nxt, nxt
    assert nxt["command"] == f"rm -f -- {lock}"
    assert repo.run("doctor").code == 0  # recent: doctor leaves it alone, as next says
    follow(repo, nxt)
    assert not lock.exists()
    assert walk_to(repo, "register") == ["register"]
    pushes(repo, tmp_path)


def test_a_note_in_a_new_directory_is_shown_as_the_push_refuses_it(
    bare_repo: Repo, tmp_path: Path
) -> None:
    repo = concluded_v1(bare_repo)
    pushes(repo, tmp_path)
    repo.write("training_log/notes/walk.md", "# A note an interrupted session left\n")
    push = _push(repo)
    assert push.returncode != 0 and "training_log/notes/walk.md" in push.stderr
    machine = _machine(repo)
    assert [p["kind"] for p in machine] == ["uncommitted-entries"], machine
    assert "training_log/notes/walk.md" in machine[0]["message"]
    register = ("register", "V2", "--bet", "b", "--gate", "recent", "--files", "src/cache.py")
    refused = repo.run(*register, "--falsifier", "f")
    assert refused.code == 1 and "training_log/notes/walk.md" in refused.err
    nxt = repo.ok("next", "--json").json()
    assert nxt["command"] == "git ledger doctor --fix", nxt
    follow(repo, nxt)
    assert _machine(repo) == []
    assert _push(repo).returncode == 0


def test_a_reflection_being_written_is_the_loops_draft_not_a_leftover(
    bare_repo: Repo, tmp_path: Path
) -> None:
    repo = concluded_v1(bare_repo)
    pushes(repo, tmp_path)
    draft = "training_log/REFLECTION_V1.md"
    repo.write(draft, "---\nid: REFLECTION_V1\nafter: V1\n---\ndraft\n")
    assert _machine(repo) == []
    doctor = repo.ok("doctor")
    assert f"{draft} is a draft of the loop" in doctor.out
    assert repo.ok("doctor", "--fix").code == 0 and (repo.path / draft).is_file()
    assert repo.git("status", "--porcelain", "--", draft).startswith("??")
    assert _push(repo).returncode == 0  # a push sends commits, not the work tree


def _reflected_v1(repo: Repo) -> str:
    draft = "training_log/REFLECTION_V1.md"
    repo.ok("reflect", "V1")
    fill(repo, {"edit": [draft], "command": "", "placeholders": []})
    return draft


def test_a_committed_reflection_deleted_from_the_index_is_restored_first(
    bare_repo: Repo, tmp_path: Path
) -> None:
    """A committed entry that matches a draft's glob, deleted from the index (``git rm
    --cached``; a ``git revert`` a hook stopped leaves the same) or from the work tree, is
    a leftover, not a draft at work: unseen, it rode along with the next code commit
    and the pre-commit hook refused that (the MCP walk of seed 25, step 125)."""
    repo = concluded_v1(bare_repo)
    draft = _reflected_v1(repo)
    repo.ok("reflect", "V1", "--commit")
    pushes(repo, tmp_path)
    for how in (f"git rm -q --cached -- {draft}", f"git rm -q -- {draft}", f"rm -- {draft}"):
        assert sh(repo, how).returncode == 0
        machine = _machine(repo)
        assert [p["kind"] for p in machine] == ["uncommitted-entries"], (how, machine)
        assert draft in machine[0]["message"]
        assert _push(repo).returncode != 0
        nxt = repo.ok("next", "--json").json()
        assert nxt["action"] == "restore-entry" and "decide" not in nxt, nxt
        follow(repo, nxt)
        assert _machine(repo) == [] and repo.git("status", "--porcelain") == ""
    assert walk_to(repo, "commit-code") == ["register", "commit-code"]
    assert _push(repo).returncode == 0


def test_a_staged_entry_whose_work_tree_copy_is_the_committed_one_is_a_persons_call(
    bare_repo: Repo, tmp_path: Path
) -> None:
    """An entry staged with a change, then its work-tree copy put back to what is
    committed (an editor's undo; what a transition killed between the work tree and the
    index leaves): doctor's autosave had nothing to record and failed ("no file
    changes") at every ``next``. Now doctor and ``next`` name it, and ``next`` proposes
    the restore, as a person's call (the staged copy is dropped)."""
    repo = concluded_v1(bare_repo)
    pushes(repo, tmp_path)
    entry = "training_log/V1.md"
    committed = (repo.path / entry).read_bytes()
    (repo.path / entry).write_bytes(committed + b"\nA line staged, then undone.\n")
    repo.git("add", "--", entry)
    (repo.path / entry).write_bytes(committed)
    machine = _machine(repo)
    assert [p["kind"] for p in machine] == ["uncommitted-entries"], machine
    assert "only its staged copy differs" in machine[0]["message"], machine
    fixed = repo.run("doctor", "--fix")
    assert fixed.code == 1 and "only its staged copy differs" in fixed.out, fixed.out
    assert "nothing to record" not in fixed.out + fixed.err
    assert repo.git("status", "--porcelain", "--", entry).startswith("MM"), "left as it was"
    nxt = repo.ok("next", "--json").json()
    assert nxt["action"] == "restore-entry" and entry in nxt["command"] and nxt["decide"], nxt
    follow(repo, nxt)
    assert _machine(repo) == [] and repo.git("status", "--porcelain") == ""
    assert _push(repo).returncode == 0


def test_a_staged_draft_does_not_ride_along_with_the_code_commit_next_proposes(
    bare_repo: Repo,
) -> None:
    """A reflection being written and staged (``git add``) while a version waits for its
    code: the commit ``next`` proposes carries the bet's files only, so the pre-commit
    hook (ledger files and code in one commit) lets it through, and the draft stays."""
    repo = concluded_v1(bare_repo)
    assert walk_to(repo, "register") == ["register"]
    draft = _reflected_v1(repo)
    repo.git("add", "--", draft)
    assert _machine(repo) == []
    nxt = repo.ok("next", "--json").json()
    assert nxt["action"] == "commit-code", nxt
    follow(repo, nxt)
    assert repo.git("show", "--name-only", "--format=", "HEAD").split() == ["src/cache.py"]
    assert repo.git("status", "--porcelain", "--", draft).startswith("A ")
    assert walk_to(repo, "measure") == ["measure"]


def test_a_tamper_committed_past_the_hooks_is_shown_first(bare_repo: Repo, tmp_path: Path) -> None:
    repo = concluded_v1(bare_repo)
    pushes(repo, tmp_path)
    entry = repo.path / "training_log/V1.md"
    entry.write_text(entry.read_text().replace("bet: b", "bet: b (tampered)", 1))
    repo.git("commit", "-q", "--no-verify", "-m", "docs: fix a typo", "--", "training_log/V1.md")
    assert repo.run("verify").code == 1
    status = repo.ok("status", "--json").json()
    assert [p["kind"] for p in status["machine"]] == ["history"], status
    assert status["next"]["action"] == "void" and "decide" in status["next"], status["next"]
    assert _push(repo).returncode != 0
    nxt = repo.ok("next", "--json").json()
    assert nxt == status["next"]
    assert follow(repo, nxt).returncode == 0  # the person decided: V1 is void
    assert repo.ok("status", "--json").json()["machine"] == []
    assert repo.run("verify").code == 0 and _push(repo).returncode == 0


def test_a_shallow_clone_says_fetch_the_history_first(bare_repo: Repo, tmp_path: Path) -> None:
    repo = concluded_v1(bare_repo)
    clone = tmp_path / "shallow"
    subprocess.run(
        ["git", "clone", "-q", "--depth", "1", f"file://{repo.path}", str(clone)], check=True
    )
    shallow = Repo(clone)
    nxt = shallow.ok("next", "--json").json()
    assert nxt["command"] == "git fetch --unshallow" and "decide" not in nxt, nxt
    assert [p["kind"] for p in shallow.ok("status", "--json").json()["machine"]] == ["history"]
    follow(shallow, nxt)
    # A plain clone has no witnesses either (issue 30): next's next step fetches them.
    nxt = shallow.ok("next", "--json").json()
    assert "refs/ledger/witness/*" in nxt["command"] and "decide" not in nxt, nxt
    follow(shallow, nxt)
    assert shallow.ok("verify").code == 0
    assert shallow.ok("status", "--json").json()["machine"] == []


def test_a_tampered_contract_nobody_pulled_is_dropped_by_a_persons_decision(
    bare_repo: Repo, tmp_path: Path
) -> None:
    repo = bare_repo
    repo.write("src/app.py", "x = 0\n")
    repo.commit_all("feat(src): the app")
    repo.ok("init", "--preset", "campaign")
    repo.ok("hooks", "install")
    repo.write(
        "training_log/contract.md", "# Contract\n\nWe measure speed. Only src/ may change.\n"
    )
    repo.ok("contract")
    pushes(repo, tmp_path)
    repo.write("training_log/contract.md", "# Contract\n\nWe measure speed. Anything may change.\n")
    repo.git(
        "commit", "-q", "--no-verify", "-m", "docs: fix a typo", "--", "training_log/contract.md"
    )
    assert repo.run("verify").code == 1 and _push(repo).returncode != 0
    nxt = repo.ok("next", "--json").json()
    assert nxt["action"] == "drop-commit" and "decide" in nxt, nxt
    assert [p["kind"] for p in _machine(repo)] == ["history"]
    follow(repo, nxt)  # the person decided: the edit goes
    assert "Only src/ may change" in (repo.path / "training_log/contract.md").read_text()
    assert repo.run("verify").code == 0 and _push(repo).returncode == 0
    assert _machine(repo) == []


def test_a_stale_lock_before_an_edit_doctor_never_autosaves_carries_that_decision(
    bare_repo: Repo,
) -> None:
    """The MCP walk's seed 25, step 31: a stale index.lock made a tamper's commit fail,
    leaving V1's frozen part edited in the work tree. ``doctor --fix`` removes the lock,
    then exits 1 on the edit: ``next`` says so (``decide``) rather than proposing a step
    that it will call refused; once the lock is gone, the edit's own step is proposed."""
    repo = concluded_v1(bare_repo)
    entry = repo.path / "training_log/V1.md"
    entry.write_text(entry.read_text().replace("bet: ", "bet: (tampered) ", 1))
    lock = repo.path / ".git/index.lock"
    lock.write_text("")
    old = time.time() - 3 * 3600
    os.utime(lock, (old, old))
    nxt = repo.ok("next", "--json").json()
    assert nxt["command"] == "git ledger doctor --fix", nxt
    assert "training_log/V1.md" in nxt["decide"], nxt
    assert repo.run("doctor", "--fix").code == 1 and not lock.exists()
    nxt = repo.ok("next", "--json").json()
    assert nxt["action"] == "restore-entry" and nxt.get("decide"), nxt
    assert sh(repo, nxt["command"]).returncode == 0
    # Without such an edit, the same lock's doctor --fix is a step that succeeds.
    lock.write_text("")
    os.utime(lock, (old, old))
    nxt = repo.ok("next", "--json").json()
    assert nxt["command"] == "git ledger doctor --fix" and "decide" not in nxt, nxt
    assert repo.run("doctor", "--fix").code == 0


def test_a_lock_left_in_a_linked_work_tree_comes_before_any_step(
    bare_repo: Repo, tmp_path: Path
) -> None:
    """The versions walk's seed 25, step 93: a run of a matrix cell killed in the cell's
    work tree left its index.lock there; next proposed recording the finished runs, and
    the record exited 4 on that lock. A linked work tree's lock is a machine problem too,
    cleared as the main one's is."""
    repo = concluded_v1(bare_repo)
    cell = tmp_path / "cell"
    repo.git("worktree", "add", "-q", "--detach", str(cell))
    name = cell.name
    lock = repo.path / ".git/worktrees" / name / "index.lock"
    lock.write_text("")
    nxt = repo.ok("next", "--json").json()
    assert nxt["action"] == "remove-lock" and "decide" in nxt, nxt
    old = time.time() - 3 * 3600
    os.utime(lock, (old, old))
    nxt = repo.ok("next", "--json").json()
    assert nxt["command"] == "git ledger doctor --fix" and "decide" not in nxt, nxt
    assert repo.run("doctor", "--fix").code == 0 and not lock.exists()
    assert walk_to(repo, "register") == ["register"]


def _aged(lock: Path, seconds: float) -> None:
    lock.write_text("")
    os.utime(lock, (time.time() - seconds, time.time() - seconds))


def test_doctor_finishes_an_interrupted_transition_once_a_brief_index_lock_goes(
    bare_repo: Repo, tmp_path: Path
) -> None:
    """A process at work holds the index for a moment while doctor --fix runs (what
    next proposed a moment before): doctor waits for it, as a transition does, and then
    finishes the transition."""
    repo = interrupted_conclude(shop(bare_repo), tmp_path)
    lock = repo.path / ".git/index.lock"
    lock.write_text("")
    holder = subprocess.Popen(["sh", "-c", f"sleep 1.5; rm -f '{lock}'"])
    try:
        fixed = repo.run("doctor", "--fix")
    finally:
        holder.wait()
    assert fixed.code == 0, fixed.out + fixed.err
    assert "completed the interrupted transition" in fixed.out
    assert not lock.exists()
    assert repo.git("status", "--porcelain", "--", "training_log") == ""


def test_doctor_removes_a_stale_index_lock_once_another_writer_is_done(
    bare_repo: Repo, tmp_path: Path
) -> None:
    """An interrupted transition behind a stale index lock (no git process), and another
    git-ledger writer holding the writer lock for a moment while doctor --fix runs (what
    next proposed a moment before): doctor waits for the writer, as a transition does,
    then removes the stale lock and finishes the transition (the MCP walk of seed 103
    refused here: the lock was left alone as 'in use' and the transition could not end)."""
    repo = interrupted_conclude(shop(bare_repo), tmp_path)
    index = repo.path / ".git/index.lock"
    _aged(index, 20 * 60)
    assert repo.ok("next", "--json").json()["command"] == "git ledger doctor --fix"
    writer = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import fcntl, os, sys, time\n"
            "fd = os.open(sys.argv[1], os.O_CREAT | os.O_RDWR)\n"
            "fcntl.flock(fd, fcntl.LOCK_EX); print('held', flush=True); time.sleep(1.5)\n",
            str(repo.path / ".git/ledger/write.lock"),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert writer.stdout is not None and writer.stdout.readline() == "held\n"
        fixed = repo.run("doctor", "--fix")
    finally:
        writer.wait()
    assert fixed.code == 0, fixed.out + fixed.err
    assert "removed stale lock" in fixed.out and "completed the interrupted transition" in fixed.out
    assert not index.exists()
    assert repo.git("status", "--porcelain", "--", "training_log") == ""


def test_doctor_outlasts_a_transition_waiting_on_the_stale_index_lock(
    bare_repo: Repo, tmp_path: Path
) -> None:
    """A stale index lock (no git process), a transition that waits on it while holding
    the writer lock (a detached run recording, an agent's verb), and doctor --fix started
    meanwhile: doctor waits longer than the transition does, so the transition gives up
    first (exit 4, its journal left), and doctor removes the lock and finishes it (the
    MCP walk of seed 25 refused here: doctor gave up on the writer a moment first)."""
    import fcntl

    repo = shop(bare_repo)
    index = repo.path / ".git/index.lock"
    _aged(index, 3 * 3600)
    writer = subprocess.Popen(
        [sys.executable, "-m", "ledger", "config", "set", "triggers.noop_tolerance", "501.0",
         "--reason", "a transition while the index is locked"],
        cwd=repo.path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    lock = repo.path / ".git/ledger/write.lock"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:  # until the transition holds the writer lock
        if lock.exists():
            fd = os.open(lock, os.O_RDWR)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                fcntl.flock(fd, fcntl.LOCK_UN)
            except OSError:
                break
            finally:
                os.close(fd)
        time.sleep(0.01)
    try:
        fixed = repo.run("doctor", "--fix")
    finally:
        _, err = writer.communicate(timeout=60)
    assert writer.returncode == 4, err
    assert fixed.code == 0, fixed.out + fixed.err
    assert "removed stale lock" in fixed.out and "completed the interrupted transition" in fixed.out
    assert not index.exists()
    assert repo.git("status", "--porcelain") == ""
    assert "noop_tolerance = 501.0" in repo.git("show", "HEAD:ledger.toml")


def test_a_recent_index_lock_that_stops_doctor_comes_before_a_stale_lock(
    bare_repo: Repo, tmp_path: Path
) -> None:
    """An interrupted transition, a recent index lock no process holds (a killed git's)
    and a stale branch lock: doctor --fix would remove the stale lock, then stop at the
    index lock (exit 1). next names the index lock first, as a person's call; once it is
    gone, doctor --fix does the rest."""
    repo = interrupted_conclude(shop(bare_repo), tmp_path)
    index = repo.path / ".git/index.lock"
    branch = repo.path / ".git/refs/heads/main.lock"
    _aged(index, 5)
    _aged(branch, 3 * 3600)
    nxt = repo.ok("next", "--json").json()
    assert nxt["action"] == "remove-lock" and "decide" in nxt, nxt
    assert str(index) in nxt["command"], nxt
    index.unlink()  # the person's call: the git that wrote it has ended
    nxt = repo.ok("next", "--json").json()
    assert nxt["command"] == "git ledger doctor --fix", nxt
    fixed = repo.run("doctor", "--fix")
    assert fixed.code == 0, fixed.out + fixed.err
    assert "completed the interrupted transition" in fixed.out and not branch.exists()


def test_a_linked_work_trees_index_lock_does_not_hold_up_the_transition(
    bare_repo: Repo, tmp_path: Path
) -> None:
    """doctor --fix brings this work tree's index up to the interrupted transition's
    commit: a recent lock in another work tree's index is left alone, and not waited on."""
    repo = interrupted_conclude(shop(bare_repo), tmp_path)
    repo.git("worktree", "add", "-q", "--detach", str(tmp_path / "cell"), "HEAD~1")
    linked = next((repo.path / ".git/worktrees").iterdir()) / "index.lock"
    _aged(linked, 5)
    started = time.monotonic()
    fixed = repo.run("doctor", "--fix")
    assert "completed the interrupted transition" in fixed.out, fixed.out + fixed.err
    assert time.monotonic() - started < INDEX_WAIT, "it waited on another work tree's index"
    assert linked.exists()


def test_an_interrupted_transition_waits_for_an_index_lock_doctor_leaves(
    bare_repo: Repo, tmp_path: Path
) -> None:
    """doctor --fix does not half-finish a transition into a held index: it says what
    it waits for (exit 1, one line), changes nothing, and finishes once the lock goes."""
    repo = interrupted_conclude(shop(bare_repo), tmp_path)
    lock = repo.path / ".git/index.lock"
    _aged(lock, 5)  # recent: its writer may still be alive, doctor leaves it
    head = repo.git("rev-parse", "HEAD")
    journal = sorted((repo.path / ".git/ledger").iterdir())
    nxt = repo.ok("next", "--json").json()  # the lock first, and a person's call: as doctor
    assert nxt["action"] == "remove-lock" and "decide" in nxt, nxt
    done = repo.run("doctor", "--fix")
    assert done.code == 1, done.out + done.err
    assert "Traceback" not in done.err
    said = [line for line in done.out.splitlines() if "a transition was interrupted" in line]
    assert len(said) == 1 and str(lock) in said[0] and "wait" in said[0], done.out
    # Behind an unfinished transition the work tree is not a leftover: nothing autosaved.
    assert "autosave" not in done.out, done.out
    assert repo.git("rev-parse", "HEAD") == head and lock.exists()
    assert sorted((repo.path / ".git/ledger").iterdir()) == journal
    _aged(lock, 3 * 3600)  # now old and nobody's
    fixed = repo.run("doctor", "--fix")
    assert fixed.code == 0, fixed.out + fixed.err
    assert "completed the interrupted transition" in fixed.out
    assert repo.git("status", "--porcelain", "--", "training_log") == ""
