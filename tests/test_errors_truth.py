"""Errors that tell the truth: each failure says what happened, with its own exit status.

4: the branch moved but the index and work tree could not follow (doctor --fix
completes it); 5: the environment refused a write, with the errno's hint;
never 2 (bad input, nothing written) for either, never 3 for what a user causes.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import Repo, Run, fingerprint, ledger, register

ROOT = Path(__file__).resolve().parent.parent
REGISTER = (
    "register", "V1", "--bet", "b", "--gate", "recent", "--files", "src/x.py", "--falsifier", "f",
)  # fmt: skip


def _cli_with_fault(repo: Repo, point: str, name: str, *args: str) -> Run:
    """The real command line, in a process whose store fails at ``point`` with errno ``name``."""
    proc = subprocess.run(
        [sys.executable, "-m", "tests.writer", "--fail-at", point, name, "--cli",
         "-C", str(repo.path), *args],
        cwd=ROOT, capture_output=True, text=True, check=False,
    )  # fmt: skip
    return Run(proc.returncode, proc.stdout, proc.stderr)


def _behind(repo: Repo) -> bool:
    return repo.git("status", "--porcelain") != ""


def test_doctor_completes_a_transition_whose_new_file_was_written_whole_before_the_kill(
    repo: Repo,
) -> None:
    """A kill after the ref moved can leave the transition's new entry in the work tree
    whole but not in the index (an untracked file git's own update would refuse to
    overwrite): its content is the commit's, so doctor --fix completes the transition
    (found by issue 25's batches walk)."""
    result = _cli_with_fault(repo, "during-index", "EIO", *REGISTER)
    assert result.code == 4, result.err
    entry = repo.path / "training_log/V1.md"
    entry.write_bytes(repo.git("show", "HEAD:training_log/V1.md").encode())
    assert "?? training_log/V1.md" in repo.git("status", "--porcelain")
    nxt = repo.ok("next", "--json").json()
    assert nxt["command"] == "git ledger doctor --fix", nxt
    fixed = repo.run("doctor", "--fix")
    assert fixed.code == 0, fixed.err
    assert repo.git("status", "--porcelain") == ""
    assert repo.git("diff-index", "HEAD") == ""
    assert not (repo.path / ".git/ledger/recovered").exists()


@pytest.mark.parametrize("point", ["after-ref", "during-index"])
def test_a_fault_after_the_ref_moves_says_committed_and_doctor_completes_it(
    repo: Repo, point: str
) -> None:
    before = repo.head()
    result = _cli_with_fault(repo, point, "EIO", *REGISTER)
    head = repo.head()
    assert head != before and repo.git("rev-parse", f"{head}^").strip() == before
    assert result.code == 4, (result.code, result.err)
    line = result.err.strip()
    assert len(line.splitlines()) == 1, result.err
    assert f"committed as {head}; the work tree is behind: run git ledger doctor --fix" in line
    assert "I/O error" in line and "check it (dmesg)" in line, line  # the errno's own hint
    assert "Traceback" not in result.err
    assert _behind(repo), "the index and work tree really are behind"
    assert not (repo.path / "training_log/V1.md").exists()
    fixed = repo.run("doctor", "--fix")
    assert fixed.code in (0, 1), fixed.err
    assert repo.git("status", "--porcelain") == ""
    assert (repo.path / "training_log/V1.md").read_bytes() == repo.git(
        "show", "HEAD:training_log/V1.md"
    ).encode()
    assert repo.git("diff-index", "HEAD") == "", "index and HEAD agree"
    assert not (repo.path / ".git/ledger-pending.json").exists()


def test_a_git_failure_after_the_ref_moves_is_exit_4_with_gits_reason(repo: Repo) -> None:
    """No injection: a required smudge filter fails while git writes the work tree."""
    repo.write(".git/info/attributes", "training_log/README.md filter=broken\n")
    repo.git("config", "filter.broken.smudge", "false")
    repo.git("config", "filter.broken.clean", "cat")
    repo.git("config", "filter.broken.required", "true")
    before = repo.head()
    result = register(repo, "V1")
    assert result.code == 4, (result.code, result.err)
    assert f"committed as {repo.head()}; the work tree is behind" in result.err
    assert "external filter 'false' failed" in result.err, result.err  # git's own words
    assert "another git process" not in result.err
    assert repo.head() != before
    repo.git("config", "filter.broken.smudge", "cat")
    assert repo.run("doctor", "--fix").code in (0, 1)
    assert repo.git("status", "--porcelain") == ""


def test_the_next_transition_completes_an_earlier_one_left_behind(repo: Repo) -> None:
    assert _cli_with_fault(repo, "after-ref", "EIO", *REGISTER).code == 4
    repo.write("results.json", '{"score": 1.0}')
    (repo.path / "results.json").unlink()
    tmp = repo.path.parent / "r.json"
    tmp.write_text('{"score": 1.0}')
    repo.ok("record", "V1", "--gate", "recent", "--seed", "1", str(tmp))
    assert repo.git("status", "--porcelain") == ""
    assert (repo.path / "training_log/V1.md").is_file()


@pytest.mark.parametrize(
    ("name", "words"),
    [
        ("ENOSPC", "free some space"),
        ("EACCES", "chmod"),
        ("EROFS", "remount it read-write"),
        ("EDQUOT", "quota"),
    ],
)
def test_an_environment_failure_before_the_ref_moves_is_exit_5_with_the_errnos_hint(
    repo: Repo, name: str, words: str
) -> None:
    """Writing the objects fails as the system would: nothing committed, no bad-input
    code, no 'free some disk space' for a permission, and no retries."""
    before = fingerprint(repo.path)
    result = _cli_with_fault(repo, "after-objects", name, *REGISTER)
    assert result.code == 5, (result.code, result.err)
    assert words in result.err and "Traceback" not in result.err, result.err
    if name not in ("ENOSPC", "EDQUOT"):
        assert "disk" not in result.err, result.err
    assert fingerprint(repo.path) == before


def test_a_lock_that_cannot_be_taken_is_reported_at_once_not_retried(repo: Repo) -> None:
    """A ref lock that fails for a reason other than a racing writer is not a race."""
    blocker = repo.path / ".git/refs/heads/main.lock"
    blocker.mkdir()  # held "forever": git says File exists, but no writer will let go
    (blocker / "x").write_text("")
    result = register(repo, "V1")
    # Nothing moved; a held lock is retried a bounded number of times, then named.
    assert result.code == 1, (result.code, result.err)
    assert "main.lock exists (another git process holds it, or a crash left it" in result.err
    assert "doctor --fix" in result.err
    shutil.rmtree(blocker)


# --- the environment, for real ---------------------------------------------------


def _namespace_ok() -> bool:
    if shutil.which("unshare") is None or shutil.which("mount") is None:
        return False
    probe = subprocess.run(
        ["unshare", "-m", "--propagation", "private", "mount", "-t", "tmpfs", "none", "/mnt"],
        capture_output=True,
        check=False,
    )
    return probe.returncode == 0


NAMESPACE = _namespace_ok()


def _in_namespace(script: str, *args: str) -> dict[str, object]:
    """Run ``script`` (sh) in a private mount namespace; it prints one JSON line last."""
    proc = subprocess.run(
        ["unshare", "-m", "--propagation", "private", "sh", "-ec", script, *args],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout.strip().splitlines()[-1])
    assert isinstance(data, dict)
    return data


_RUN_LEDGER = (
    "import json, subprocess, sys; "
    "p = subprocess.run([sys.executable, '-m', 'ledger', *sys.argv[2:]], cwd=sys.argv[1], "
    "capture_output=True, text=True); "
    "print(json.dumps({'code': p.returncode, 'err': p.stderr}))"
)


def test_a_read_only_work_tree_is_an_environment_failure_and_nothing_is_committed(
    repo: Repo,
) -> None:
    ledger_dir = repo.path / "training_log"
    before = fingerprint(repo.path)
    if NAMESPACE:  # a read-only mount: the kernel answers EROFS, even to root
        data = _in_namespace(
            'mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" && shift && '
            f'exec "{sys.executable}" -c "{_RUN_LEDGER}" "$@"',
            "sh", str(ledger_dir), str(repo.path), *REGISTER,
        )  # fmt: skip
        code, err, words = data["code"], str(data["err"]), "remount it read-write"
    elif os.geteuid() != 0:  # modes stop everyone but root
        ledger_dir.chmod(0o555)
        try:
            result = register(repo, "V1")
        finally:
            ledger_dir.chmod(0o755)
        code, err, words = result.code, result.err, "chmod u+w"
    else:
        pytest.skip("root without mount namespaces: nothing here can make a directory read-only")
    assert code == 5, (code, err)
    assert "cannot write in the work tree" in err and "training_log" in err, err
    assert words in err and "disk" not in err and "Traceback" not in err, err
    assert fingerprint(repo.path) == before, "refused before anything was committed"


_FULL_DISK = """
import json, subprocess, sys
from pathlib import Path
from tests.helpers import fingerprint
mnt, repo, args = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3:]
subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "none", str(mnt)], check=True)
subprocess.run(["cp", "-a", str(repo), str(mnt / "repo")], check=True)
before = fingerprint(mnt / "repo")
try:
    with open(mnt / "filler", "wb") as handle:
        while True:
            handle.write(bytes(4096))
            handle.flush()
except OSError:
    pass
p = subprocess.run([sys.executable, "-m", "ledger", *args], cwd=mnt / "repo",
                   capture_output=True, text=True)
same = fingerprint(mnt / "repo") == before
print(json.dumps({"code": p.returncode, "err": p.stderr, "same": same}))
"""


def test_a_full_disk_is_an_environment_failure_with_the_disk_hint(repo: Repo) -> None:
    if not NAMESPACE:
        pytest.skip("no mount namespace for a small tmpfs here (see the EFBIG test)")
    mnt = repo.path.parent / "mnt"
    mnt.mkdir()
    data = _in_namespace(
        f'cd "{ROOT}" && exec "{sys.executable}" -c "$0" "$@"',
        _FULL_DISK, str(mnt), str(repo.path), *REGISTER,
    )  # fmt: skip
    err = str(data["err"])
    assert data["code"] == 5, data
    assert "No space left on device" in err and "free some space" in err, err
    assert "Traceback" not in err
    assert data["same"], "nothing was committed or written in the work tree"


def test_a_file_size_limit_is_an_environment_failure_with_its_own_hint(repo: Repo) -> None:
    """RLIMIT_FSIZE needs no privilege: a write past it fails with EFBIG."""
    import resource

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (64, resource.RLIM_INFINITY))

    before = repo.head()
    proc = subprocess.run(
        [sys.executable, "-m", "ledger", *REGISTER],
        cwd=repo.path, capture_output=True, text=True, check=False, preexec_fn=limit,
    )  # fmt: skip
    assert proc.returncode == 5, (proc.returncode, proc.stderr)
    assert "File too large" in proc.stderr and "ulimit -f" in proc.stderr, proc.stderr
    assert repo.head() == before


