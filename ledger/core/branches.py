"""Which branch is the default one, and where a feature branch left it.

A pull request is reviewed against the default branch: ``report`` on a feature
branch and ``compare --branch`` cover the versions registered since the merge
base with it. The default branch is the remote's (``refs/remotes/<remote>/HEAD``,
what ``git clone`` sets), else ``init.defaultBranch``, else ``main`` or
``master``, whichever exists. Everything here runs the git program (``gitcli``).
"""

from __future__ import annotations

from pathlib import Path

from ledger.core import gitcli


def _ref_exists(cwd: Path, ref: str) -> bool:
    proc = gitcli.run(["rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"], cwd, check=False)
    return proc.returncode == 0


def default_branch(cwd: Path) -> str | None:
    """The short name of the default branch (``main``), or None when there is none."""
    for remote in gitcli.remotes(cwd):
        proc = gitcli.run(
            ["symbolic-ref", "--quiet", f"refs/remotes/{remote}/HEAD"], cwd, check=False
        )
        if proc.returncode == 0:
            name = proc.stdout.strip().removeprefix(f"refs/remotes/{remote}/")
            if _ref_exists(cwd, f"refs/heads/{name}"):
                return name
    configured = gitcli.config_get(cwd, "init.defaultBranch")
    for candidate in (configured, "main", "master"):
        if candidate and _ref_exists(cwd, f"refs/heads/{candidate}"):
            return candidate
    return None


def current_branch(cwd: Path) -> str | None:
    """The checked-out branch's short name; None when HEAD is detached."""
    proc = gitcli.run(["symbolic-ref", "--quiet", "--short", "HEAD"], cwd, check=False)
    return (proc.stdout.strip() or None) if proc.returncode == 0 else None


def merge_base(cwd: Path, one: str, two: str) -> str | None:
    proc = gitcli.run(["merge-base", one, two], cwd, check=False)
    return (proc.stdout.strip() or None) if proc.returncode == 0 else None


def fork_point(cwd: Path, branch: str | None = None) -> tuple[str, str] | None:
    """(default branch, merge base) when ``branch`` (default: the checked-out one) is
    not the default branch; None on the default branch or without one."""
    default = default_branch(cwd)
    name = branch if branch is not None else current_branch(cwd)
    if default is None or name is None or name == default:
        return None
    base = merge_base(cwd, f"refs/heads/{default}", name)
    return (default, base) if base is not None else None
