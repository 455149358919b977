"""Helpers shared by the tests: run git and git-ledger for real, fingerprint a repo."""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent

# A figure a test measured (a count, a rate): conftest's ``figure`` fixture collects
# them and pytest prints them in a "figures" section at the end of the run, from
# every xdist worker.
Figure = Callable[[str], None]


def seal(monkeypatch: pytest.MonkeyPatch, factory: pytest.TempPathFactory) -> None:
    """Seal this process and its children from the developer's own setup: a HOME of its
    own, no system or global git config but a fixed one, a fixed identity and clock, an
    empty template dir, and this checkout's ``git-ledger`` on PATH.

    Every test has it (conftest's autouse ``hermetic``); a module- or session-scoped
    fixture that runs git or ``git ledger`` is built before any test's seal, so it takes
    its own (:func:`sealed`). Without it, such a fixture used the developer's identity
    and config: on a machine without them (an empty HOME) it failed."""
    home = factory.mktemp("home")
    templates = factory.mktemp("git-templates")
    for var in list(os.environ):
        if var.startswith(("GIT_", "LEDGER_")):
            monkeypatch.delenv(var, raising=False)
    (home / ".gitconfig").write_text(
        "[init]\n\tdefaultBranch = main\n[advice]\n\tdetachedHead = false\n"
        '[protocol "file"]\n\tallow = always\n'
    )
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    # One user cache for the whole session (each worker its own), never the developer's
    # ~/.cache: git-ledger keeps nothing there, and nothing a test starts may either.
    monkeypatch.setenv("XDG_CACHE_HOME", str(factory.getbasetemp() / "xdg-cache"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(home / ".gitconfig"))
    monkeypatch.setenv("GIT_TEMPLATE_DIR", str(templates))
    monkeypatch.setenv("GIT_AUTHOR_NAME", "Test Author")
    monkeypatch.setenv("GIT_AUTHOR_EMAIL", "author@example.com")
    monkeypatch.setenv("GIT_COMMITTER_NAME", "Test Committer")
    monkeypatch.setenv("GIT_COMMITTER_EMAIL", "committer@example.com")
    monkeypatch.setenv("GIT_AUTHOR_DATE", "@1767225600 +0000")
    monkeypatch.setenv("GIT_COMMITTER_DATE", "@1767225600 +0000")
    monkeypatch.setenv("TZ", "UTC")
    monkeypatch.setenv("COLUMNS", "200")
    # Subprocesses of the tests run this checkout's code, installed or not.
    # No empty entry: an empty PYTHONPATH component means the current directory,
    # which would put every test repository's top level on sys.path.
    inherited = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(ROOT), *inherited]))
    bindir = factory.mktemp("bin")
    # What pip's console script is: the interpreter runs a script from bin/, so
    # the current directory is never on sys.path (``python -m ledger`` from a
    # repository would import that repository's ledger/ first).
    shim = bindir / "git-ledger"
    shim.write_text(
        f"#!{sys.executable}\nimport sys\nfrom ledger.__main__ import main\nsys.exit(main())\n"
    )
    shim.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")


