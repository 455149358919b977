"""The fault suite: many writers, crashes at every injection point, a full disk, bad input.

Each suite prints its figures (attempted/recorded/lost, trials/recovered,
inputs tried/cleanly refused). LEDGER_SOAK=1 runs longer variants.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers import Figure, Repo, fingerprint, git, ledger, measure, register

ROOT = Path(__file__).resolve().parent.parent
CORPUS = Path(__file__).resolve().parent / "corpus"
SOAK = os.environ.get("LEDGER_SOAK") == "1"
POINTS = ("after-objects", "after-ref", "during-index")


def test_eight_worktrees_writing_in_parallel_lose_nothing(
    repo: Repo, tmp_path: Path, figure: Figure
) -> None:
    workers, each = 8, (1000 if SOAK else 200)
    trees = []
    for i in range(workers):
        path = tmp_path / f"wt{i}"
        repo.git("worktree", "add", "-q", "-b", f"w{i}", str(path))
        trees.append(path)
    started = time.perf_counter()
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "tests.writer", str(t), str(each), f"w{i}"], cwd=ROOT
        )
        for i, t in enumerate(trees)
    ]
    assert [p.wait(timeout=900) for p in procs] == [0] * workers
    seconds = time.perf_counter() - started
    recorded = 0
    for i in range(workers):
        steps = repo.git("log", f"w{i}", "--format=%(trailers:key=Ledger-Step,valueonly)").split()
        mine = [s for s in steps if s.startswith(f"w{i}-")]
        assert len(mine) == each and len(set(mine)) == each
        recorded += len(mine)
    locks = [p for p in (repo.path / ".git").rglob("*.lock") if p.name != "write.lock"]
    figure(
        f"concurrency: transitions attempted {workers * each}, recorded {recorded}, "
        f"lost {workers * each - recorded}, {recorded / seconds:.0f}/s"
    )
    assert recorded == workers * each and locks == []
    repo.git("fsck", "--strict")
    for t in trees:
        assert git(t, "status", "--porcelain") == ""


def _wait_for(path: Path, proc: subprocess.Popen[bytes], timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert proc.poll() is None, "the writer exited before reaching the fault point"
        assert time.monotonic() < deadline, "the fault point was never reached"
        time.sleep(0.01)


def test_sigkill_at_every_injection_point_leaves_old_or_new_and_doctor_recovers(
    repo: Repo, tmp_path: Path, figure: Figure
) -> None:
    from ledger.cli import doctor

    trials = 300 if SOAK else 100
    recovered = 0
    outcomes = {"old": 0, "new": 0}
    for trial in range(trials):
        point = POINTS[trial % len(POINTS)]
        before = repo.head()
        signal_file = tmp_path / f"reached-{trial}"
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tests.writer",
                "--pause-at",
                point,
                str(signal_file),
                str(repo.path),
                "1",
                f"t{trial}",
            ],
            cwd=ROOT,
        )
        _wait_for(signal_file, proc)
        proc.kill()
        proc.wait()
        after = repo.head()
        if after == before:
            outcomes["old"] += 1
        else:
            assert repo.git("rev-parse", f"{after}^").strip() == before, "never half a transition"
            assert repo.git("log", "-1", "--format=%s", after).strip() == f"note t{trial} 0"
            outcomes["new"] += 1
        assert doctor.run(repo.path, fix=True, stop_runs=False, as_json=True) in (0, 1)
        clean = repo.git("status", "--porcelain") == ""
        journal = not (repo.path / ".git/ledger-pending.json").exists()
        on_disk = (repo.path / f"training_log/notes/t{trial}-0000.json").exists()
        if clean and journal and on_disk == (after != before):
            recovered += 1
    figure(
        f"crash safety: trials {trials}, recovered {recovered}, old {outcomes['old']}, new {outcomes['new']}"
    )
    assert recovered == trials
    repo.git("fsck", "--strict")


def _killed_at(repo: Repo, point: str, tag: str, tmp_path: Path) -> None:
    signal_file = tmp_path / f"reached-{tag}"
    pause = ["--pause-at", point, str(signal_file)]
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.writer", *pause, str(repo.path), "1", tag], cwd=ROOT
    )
    _wait_for(signal_file, proc)
    proc.kill()
    proc.wait()


@pytest.mark.parametrize("point", ["after-ref", "during-index"])
def test_a_commit_made_on_top_of_an_interrupted_transition_does_not_drop_it(
    repo: Repo, tmp_path: Path, point: str
) -> None:
    """A transition killed after its commit, then a plain ``git commit`` of another file
    (what hands do before asking doctor): the commit is on the branch, under the new
    one, so doctor --fix finishes it, never "dropped ... never reached the branch" with
    the index left behind (found by the campaign walk: then an autosave of files that
    only the index had behind, refused as "no file changes", forever)."""
    _killed_at(repo, point, "k", tmp_path)
    note = "training_log/notes/k-0000.json"
    assert repo.git("ls-tree", "--name-only", "HEAD", note).strip() == note
    assert not (repo.path / note).exists() or repo.git("status", "--porcelain", note)
    repo.write("NOTES.txt", "a typo fixed\n")
    repo.git("add", "NOTES.txt")
    repo.git("commit", "-q", "-m", "docs: fix a typo", "--", "NOTES.txt")
    tip = repo.head()
    assert "interrupted" in repo.run("status").out
    done = repo.run("doctor", "--fix")
    assert done.code == 0, done.out + done.err
    assert "completed the interrupted transition" in done.out
    assert repo.head() == tip
    assert repo.git("status", "--porcelain") == ""
    assert (repo.path / note).read_text() == repo.git("show", f"HEAD:{note}")
    assert not (repo.path / ".git/ledger-pending.json").exists()
    assert repo.run("doctor").code == 0


def test_a_later_commit_that_wrote_the_interrupted_files_stays_as_it_left_them(
    repo: Repo, tmp_path: Path
) -> None:
    """The later commit took what the index still had (``git commit -a`` without the
    transition's file): doctor brings the index and work tree up to the tip, so the
    user's commit stands as it was made, nothing staged against it (verify names what
    it did to the ledger)."""
    _killed_at(repo, "after-ref", "k", tmp_path)
    note = "training_log/notes/k-0000.json"
    assert repo.git("ls-files", note) == "", "the index is still at the commit before"
    repo.git("commit", "-q", "--no-verify", "-m", "drop it")
    before = fingerprint(repo.path)
    done = repo.run("doctor", "--fix")
    assert "completed the interrupted transition" in done.out, done.out + done.err
    assert not (repo.path / ".git/ledger-pending.json").exists()
    assert repo.git("status", "--porcelain") == ""
    after = fingerprint(repo.path)
    assert {k: v for k, v in after.items() if "pending" not in k} == {
        k: v for k, v in before.items() if "pending" not in k
    }


def test_a_later_commit_of_one_interrupted_file_leaves_the_rest_finished(
    repo: Repo, tmp_path: Path
) -> None:
    """``conclude`` killed after its commit, then a commit of code and of one of the
    files it wrote: the other files are brought up to the commit, the one the later
    commit wrote stays as that commit has it, and nothing is left staged (found by a
    helper: doctor left every path behind, autosaved a stale view and left a staged
    deletion)."""
    assert register(repo, "V1").code == 0
    repo.write("src/model.py", "score = 1\n")
    repo.git("add", "src/model.py")
    repo.git("commit", "-q", "-m", "feat(model): V1", "-m", "Ledger-Step: V1")
    measure(repo, "V1", "recent", 5.0)
    signal_file = tmp_path / "reached-conclude"
    pause = ["--pause-at", "after-ref", str(signal_file)]
    conclude = ["--cli", "-C", str(repo.path), "conclude", "V1", "--verdict", "inconclusive"]
    conclude += ["--next", "go on"]
    proc = subprocess.Popen([sys.executable, "-m", "tests.writer", *pause, *conclude], cwd=ROOT)
    _wait_for(signal_file, proc)
    proc.kill()
    proc.wait()
    journal = json.loads((repo.path / ".git/ledger-pending.json").read_text())
    written = [str(p) for p in journal["paths"]]
    assert len(written) >= 2, written
    mine = written[0]
    repo.write("src/other.py", "x = 1\n")
    repo.write(mine, "edited by hand\n")
    repo.git("add", "src/other.py", mine)
    repo.git("commit", "-q", "--no-verify", "-m", "wip", "--", "src/other.py", mine)
    tip = repo.head()
    done = repo.run("doctor", "--fix")
    assert "completed the interrupted transition" in done.out, done.out + done.err
    assert repo.head() == tip and repo.git("status", "--porcelain") == ""
    for path in written:
        assert (repo.path / path).read_bytes() == repo.git("show", f"HEAD:{path}").encode()
    assert (repo.path / mine).read_text() == "edited by hand\n"


def test_an_interrupted_transition_is_left_to_its_branch_when_another_is_checked_out(
    repo: Repo, tmp_path: Path
) -> None:
    """Killed after its commit, then another branch checked out before doctor: that
    branch's index and work tree are its own (found by a helper: doctor applied the
    transition to them and autosaved on the wrong branch); the branch's own checkout
    brings the commit whole."""
    repo.git("branch", "old")
    _killed_at(repo, "after-ref", "k", tmp_path)
    note = "training_log/notes/k-0000.json"
    repo.git("switch", "-q", "old")
    head = repo.head()
    done = repo.run("doctor", "--fix")
    assert "left the interrupted transition" in done.out and "main" in done.out, done.out
    assert repo.head() == head and repo.git("status", "--porcelain") == ""
    assert not (repo.path / note).exists()
    assert not (repo.path / ".git/ledger-pending.json").exists()
    repo.git("switch", "-q", "main")
    assert repo.git("status", "--porcelain") == "" and (repo.path / note).is_file()


def test_disk_full_while_writing_objects_is_a_clear_error(
    repo: Repo, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ledger.core.errors import EnvironmentFailure
    from ledger.core.store import Snapshot, Store, Transition

    store = Store(repo.path)

    def full(*_args: object, **_kwargs: object) -> str:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(Store, "_build_tree", full)
    before = fingerprint(repo.path)
    with pytest.raises(EnvironmentFailure, match="No space left on device") as raised:
        store.transact(
            lambda snap: Transition("note", "n", "note", {"training_log/x.json": b"{}\n"})
        )
    assert raised.value.exit_code == 5 and "free some space" in str(raised.value.hint)
    assert fingerprint(repo.path) == before
    del Snapshot


def test_failed_work_tree_write_is_a_clear_error_and_doctor_finishes_it(repo: Repo) -> None:
    """git writes the work tree; when it cannot (here a required smudge filter
    fails, as a full disk would), the commit stands, the error says so, and
    doctor --fix finishes the index and work tree once the cause is gone."""
    from ledger.cli import doctor
    from ledger.core import store as store_module
    from ledger.core.errors import WorktreeBehind

    target = repo.path / "training_log/README.md"
    old = target.read_bytes()
    repo.write(".git/info/attributes", "training_log/README.md filter=broken\n")
    repo.git("config", "filter.broken.smudge", "false")
    repo.git("config", "filter.broken.clean", "cat")
    repo.git("config", "filter.broken.required", "true")
    store = store_module.Store(repo.path)
    with pytest.raises(WorktreeBehind, match="could not update the index and work tree"):
        store.transact(
            lambda snap: store_module.Transition(
                "note", "n", "note", {"training_log/README.md": old + b"\nmore\n"}
            )
        )
    assert repo.git("show", "HEAD:training_log/README.md").encode() == old + b"\nmore\n"
    assert not target.exists() or target.read_bytes() == old, "never half a file"
    assert not [p for p in target.parent.iterdir() if p.name.endswith(".tmp")]
    assert doctor.run(repo.path, fix=False, stop_runs=False, as_json=True) == 1
    repo.git("config", "filter.broken.smudge", "cat")
    assert doctor.run(repo.path, fix=True, stop_runs=False, as_json=True) in (0, 1)
    assert target.read_bytes() == old + b"\nmore\n"
    assert repo.git("status", "--porcelain") == ""
    assert repo.git("diff-index", "HEAD") == "", "real stat data: clean without a refresh"


def _refused(cwd: Path, repo: Repo, *args: str) -> None:
    before = fingerprint(repo.path)
    result = ledger(cwd, *args)
    assert result.code == 2, (args, result.code, result.err, result.out)
    lines = result.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("git-ledger: error: "), result.err
    assert "Traceback" not in result.err
    after = fingerprint(repo.path)
    assert after == before, {
        k: (before.get(k), after.get(k))
        for k in set(before) | set(after)
        if before.get(k) != after.get(k)
    }


def test_bad_input_corpus_is_refused_cleanly(repo: Repo, tmp_path: Path, figure: Figure) -> None:
    toml = repo.path / "ledger.toml"
    toml.write_text(
        toml.read_text().replace('score = "$.score"', 'score = "$.score"\nloss = "$.loss"')
    )
    repo.commit_all("chore: map loss too", "--no-verify")
    register(repo, "V1")
    tried = 0
    for path in sorted((CORPUS / "results").iterdir()):
        _refused(repo.path, repo, "record", "V1", "--gate", "recent", "--seed", "1", str(path))
        tried += 1
    huge = tmp_path / "huge.json"
    huge.write_text('{"score": 1.0, "pad": "' + "x" * (2 << 20) + '"}')
    _refused(repo.path, repo, "record", "V1", "--gate", "recent", "--seed", "1", str(huge))
    tried += 1
    good = tmp_path / "good.json"
    good.write_text('{"score": 1.0, "loss": 0.1}')
    for path in sorted((CORPUS / "ids").iterdir()):
        vid = path.read_text(encoding="utf-8")
        _refused(
            repo.path,
            repo,
            "register",
            vid,
            "--bet",
            "b",
            "--gate",
            "recent",
            "--files",
            "x.py",
            "--falsifier",
            "f",
        )
        tried += 1
    for bad in ("--seed=../x", "--seed=1;rm"):
        _refused(repo.path, repo, "record", "V1", "--gate", "recent", bad, str(good))
        tried += 1
    # An entry replaced by a directory, and by a symlink.
    (repo.path / "training_log/results/V1/recent/seed-1.json").mkdir(parents=True)
    _refused(repo.path, repo, "record", "V1", "--gate", "recent", "--seed", "1", str(good))
    shutil.rmtree(repo.path / "training_log/results")
    (repo.path / "training_log/V2.md").symlink_to("/etc/passwd")
    repo.git("commit", "-q", "--allow-empty", "-m", "chore: nothing")
    repo.ok("record", "V1", "--gate", "recent", "--seed", "2", str(good))  # no results: refused
    repo.ok("conclude", "V1", "--verdict", "inconclusive", "--next", "x")
    _refused(
        repo.path,
        repo,
        "register",
        "V2",
        "--bet",
        "b",
        "--gate",
        "recent",
        "--files",
        "x.py",
        "--falsifier",
        "f",
    )
    (repo.path / "training_log/V2.md").unlink()
    tried += 2
    for path in sorted((CORPUS / "entries").iterdir()):
        shutil.copy(path, repo.path / "training_log/REFLECTION_V1.md")
        _refused(repo.path, repo, "reflect", "V1", "--commit")
        tried += 1
    (repo.path / "training_log/REFLECTION_V1.md").unlink()
    original = (repo.path / "ledger.toml").read_bytes()
    for path in sorted((CORPUS / "configs").iterdir()):
        shutil.copy(path, repo.path / "ledger.toml")
        _refused(repo.path, repo, "status")
        tried += 1
    (repo.path / "ledger.toml").write_bytes(original)
    outside = tmp_path / "not-a-repo"
    outside.mkdir()
    _refused(outside, repo, "status")
    tried += 1
    figure(f"bad input: inputs tried {tried}, cleanly refused {tried}")
    assert tried >= 40


def test_commands_run_as_argv_never_through_a_shell(repo: Repo, tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    toml = repo.path / "ledger.toml"
    toml.write_text(
        toml.read_text() + f'\n[run]\ncommand = ["echo", "{{seed}}; touch {marker}", "{{out}}"]\n'
    )
    repo.commit_all("chore: command", "--no-verify")
    register(repo, "V1")
    repo.run("run", "V1", "--gate", "recent", "--seeds", "1")
    assert not marker.exists()
