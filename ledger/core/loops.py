"""The loops git-ledger serves, one module per preset behind one interface.

A preset says which files are its entries and parses each with a typed model,
which views it generates, what its hooks check, which history rules hold its
entries (for ``verify``), what ``status`` and ``next`` say and what the report
shows. Everything else (state loading, the hooks, the merge driver, ``init``,
``status``, ``next``, ``report``) asks :func:`preset_for`; no preset name is
compared anywhere else in the code (a test greps for it).

This module is imported by the hooks' fast path: it uses nothing beyond what
a ``python -S`` interpreter has loaded already (``abc``) and
:mod:`ledger.core.repobase`, and the preset
modules themselves are imported only by :func:`preset_for`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

from ledger.core.repobase import DEFAULT_PRESET

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: see ledger.hooks.fast
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

    from ledger.core.context import Context
    from ledger.core.facts import FactFn
    from ledger.core.findings import Finding
    from ledger.core.model.config import LedgerConfig
    from ledger.core.model.configfrozen import FrozenSetting
    from ledger.core.state import LedgerState
    from ledger.core.store import Snapshot, Store

NAMES = ("versions", "campaign", "batches")

# What the hooks' fast path needs to know about a preset, without importing it:
# - code_needs_version: a code commit must belong to an open version
# - config_checked: a staged ledger.toml goes to the full check (frozen numbers)
# - code_checked: a code commit goes to the full check (the loop's own discipline)
_HOOK_FACTS = {
    "versions": {"code_needs_version": True, "config_checked": False, "code_checked": False},
    "campaign": {"code_needs_version": False, "config_checked": True, "code_checked": True},
    "batches": {"code_needs_version": False, "config_checked": True, "code_checked": False},
}


# The ledger dir's subdirectories only transitions write (ledger.core.workspace.owned of
# the loop's history rules; a test holds them equal): an untracked file inside one that
# is committed is not an uncommitted entry, which the pre-push fast path needs to know.
_OWNED = {
    "versions": ("results",),
    "campaign": ("benchmark", "candidates", "mistakes"),
    "batches": ("gates", "revisions", "topics", "weights"),
}


def owned_dirs(name: str | None) -> tuple[str, ...]:
    """The transitions-only subdirectories of preset ``name``'s ledger dir."""
    return _OWNED.get(name or DEFAULT_PRESET, _OWNED[DEFAULT_PRESET])


def hook_facts(name: str | None) -> dict[str, bool]:
    """The fast-path facts of preset ``name`` (an unknown name is treated as the default)."""
    return _HOOK_FACTS.get(name or DEFAULT_PRESET, _HOOK_FACTS[DEFAULT_PRESET])


class StagedEntries:
    """A commit of ledger files about to be made, read once by the pre-commit hook for
    every loop's checks (:meth:`Preset.entry_findings`)."""

    __slots__ = ("after", "before", "head", "index", "paths")

    def __init__(
        self,
        paths: list[str],
        head: Snapshot,
        index: Snapshot,
        before: LedgerState,
        after: LedgerState,
    ) -> None:
        self.paths = paths  # the staged files inside the ledger dir
        self.head, self.index = head, index
        self.before, self.after = before, after  # the state at HEAD, and as staged