@contextmanager
def sealed(factory: pytest.TempPathFactory) -> Iterator[None]:
    """:func:`seal` for the length of a ``with`` block: for a module- or session-scoped
    fixture, which runs before the test's own seal and must not leak into other tests."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        seal(monkeypatch, factory)
        yield


def git(cwd: Path, *args: str, check: bool = True, input: str | None = None) -> str:
    proc = subprocess.run(
        ["git", *args], cwd=cwd, capture_output=True, text=True, input=input, check=False
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed ({proc.returncode}):\n{proc.stderr}")
    return proc.stdout


@dataclass
class Run:
    code: int
    out: str
    err: str

    def json(self) -> Any:
        return json.loads(self.out)


def ledger(cwd: Path, *args: str, input: str | None = None) -> Run:
    """Run ``python -m ledger`` as a real process (what ``git ledger`` runs)."""
    proc = subprocess.run(
        [sys.executable, "-m", "ledger", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        input=input,
        check=False,
    )
    return Run(proc.returncode, proc.stdout, proc.stderr)


@dataclass
class Repo:
    path: Path

    def git(self, *args: str, check: bool = True, input: str | None = None) -> str:
        return git(self.path, *args, check=check, input=input)

    def run(self, *args: str) -> Run:
        return ledger(self.path, *args)

    def ok(self, *args: str) -> Run:
        result = ledger(self.path, *args)
        assert result.code == 0, (
            f"git ledger {' '.join(args)} -> {result.code}\n{result.err}{result.out}"
        )
        return result

    def write(self, rel: str, text: str | bytes) -> Path:
        path = self.path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(text, bytes):
            path.write_bytes(text)
        else:
            path.write_text(text)
        return path

    def commit_all(self, message: str, *extra: str) -> str:
        self.git("add", "-A")
        self.git("commit", "-q", "-m", message, *extra)
        return self.git("rev-parse", "HEAD").strip()

    def head(self) -> str:
        return self.git("rev-parse", "HEAD").strip()

    def trailers(self, rev: str = "HEAD") -> dict[str, str]:
        out = self.git("log", "-1", "--format=%(trailers:only,unfold)", rev)
        pairs = [line.split(": ", 1) for line in out.splitlines() if ": " in line]
        return {k: v for k, v in pairs}


def fingerprint(path: Path) -> dict[str, str]:
    """Refs, HEAD, index and every work-tree file: what 'byte-identical' means here."""
    out: dict[str, str] = {}
    gitdir = path / ".git"
    if gitdir.is_dir():
        out["refs"] = subprocess.run(
            ["git", "for-each-ref", "--format=%(refname) %(objectname)"],
            cwd=path,
            capture_output=True,
            text=True,
            check=False,
        ).stdout
        out["HEAD"] = (gitdir / "HEAD").read_text()
        index = gitdir / "index"
        out["index"] = hashlib.sha256(index.read_bytes()).hexdigest() if index.exists() else "-"
    for file in sorted(path.rglob("*")):
        rel = file.relative_to(path)
        if rel.parts and rel.parts[0] == ".git":
            continue
        if file.is_symlink():
            out[f"link:{rel}"] = str(file.readlink())
        elif file.is_file():
            out[f"file:{rel}"] = hashlib.sha256(file.read_bytes()).hexdigest()
        elif file.is_dir():
            out[f"dir:{rel}"] = ""
    return out


def noisy_results(
    tmp: Path,
    mean: float,
    sigma: float,
    seeds: list[int],
    tag: str,
    metric: str = "score",
    extra: dict[str, float] | None = None,
) -> list[Path]:
    """Results files whose metric is mean + seeded Gaussian noise (known noise)."""
    import random

    paths = []
    for seed in seeds:
        rng = random.Random(f"{tag}-{seed}")
        data = {metric: round(mean + rng.gauss(0, sigma), 6), **(extra or {})}
        path = tmp / f"{tag}-seed{seed}.json"
        path.write_text(json.dumps(data))
        paths.append(path)
    return paths


def measure(
    repo: Repo,
    vid: str,
    gate: str,
    mean: float,
    sigma: float = 0.5,
    seeds: tuple[int, ...] = (1, 2, 3, 4),
    metric: str = "score",
) -> None:
    """Record one result per seed for ``vid`` on ``gate``."""
    tmp = repo.path.parent / "results-in"
    tmp.mkdir(exist_ok=True)
    for seed, path in zip(
        seeds, noisy_results(tmp, mean, sigma, list(seeds), f"{vid}-{gate}", metric), strict=True
    ):
        repo.ok("record", vid, "--gate", gate, "--seed", str(seed), str(path))


def register(
    repo: Repo,
    vid: str | None = None,
    *,
    bet: str = "A bet",
    gate: str = "recent",
    extra: tuple[str, ...] = (),
) -> Run:
    args = (
        ["register"]
        + ([vid] if vid else [])
        + [
            "--bet",
            bet,
            "--gate",
            gate,
            "--files",
            "src/model.py",
            "--falsifier",
            "no gain",
            *extra,
        ]
    )
    return ledger(Path(repo.path), *args)


def fresh(root: Path) -> Repo:
    """``root/repo``: a new repository (what a template's ``build`` starts from)."""
    path = root / "repo"
    path.mkdir()
    git(path, "init", "-q")
    return Repo(path)


def new_ledger(root: Path) -> Repo:
    """``root/repo``: a fresh repository with a versions ledger (the ``repo`` fixture)."""
    repo = fresh(root)
    repo.ok("init")
    return repo


def session_root(base: Path) -> Path:
    """A directory every xdist worker of this test session shares, from a worker's
    ``tmp_path_factory.getbasetemp()`` (a worker's is a child of the session's)."""
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def once(path: Path, build: Callable[[Path], object]) -> Path:
    """``path``, made by ``build(path)`` once per test session: by the first worker that
    asks, while the others wait on a lock beside it. A build that failed is built again
    by the next that asks.

    Not xdist groups: with pytest 9, pytest-xdist 3.8's ``--dist loadgroup`` no longer
    keeps a group on one worker (it renames ``item._nodeid``, which pytest 9 no longer
    reads), so a session or module fixture was built on every worker that ran one of
    its tests, and again after each teardown between them (the wheel, its virtual
    environment and the README walk three times each)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    done = path.with_name(f"{path.name}.built")
    with open(path.with_name(f"{path.name}.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.exists():
            shutil.rmtree(path, ignore_errors=True)
            path.mkdir()
            build(path)
            done.touch()
    return path


@dataclass
class Templates:
    """A state many tests start from, built once per test session (:func:`once`: by
    whichever xdist worker asks first) through ``git ledger`` like any other, then
    copied into each test's ``tmp_path``.

    A template is a directory: the repository at ``repo/``, and whatever else its build
    made beside it (a bare remote, results files). Remotes named by path are pointed at
    the copy's. Builds run in the environment of the first test that asks (the hermetic
    one every test has); a build that failed is built again by the next test that asks.
    """

    root: Path

    def copy(self, name: str, dest: Path, build: Callable[[Path], object]) -> Repo:
        src = once(self.root / name, build)
        for child in src.iterdir():
            target = dest / child.name
            if child.is_dir():
                shutil.copytree(child, target, symlinks=True)
            else:
                shutil.copy2(child, target)
        for clone in dest.iterdir():
            if not (clone / ".git").is_dir():
                continue
            urls = git(clone, "config", "--get-regexp", r"^remote\..*\.url$", check=False)
            for line in urls.splitlines():
                key, _, url = line.partition(" ")
                if url.startswith(str(src)):
                    git(clone, "config", key, str(dest) + url[len(str(src)) :])
        return Repo(dest / "repo")

    def over(self, name: str, bare: Repo, build: Callable[[Path], object]) -> Repo:
        """The template ``name``'s repository (``build`` makes it at ``PATH/repo``) copied
        over the fresh repository ``bare`` (a fixture's, at the path the test knows).
        The copy's index is refreshed, so that its stat data is this work tree's (else a
        first ``git status`` would rewrite it, and a test that fingerprints the
        repository around a refusal would see the refresh)."""
        built = once(self.root / name, build) / "repo"
        shutil.rmtree(bare.path / ".git")
        shutil.copytree(built, bare.path, symlinks=True, dirs_exist_ok=True)
        git(bare.path, "update-index", "-q", "--refresh")
        return bare