def test_bad_input_still_exits_2_and_writes_nothing(repo: Repo) -> None:
    before = fingerprint(repo.path)
    result = ledger(repo.path, "register", "V1", "--bet", "b", "--gate", "nope",
                    "--files", "x.py", "--falsifier", "f")  # fmt: skip
    assert result.code == 2 and fingerprint(repo.path) == before


# --- a version file that does not parse --------------------------------------------


def test_a_version_file_that_does_not_parse_is_reported_with_path_line_and_reason(
    repo: Repo, tmp_path: Path
) -> None:
    register(repo, "V1")
    path = repo.path / "training_log/V1.md"
    lines = path.read_text().splitlines(keepends=True)
    broken = next(i for i, line in enumerate(lines) if line.startswith("bet:"))
    lines[broken] = "bet: [unclosed\n"
    path.write_text("".join(lines))
    repo.commit_all("docs: break V1 by hand", "--no-verify")
    good = tmp_path / "r.json"
    good.write_text('{"score": 1.0}')
    before = fingerprint(repo.path)
    for args in (
        ("record", "V1", "--gate", "recent", "--seed", "1", str(good)),
        ("run", "V1", "--gate", "recent", "--seeds", "1"),
        ("show", "V1"),
        ("void", "V1", "--reason", "broken"),
    ):
        result = repo.run(*args)
        assert result.code == 2, (args, result.code, result.err)
        assert "no version" not in result.err and "register it first" not in result.err, args
        assert "training_log/V1.md" in result.err and "invalid YAML" in result.err, result.err
        # The line of the file (the front matter starts on line 2), as an editor shows it.
        assert f"(line {broken + 1})" in result.err, (broken + 1, result.err)
    assert fingerprint(repo.path) == before