class Preset(ABC):
    """One loop. Subclasses live in ``ledger/presets/<name>/preset.py``."""

    name: str = ""
    # Whether each of this loop's transitions reads the loop's state whole: the process
    # that committed one then also makes what the next ``status``/``next`` reads
    # (ledger.cli.status.warm), for little more than the reading it did. Not the versions
    # loop's (``record`` reads one version of thousands): there, a verb that loaded the
    # whole state says so itself (``Context.loaded``).
    transitions_read_whole: bool = False
    readme_template: str = "ledger-README.md"
    """The ledger README that ``init`` writes (a file of ``templates/``)."""
    readme_blocks: tuple[str, ...] = ()
    """The README's generated blocks, in order (:meth:`readme_views` fills them)."""

    @abstractmethod
    def entry_paths(self, config: LedgerConfig) -> list[str]:
        """Globs (relative to the repository) of the files that are this loop's entries."""

    @abstractmethod
    def problems(self, store: Store, config: LedgerConfig, snap: Snapshot) -> list[tuple[str, str]]:
        """(path, error) for every entry of this loop at ``snap`` that does not parse."""

    def view_paths(self, config: LedgerConfig) -> list[str]:
        """Generated files besides the README views (merge driver, hooks, sync)."""
        return []

    def readme_views(self, state: LedgerState) -> dict[str, str]:
        """What each of :attr:`readme_blocks` holds for ``state`` (block name -> Markdown).
        The verbs write it, the hooks and ``sync`` compare it, the merge driver
        regenerates it (:mod:`ledger.core.views`)."""
        return {}

    def render_view(self, config: LedgerConfig, snap: Snapshot, path: str) -> bytes | None:
        """The generated content of ``path`` at ``snap`` (None: not one of this loop's views)."""
        return None

    def init_writes(self, config: LedgerConfig, snap: Snapshot) -> dict[str, bytes | None]:
        """What ``init`` writes besides ledger.toml and the README."""
        return {}

    def hook_findings(self, ctx: Context, staged: list[str]) -> list[Finding]:
        """What the pre-commit hook refuses for this loop (views in step, frozen files...)."""
        return []

    def frozen_settings(self, ctx: Context, snap: Snapshot) -> list[FrozenSetting]:
        """The numbers of ledger.toml this loop froze at ``snap`` (its checks refuse a
        ledger.toml that breaks one; ``config set`` refuses to change one)."""
        return []

    def entry_findings(self, ctx: Context, staged: StagedEntries) -> list[Finding]:
        """What the pre-commit hook refuses in a commit of this loop's ledger files,
        besides what it refuses for every loop (an entry that does not parse, code in
        the same commit, the README's blocks out of step)."""
        return []

    def open_step(self, ctx: Context) -> tuple[str | None, list[str], str]:
        """The step code commits belong to at HEAD, for the hooks' fast path of a loop
        whose ``code_needs_version``: its id, its planned files and the commit that
        registered it ('' when not on this branch); (None, [], '') when none is open."""
        return None, [], ""

    def hook_warnings(self, ctx: Context, staged: list[str]) -> list[str]:
        """What the pre-commit hook only warns about."""
        return []

    def code_scope(self, config: LedgerConfig) -> list[str]:
        """Globs a code path must match not to be warned about by :meth:`hook_warnings`
        (none: no such warning). A loop whose code commits go to the full check
        (``code_checked``) must judge a commit of code alone by the ledger tree at HEAD,
        the configuration and these globs only: the fast path answers the next such
        commit from a pass at the same tree (:mod:`ledger.hooks.fastcode`)."""
        return []

    def conclusion_problem(self, model: dict[str, Any]) -> str | None:
        """Why the conclusion a version file records (``model``: its parsed front matter)
        is not one this loop's ``conclude`` could have written from the statistics it
        records, with no recorded override (None: it could). ``git ledger verify`` asks
        at every conclusion: trailers say what a commit claims; the change is checked."""
        return None

    @abstractmethod
    def history_rules(self) -> list[dict[str, str]]:
        """What may change each kind of entry: ``{"paths": glob, "changed_by": ..., "rule": ...}``.

        ``paths`` is a glob inside the ledger directory; ``changed_by`` names the
        ``Ledger-Transition`` kinds allowed to write those paths (comma-separated),
        or ``hand`` for files people edit; ``"mode": "append"`` says an entry is
        only ever added (never edited, deleted only by a whole ``git revert``).
        ``git ledger verify`` enforces them (invariant 5), and the views of
        :meth:`view_paths` change only in a transition."""

    def fact_kinds(self) -> list[tuple[str, FactFn]]:
        """The facts this loop's entries hold (:mod:`ledger.core.facts`): a glob inside
        the ledger directory and the function that reads one blob's facts. ``verify``
        folds them over every parent of every merge: a key recorded with two values, or
        lost by a merge, is a finding whatever merge strategy made it."""
        return []

    def delivered(self, table: dict[str, Any]) -> list[str] | None:
        """The ledger files (inside its directory) a delivery branch keeps, read from the
        configuration ``table`` as it stood (ledger.toml's top level, or pyproject's
        ``[tool.ledger]``). A commit of kind ``deliver`` that takes the configuration
        away ends the ledger on its branch (``verify``). None: this loop delivers no
        branch, and its ledger never ends."""
        return None

    def delivery_problems(self, store: Store, source: str, tip: str) -> list[str]:
        """What keeps the delivery commit ``tip`` from being the delivery of the ledger at
        commit ``source`` (its ``Ledger-Delivered-From``): the loop finished there, the
        documents and the code as the ledger says. Read only for a delivery's last commit."""
        return [f"the {self.name} loop delivers no branch"]

    def history_checks(self) -> dict[str, Any]:
        """Rules on the content of a change, beyond :meth:`history_rules`: a glob inside
        the ledger directory -> ``check(kind, old, new, undoes)`` returning
        ``[(rule, message, fix)]`` for one commit's change of a matching path (``old``,
        ``new``: the bytes before and after, None when absent; ``undoes``: the change
        is a whole ``git revert`` of a transition). A check reads only the commit and
        its parent, as ``verify`` caches findings by commit."""
        return {}

    @abstractmethod
    def summary(self, ctx: Context, state: LedgerState) -> dict[str, Any]:
        """This loop's part of ``status --json`` (merged into the common part)."""

    @abstractmethod
    def next_action(self, ctx: Context, state: LedgerState) -> dict[str, Any]:
        """``{"action", "command", "reason"}`` (and optionally ``alternatives``): the one
        next step, as a command that is never refused once its placeholders are filled."""

    def fresh_next(
        self, cwd: Path, top: Path, common: Path, data: dict[str, Any]
    ) -> dict[str, Any]:
        """The next step in ``data`` (``status --json``, partly from its cache), corrected by
        what the ledger tree cannot say and is read fresh on every call in the work tree
        ``top`` of the common git dir ``common`` (code commits,
        files written but not committed, other branches). Machine problems come first
        and are not this method's (:mod:`ledger.core.machine`)."""
        nxt: dict[str, Any] = data["next"]
        return nxt

    def drafts(self) -> tuple[str, ...]:
        """Globs (inside the ledger dir) of entries a person writes in the work tree before
        the step that records them: uncommitted, they are the loop's work in progress,
        not an interrupted session's leftovers."""
        return ()

    def finding_action(self, ctx: Context, finding: dict[str, Any]) -> dict[str, Any] | None:
        """The action that clears a history finding of ``verify`` (its JSON), or None when
        only a person can (the finding is then shown with its fix)."""
        return None

    def headline(self, data: dict[str, Any]) -> str:
        """What ``status`` says first of this loop, from ``status --json``'s data."""
        counts = data["counts"]
        return (
            f"{counts['versions']} versions ({counts['open']} open, "
            f"{counts['concluded']} concluded), {counts['results']} results"
        )

    def report_section(self, ctx: Context) -> dict[str, Any]:
        """This loop's keys of the report's data."""
        return {}


