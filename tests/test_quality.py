"""The repository's own hygiene: lint, types, packaging and the README's promises."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _tool(name: str) -> str:
    found = shutil.which(name, path=str(Path(sys.executable).parent))
    if found is None:
        pytest.fail(f"{name} is not installed; install the test extra: pip install -e '.[test]'")
    return found


def test_ruff_is_clean_including_security_rules() -> None:
    proc = subprocess.run(
        [_tool("ruff"), "check", "ledger", "tests", "bench"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_ruff_format_is_clean() -> None:
    proc = subprocess.run(
        [_tool("ruff"), "format", "--check", "ledger", "tests", "bench"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_mypy_strict_is_clean() -> None:
    proc = subprocess.run([_tool("mypy")], cwd=ROOT, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_readme_starts_with_the_two_commands_and_ci_runs_the_test_one() -> None:
    readme = (ROOT / "README.md").read_text()
    blocks = re.findall(r"```(?:sh|bash|console)?\n(.*?)```", readme, re.S)
    assert len(blocks) >= 2
    first, second = blocks[0].strip(), blocks[1].strip()
    assert first == "pip install . && git ledger demo"
    assert "pytest" in second
    assert readme.index(blocks[1]) < readme.index("## ")
    ci = (ROOT / ".ci/run").read_text()
    assert second in ci.splitlines(), "the README's test command must be run verbatim by .ci/run"


def test_the_readmes_pre_commit_rev_is_this_versions_release_tag() -> None:
    import tomllib

    from ledger import __version__

    revs = re.findall(r"^\s*rev: (\S+)", (ROOT / "README.md").read_text(), re.M)
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert revs == [f"v{version}"] and version == __version__, (revs, version, __version__)
    # A clone without tags (CI's shallow checkout) cannot say; one with tags must hold it.
    tags = subprocess.run(
        ["git", "tag", "--list", "v*"], cwd=ROOT, capture_output=True, text=True, check=False
    ).stdout.split()
    if tags:
        assert f"v{version}" in tags, f"tag v{version} is missing: git tag -a v{version}"
