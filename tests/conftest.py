"""Hermetic tests on real git repositories.

Every test gets its own HOME (the user cache directory is shared by the session),
no system or global git config but a fixed one,
a fixed identity and clock, and an empty template dir, so nothing from the
developer's own setup (hooks, aliases, signing, default branch) leaks in.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.helpers import Repo, Templates, git, new_ledger, once, session_root

ROOT = Path(__file__).resolve().parent.parent
# pip's cache from the real HOME, so install tests do not download the world
# again; it is only a cache (pip verifies what it takes from it).
PIP_CACHE = os.environ.get("PIP_CACHE_DIR") or str(Path.home() / ".cache" / "pip")


def pytest_configure(config: pytest.Config) -> None:
    """Compile this checkout's package once, before any test starts a process.

    The tests start thousands of ``git ledger`` processes from the checkout (an editable
    install), and Python writes no bytecode under PYTHONDONTWRITEBYTECODE (set on some CI
    machines): each process would compile every module it imports again. A wheel's
    modules come compiled by pip; this gives the checkout the same. Once, by the xdist
    controller (or the only process), before the workers start; an unwritable checkout
    only costs speed."""
    if hasattr(config, "workerinput"):
        return
    import compileall

    compileall.compile_dir(ROOT / "ledger", quiet=2)


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    """``-n auto``: a worker per core, and one more. The tests wait on git and on the
    processes they start (a lock held for a while, a run killed at a moment, a remote's
    side of a push), so two workers left a 2-core machine idle a sixth of the time.
    ``PYTEST_XDIST_AUTO_NUM_WORKERS`` still decides when set (xdist reads it)."""
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return (cores or 1) + 1


@pytest.fixture(autouse=True)
def hermetic(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path_factory.mktemp("home")
    templates = tmp_path_factory.mktemp("git-templates")
    for var in list(os.environ):
        if var.startswith(("GIT_", "LEDGER_")):
            monkeypatch.delenv(var, raising=False)
    (home / ".gitconfig").write_text(
        "[init]\n\tdefaultBranch = main\n[advice]\n\tdetachedHead = false\n"
        '[protocol "file"]\n\tallow = always\n'
    )
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    # One user cache for the whole session (each worker its own), never the
    # developer's ~/.cache: matplotlib (report --format html, plot) builds its font
    # cache there once per session, not once per test. git-ledger itself keeps
    # nothing there.
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.getbasetemp() / "xdg-cache"))
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
    bindir = tmp_path_factory.mktemp("bin")
    # What pip's console script is: the interpreter runs a script from bin/, so
    # the current directory is never on sys.path (``python -m ledger`` from a
    # repository would import that repository's ledger/ first).
    shim = bindir / "git-ledger"
    shim.write_text(
        f"#!{sys.executable}\nimport sys\nfrom ledger.__main__ import main\nsys.exit(main())\n"
    )
    shim.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")


@pytest.fixture
def figure(record_property: Callable[[str, object], None]) -> Callable[[str], None]:
    """Report a measured figure; printed at the end of the run under "figures"."""

    def say(text: str) -> None:
        record_property("figure", text)

    return say


# The longest tests (the whole walks, minutes each, tests/test_loop_walk.py) are sent to
# the workers first: the shorter ones then fill in around them and the workers end
# together, instead of one worker running a walk alone at the end (longest first).
LONGEST = (
    "tests/test_loop_walk.py::test_walk_in_the_whole_world",
    "tests/test_loop_walk.py::test_walk_through_the_mcp_server",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    items.sort(key=lambda item: not item.nodeid.startswith(LONGEST))  # stable: else as found


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    figures = [
        str(value)
        for reports in terminalreporter.stats.values()
        for report in reports
        if isinstance(report, pytest.TestReport) and report.when == "call"
        for name, value in report.user_properties
        if name == "figure"
    ]
    if figures:
        terminalreporter.section("figures")
        for line in figures:
            terminalreporter.write_line(line)


@pytest.fixture
def bare_repo(tmp_path: Path) -> Iterator[Repo]:
    path = tmp_path / "repo"
    path.mkdir()
    git(path, "init", "-q")
    yield Repo(path)


@pytest.fixture
def repo(bare_repo: Repo, templates: Templates) -> Repo:
    """A repository with an initialised versions ledger: ``git init`` and ``git ledger
    init`` run once per session (in the hermetic environment, with its fixed identity
    and clock: every test would make the same commit), then copied over ``bare_repo``."""
    return templates.over("versions-init", bare_repo, new_ledger)


@pytest.fixture(scope="session")
def built_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """This checkout built as a wheel, once per test session (tests.helpers.once)."""
    import subprocess

    def build(out: Path) -> None:
        subprocess.run(
            [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out), str(ROOT)],
            check=True,
            env={**os.environ, "PIP_CACHE_DIR": PIP_CACHE},
        )

    out = once(session_root(tmp_path_factory.getbasetemp()) / "wheel", build)
    return next(out.glob("git_ledger-*.whl"))


@pytest.fixture(scope="session")
def wheel_venv(built_wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtual environment with the wheel installed without extras: what
    `pip install git-ledger` gives a user. Installed once per session; tests only run it."""
    import subprocess

    def build(where: Path) -> None:
        subprocess.run([sys.executable, "-m", "venv", str(where / "venv")], check=True)
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("GIT_", "LEDGER_", "PYTHON", "VIRTUAL_ENV"))
        }
        env["PIP_CACHE_DIR"] = PIP_CACHE
        pip = str(where / "venv/bin/pip")
        subprocess.run([pip, "install", "-q", str(built_wheel)], check=True, env=env)

    return once(session_root(tmp_path_factory.getbasetemp()) / "wheel-venv", build) / "venv"


@pytest.fixture(scope="session")
def templates(tmp_path_factory: pytest.TempPathFactory) -> Templates:
    """States many tests start from, built once and copied (tests.helpers.Templates)."""
    return Templates(session_root(tmp_path_factory.getbasetemp()) / "templates")
