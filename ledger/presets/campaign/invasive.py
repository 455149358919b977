"""Less invasive wins by measure, not by word.

A candidate's change is measured from git when it is recorded
(:func:`ledger.presets.campaign.evidence.measure_change`): the code files
its commit changes and the lines added and removed there (``git diff-tree
--numstat``, on the paths :func:`ledger.presets.campaign.evidence.code_paths`
counts as code), and its kind: ``setting`` (configuration files only),
``dependency`` (dependency manifests and lock files) or ``code``. A declared
``--kind`` may be more invasive than what git shows, never less: a commit that
changes a ``.py`` file is a code change whatever it is called.

Between two candidates whose gains are within noise of each other
(:func:`ledger.presets.campaign.rules.less_invasive_problems`) a code change never
wins over a setting or a dependency, and the smaller diff wins unless a recorded
``--larger-diff-reason`` says why the larger one must; when neither is smaller,
``--notes`` say why this one won (the rule ``equal-gains``).
"""

from __future__ import annotations

from fnmatch import fnmatchcase
from posixpath import basename

from ledger.presets.campaign.loop import Candidate

KINDS = ("setting", "dependency", "code")
# Dependency manifests and lock files, by file name.
DEPENDENCY_FILES = (
    "requirements*.txt", "constraints*.txt", "*.lock", "Pipfile", "package.json",
    "package-lock.json", "pnpm-lock.yaml", "Cargo.toml", "go.mod", "go.sum", "Gemfile",
    "environment.yml", "environment.yaml", "conda-lock.yml", "vcpkg.json", "conanfile.txt",
)  # fmt: skip
# Configuration files, by file name: read by the program, not run.
SETTING_FILES = (
    "*.toml", "*.yaml", "*.yml", "*.ini", "*.cfg", "*.conf", "*.json", "*.env", ".env",
    "*.properties",
)  # fmt: skip

LESS, MORE_KIND, MORE, EQUAL, UNKNOWN = "less", "more-kind", "more", "equal", "unknown"


def infer_kind(paths: list[str]) -> str:
    """``setting`` when every path is a configuration file, ``dependency`` when every
    path is a manifest or a configuration file and one is a manifest, else ``code``."""
    names = [basename(p) for p in paths]
    if not names:
        return "code"
    deps = [n for n in names if any(fnmatchcase(n, g) for g in DEPENDENCY_FILES)]
    other = [n for n in names if n not in deps]
    if any(not any(fnmatchcase(n, g) for g in SETTING_FILES) for n in other):
        return "code"
    return "dependency" if deps else "setting"


def rank(kind: str) -> int:
    """Settings and dependencies are alike; code is more invasive than both."""
    return 1 if kind == "code" else 0


def against(new: Candidate, other: Candidate) -> str:
    """How invasive ``new`` is next to ``other`` (an equal gain): LESS, MORE_KIND (code
    over a setting or a dependency), MORE (a larger diff), EQUAL, or UNKNOWN (a diff
    not recorded, on an entry older than the rule)."""
    if rank(new.kind) != rank(other.kind) and new.diff is not None and other.diff is not None:
        return MORE_KIND if rank(new.kind) > rank(other.kind) else LESS
    if new.diff is None or other.diff is None:
        return UNKNOWN
    mine = (new.diff.get("lines", 0), new.diff.get("files", 0))
    theirs = (other.diff.get("lines", 0), other.diff.get("files", 0))
    return LESS if mine < theirs else MORE if mine > theirs else EQUAL


def size(c: Candidate) -> str:
    if c.diff is None:
        return f"{c.kind} change of unrecorded size"
    return f"{c.kind} change of {c.diff.get('files')} file(s), {c.diff.get('lines')} line(s)"