def preset_for(config: LedgerConfig) -> Preset:
    """The preset object of a ledger's configuration."""
    return by_name(config.ledger.preset)


def by_name(name: str) -> Preset:
    """The preset called ``name`` (an unknown name is the default loop).

    Each loop is the package ``ledger.presets.<name>`` whose ``preset`` module
    defines ``PRESET``; the core knows the interface, never a loop's code, so
    the import is by name (the registry), not a static import.
    """
    import importlib

    module = importlib.import_module(f"ledger.presets.{_known(name)}.preset")
    preset: Preset = module.PRESET
    return preset


def _known(name: str) -> str:
    return name if name in NAMES else DEFAULT_PRESET


def require(config: LedgerConfig, name: str) -> None:
    """Refuse (exit 2) a verb of loop ``name`` in a ledger of another loop."""
    if config.ledger.preset != name:
        from ledger.core.errors import BadInput

        raise BadInput(
            f"this ledger's preset is {config.ledger.preset!r}, not {name!r}",
            f"use a repository set up with git ledger init --preset {name}",
        )


def headline(data: dict[str, Any]) -> str:
    """The first line of ``status`` for people, from its JSON (what each loop counts)."""
    where = f"{data['preset']} ledger in {data['dir']}/ on {data['branch'] or 'detached HEAD'}"
    return f"{where}: {by_name(data['preset']).headline(data)}"
