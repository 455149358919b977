"""Sharing through git remotes: two clones converge; cells run elsewhere; four racing machines."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import Repo, git, ledger, measure, register

ROOT = Path(__file__).resolve().parent.parent


def _clone(remote: str, path: Path) -> Repo:
    subprocess.run(["git", "clone", "-q", remote, str(path)], check=True, capture_output=True)
    repo = Repo(path)
    repo.ok("doctor", "--fix")  # a fresh clone: define the views merge driver
    return repo


@pytest.fixture
def two_clones(repo: Repo, tmp_path: Path) -> tuple[Repo, Repo]:
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    repo.git("remote", "add", "origin", str(remote))
    repo.git("push", "-q", "origin", "HEAD:refs/heads/main")
    return repo, _clone(str(remote), tmp_path / "b")


def _ledger_files(repo: Repo) -> dict[str, str]:
    out = repo.git("ls-tree", "-r", "HEAD", "--", "training_log", ".gitattributes")
    return {line.split("\t")[1]: line.split()[2] for line in out.splitlines()}


def test_two_clones_registering_and_concluding_converge(two_clones: tuple[Repo, Repo]) -> None:
    a, b = two_clones
    for repo, mean, bet in ((a, 10.0, "Bet from A"), (b, 12.0, "Bet from B")):
        assert register(repo, "V1", bet=bet).code == 0  # the same id on both machines
        measure(repo, "V1", "recent", mean)
        repo.ok("conclude", "V1", "--verdict", "confirmed", "--next", "sync")
    assert register(a, "V2", bet="Second bet from A").code == 0
    measure(a, "V2", "recent", 10.1)
    a.ok("conclude", "V2", "--verdict", "refuted", "--next", "x")
    a.ok("sync")
    synced = b.ok("sync", "--json").json()
    assert any("renamed ours to V1a" in note for note in synced["notes"])
    a.ok("sync")
    assert a.head() == b.head()
    assert _ledger_files(a) == _ledger_files(b)
    for repo in (a, b):
        status = repo.ok("status", "--json").json()
        assert status["problems"] == [] and status["counts"]["versions"] == 3
        for path in (repo.path / "training_log").rglob("*"):
            if path.is_file():
                assert "<<<<<<<" not in path.read_text(errors="replace"), path
        assert repo.git("status", "--porcelain") == ""
    assert a.ok("baseline", "--json").json() == b.ok("baseline", "--json").json()
    renamed = (b.path / "training_log/V1a.md").read_text()
    assert "Renamed from V1" in renamed and "Bet from B" in renamed


def test_matrix_cells_run_on_another_machine(two_clones: tuple[Repo, Repo], tmp_path: Path) -> None:
    a, b = two_clones
    register(a, "V1")
    measure(a, "V1", "recent", 10.0)
    a.ok("conclude", "V1", "--verdict", "confirmed", "--next", "matrix")
    spec = tmp_path / "cells.toml"
    spec.write_text(
        "".join(
            f'[cells.{c}]\nbet = "Cell {c} bet"\ngate = "recent"\nfalsifier = "no gain"\nfiles = ["x.py"]\n'
            for c in "AB"
        )
    )
    a.ok("matrix", "new", "V2", "--spec", str(spec))
    b.ok("sync")
    joined = b.ok("matrix", "join", "V2", "B", "--json").json()
    cell = Repo(Path(joined["worktree"]))
    measure(cell, "V2.B", "recent", 15.0)
    cell.ok("sync")  # pushes the cell branch
    status = a.ok("matrix", "status", "V2", "--fetch", "--json").json()
    cells = {c["cell"]: c for c in status["cells"]}
    assert cells["V2.B"]["n"] == 4 and cells["V2.B"]["delta"] > 4


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def daemon_remote(tmp_path: Path) -> Iterator[str]:
    """A bare repository served by `git daemon` on 127.0.0.1, stopped after the test."""
    base = tmp_path / "served"
    base.mkdir()
    git(base, "init", "-q", "--bare", "ledger.git")
    port = _free_port()
    proc = subprocess.Popen(
        [
            "git",
            "daemon",
            "--reuseaddr",
            f"--base-path={base}",
            "--export-all",
            "--enable=receive-pack",
            "--listen=127.0.0.1",
            f"--port={port}",
            str(base),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"git://127.0.0.1:{port}/ledger.git"
    for _ in range(100):
        if (
            subprocess.run(["git", "ls-remote", url], capture_output=True, check=False).returncode
            == 0
        ):
            break
        time.sleep(0.05)
    try:
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_four_clones_syncing_at_once_through_git_daemon(
    repo: Repo, daemon_remote: str, tmp_path: Path
) -> None:
    clones_n, per_clone, every = 4, 50, 10
    repo.git("remote", "add", "origin", daemon_remote)
    repo.git("push", "-q", "origin", "HEAD:refs/heads/main")
    clones = [_clone(daemon_remote, tmp_path / f"m{i}") for i in range(clones_n)]
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tests.syncer",
                str(c.path),
                str(per_clone),
                str(every),
                f"m{i}",
            ],
            cwd=ROOT,
        )
        for i, c in enumerate(clones)
    ]
    assert [p.wait(timeout=600) for p in procs] == [0] * clones_n
    for clone in clones:  # a final sync everywhere
        clone.ok("sync")
    expected = {
        f"training_log/notes/m{i}-{j:04d}.json" for i in range(clones_n) for j in range(per_clone)
    }
    remote_view = tmp_path / "check"
    subprocess.run(["git", "clone", "-q", daemon_remote, str(remote_view)], check=True)
    on_remote = set(git(remote_view, "ls-files", "training_log/notes").split())
    lost = expected - on_remote
    print(
        f"distributed: transitions attempted {len(expected)}, recorded {len(expected & on_remote)}, "
        f"lost {len(lost)}, manual conflicts 0"
    )
    assert not lost
    for clone in clones:
        assert expected <= set(clone.git("ls-files", "training_log/notes").split())
        assert clone.git("status", "--porcelain") == ""
        git(clone.path, "fsck", "--strict")
    conflict_commits = git(remote_view, "log", "--format=%s", "--grep", "Conflict")
    assert conflict_commits == ""
    assert json.loads(ledger(remote_view, "status", "--json").out)["problems"] == []
    shutil.rmtree(remote_view)