def test_a_version_file_naming_another_id_says_so(repo: Repo, tmp_path: Path) -> None:
    register(repo, "V1")
    path = repo.path / "training_log/V1.md"
    path.write_text(path.read_text().replace("id: V1", "id: V9", 1))
    repo.commit_all("docs: rename inside", "--no-verify")
    good = tmp_path / "r.json"
    good.write_text('{"score": 1.0}')
    result = repo.run("record", "V1", "--gate", "recent", "--seed", "1", str(good))
    assert result.code == 2 and "no version" not in result.err, result.err
    assert "training_log/V1.md" in result.err and "V9" in result.err, result.err


# --- exit 3 is a bug, always with its traceback --------------------------------------


@pytest.mark.parametrize("name", ["LedgerError", "EINVAL"])
def test_an_error_no_class_explains_is_exit_3_with_a_traceback(repo: Repo, name: str) -> None:
    """A plain LedgerError, or an OSError that is not the environment's, is a bug."""
    log = repo.path / ".git/ledger/last-error.log"
    result = _cli_with_fault(repo, "after-objects", name, *REGISTER)
    assert result.code == 3, (result.code, result.err)
    assert result.err.startswith("git-ledger: error: internal error: "), result.err
    assert f"traceback in {log}" in result.err, result.err
    assert "Traceback (most recent call last)" in log.read_text()
    assert "injected at after-objects" in log.read_text()
