"""The shape of the package, held by tools rather than by review.

- import-linter (``.importlinter``): the command line above the MCP server above
  the hooks and the renderers, above the presets, above the core; the presets
  independent of each other; no import cycle anywhere in the package; the
  interfaces reach a loop through the ``Preset`` interface (the exceptions are
  listed in the contract). A planted
  violation shows each contract can fail.
- At most 15 modules at the package's top level.
- No module over 500 lines, except the ones named in ``OVERSIZE``, each held to
  its size today (a module may shrink and leave the list, never grow).
- Only the store imports pygit2.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import Repo, register
from tests.test_hooks import commit

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "ledger"
MAX_LINES = 500

# Modules still over MAX_LINES, with the most lines each may have until it is split.
OVERSIZE: dict[str, int] = {}


def _lint_imports(root: Path) -> subprocess.CompletedProcess[str]:
    tool = shutil.which("lint-imports", path=str(Path(sys.executable).parent))
    if tool is None:
        pytest.fail(
            "lint-imports is not installed; install the test extra: pip install -e '.[test]'"
        )
    return subprocess.run(
        [tool, str(root / ".importlinter"), "--no-cache"],
        cwd=root,
        capture_output=True,
        text=True,
        check=False,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(root), "HOME": str(root)},
    )


def test_the_import_contracts_hold() -> None:
    proc = _lint_imports(ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "4 kept, 0 broken" in proc.stdout


@pytest.mark.parametrize(
    ("module", "planted", "contract"),
    [
        ("core/errors.py", "import ledger.presets.versions.rules", "interfaces above presets"),
        ("presets/campaign/loop.py", "import ledger.presets.batches.loop", "presets independent"),
        ("core/gitcli.py", "import ledger.core.store", "no import cycles"),
        ("hooks/full.py", "import ledger.presets.versions.rules", "through the preset"),
    ],
    ids=["layers", "independence", "cycle", "through-the-preset"],
)
def test_each_import_contract_can_fail(
    tmp_path: Path, module: str, planted: str, contract: str
) -> None:
    """A copy of the package with one planted import breaks exactly that contract."""
    shutil.copytree(PACKAGE, tmp_path / "ledger", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / ".importlinter", tmp_path / ".importlinter")
    target = tmp_path / "ledger" / module
    target.write_text(target.read_text() + f"\n{planted}  # planted by the test\n")
    if contract == "no import cycles":  # the store imports gitcli; gitcli now imports the store
        assert any(
            "from ledger.core import gitcli" in p.read_text()
            for p in (PACKAGE / "core/store").glob("*.py")
        )
    proc = _lint_imports(tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    broken = proc.stdout.split("Broken contracts", 1)[-1]
    assert contract in broken.lower() or contract in broken, proc.stdout


def test_at_most_fifteen_modules_at_the_packages_top_level() -> None:
    top = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(top) <= 15, top


def test_no_module_grows_past_its_ceiling() -> None:
    sizes = {
        p.relative_to(ROOT).as_posix(): len(p.read_text().splitlines())
        for p in PACKAGE.rglob("*.py")
    }
    over = {path: lines for path, lines in sizes.items() if lines > OVERSIZE.get(path, MAX_LINES)}
    assert not over, f"split these (at most {MAX_LINES} lines a module): {over}"
    stale = {path for path in OVERSIZE if sizes.get(path, 0) <= MAX_LINES}
    assert not stale, f"under {MAX_LINES} lines now: drop them from OVERSIZE: {sorted(stale)}"


def test_only_the_store_imports_pygit2() -> None:
    """The modules of the ``ledger/core/store/`` package, and nothing else (not even a
    package nested in it)."""
    users = sorted(
        p.relative_to(ROOT).as_posix()
        for p in PACKAGE.rglob("*.py")
        if "import pygit2" in p.read_text() or "from pygit2" in p.read_text()
    )
    store = sorted(p.relative_to(ROOT).as_posix() for p in (PACKAGE / "core/store").glob("*.py"))
    outside = [path for path in users if path not in store]
    assert users and not outside, f"only ledger/core/store/ may import pygit2: {outside}"


def test_hooks_and_merge_drivers_written_by_0_2_still_boot(repo: Repo) -> None:
    """0.2 wrote ``from ledger.hookrun import run`` into .git/hooks and ``from ledger.cli
    import main`` into the merge driver's config: both entry points stay, and a hook
    booted the old way still refuses what it refused."""
    repo.ok("hooks", "install")
    hook = repo.path / ".git/hooks/pre-commit"
    script = hook.read_text()
    assert "ledger.hooks.fast" in script
    hook.write_text(script.replace("ledger.hooks.fast", "ledger.hookrun"))
    assert register(repo, "V200", bet="Original bet").code == 0
    entry = repo.path / "training_log/V200.md"
    entry.write_text(entry.read_text().replace("bet: Original bet", "bet: Another bet"))
    refused = commit(repo, "docs(x): V200 wording", "training_log/V200.md")
    assert refused.returncode == 1 and "frozen-registration" in refused.stderr, refused.stderr
    driver = subprocess.run(
        [sys.executable, "-I", "-c", "from ledger.cli import main; main()", "--version"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert driver.returncode == 0 and "version" in driver.stdout, driver
