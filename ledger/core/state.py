"""The ledger's state: a pure function of one commit's tree.

``load_state`` classifies every file under the ledger dir by its path, parses
it (through the blob-id cache) and returns a :class:`LedgerState`. A file that
does not parse is not fatal for reading: it is listed in ``problems`` so status
can show it and hooks can refuse it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ValidationError

from ledger.core.cache import EntryCache
from ledger.core.entrykind import PHASE_FILE as PHASE_FILE
from ledger.core.entrykind import README as README
from ledger.core.entrykind import TEMPLATE as TEMPLATE
from ledger.core.entrykind import classify as classify
from ledger.core.errors import BadInput
from ledger.core.model.config import LedgerConfig
from ledger.core.model.documents import decode_text, get_section, load_json, parse_document
from ledger.core.model.entries import (
    HYPOTHESIS,
    MatrixFront,
    PhaseFront,
    ReflectionFront,
    ResultFile,
    VersionFront,
)
from ledger.core.model.ids import VersionId, try_parse_version
from ledger.core.model.trusted import construct, rebuild
from ledger.core.reflectiontext import FILLER as FILLER
from ledger.core.reflectiontext import MIN_WORDS as MIN_WORDS
from ledger.core.reflectiontext import PLACEHOLDER as PLACEHOLDER
from ledger.core.reflectiontext import TARGET_AUDIT as TARGET_AUDIT
from ledger.core.reflectiontext import lacking as lacking
from ledger.core.reflectiontext import missing_from as missing_from
from ledger.core.reflectiontext import own_text as own_text
from ledger.core.reflectiontext import read_sections as read_sections
from ledger.core.reflectiontext import reflection_missing as reflection_missing
from ledger.core.reflectiontext import section_words as section_words
from ledger.core.reflectiontext import target_audit as target_audit
from ledger.core.repobase import result_path, result_stem
from ledger.core.store import Snapshot, Store


@dataclass(frozen=True)
class Version:
    front: VersionFront
    path: str
    hypothesis: str

    @property
    def id(self) -> str:
        return self.front.id

    @property
    def concluded(self) -> bool:
        # A void version's verdict (if any) never counts: not concluded, not open.
        return self.front.conclusion is not None and not self.front.void

    @property
    def verdict(self) -> str | None:
        return self.front.conclusion.verdict if self.front.conclusion else None


class Result:
    """One result file. Its model is built on first use of :attr:`data`.

    A ledger of 10,000 steps holds 50,000 results and a transition reads a handful:
    validating every cached entry again cost a ``conclude`` there seconds and
    hundreds of megabytes. The cached dict was produced by this very code (the
    entry cache is keyed by it) from a file that validated, so the fields every
    scan asks for (version, gate, status, re-measurement) are read from it as is.
    """

    __slots__ = ("_data", "_raw", "path")

    def __init__(self, data: ResultFile | dict[str, Any], path: str) -> None:
        self.path = path
        if isinstance(data, ResultFile):
            self._data: ResultFile | None = data
            self._raw = data.model_dump(mode="json")
        else:
            self._data, self._raw = None, data

    @property
    def data(self) -> ResultFile:
        if self._data is None:
            self._data = rebuild(ResultFile, self._raw)
        return self._data

    @property
    def version(self) -> str:
        return str(self._raw["version"])

    @property
    def gate(self) -> str:
        return str(self._raw["gate"])

    @property
    def status(self) -> str:
        return str(self._raw["status"])

    @property
    def remeasured(self) -> bool:
        return self._raw["provenance"].get("remeasure") is not None

    @property
    def dirty(self) -> bool:
        return bool(self._raw["provenance"]["dirty"])

    @property
    def metrics(self) -> dict[str, float]:
        found: dict[str, float] = self._raw["metrics"]
        return found

    @property
    def params(self) -> dict[str, Any] | None:
        found = self._raw.get("params")
        return found if isinstance(found, dict) else None

    @property
    def ran_at(self) -> tuple[bool, str | None]:
        """(measured by ``run`` here, the code commit it ran); ``record`` ingests a file
        measured elsewhere, and its commit is only when it was ingested."""
        provenance = self._raw["provenance"]
        return "command" in (provenance.get("conditions") or {}), provenance.get("code_commit")

    @property
    def conditions(self) -> dict[str, str]:
        """The run conditions it was measured under (``provenance.conditions``)."""
        found: dict[str, str] = self._raw["provenance"].get("conditions") or {}
        return found

    @property
    def key(self) -> str:
        window = self._raw.get("window")
        return str(window) if window is not None else str(self._raw.get("seed"))

    def __repr__(self) -> str:
        return f"Result({self.path!r})"


@dataclass(frozen=True)
class Reflection:
    front: ReflectionFront
    path: str
    missing: tuple[str, ...]
    retired: str | None = None  # the gate its target audit retired
    # What each missing section lacks, in the words of reflectiontext.lacking.
    lacks: tuple[str, ...] = ()

    @property
    def complete(self) -> bool:
        return not self.missing


@dataclass
class LedgerState:
    config: LedgerConfig
    commit_id: str | None
    versions: list[Version] = field(default_factory=list)
    results: list[Result] = field(default_factory=list)
    reflections: list[Reflection] = field(default_factory=list)
    matrices: list[tuple[str, MatrixFront]] = field(default_factory=list)
    phase: PhaseFront | None = None
    problems: list[tuple[str, str]] = field(default_factory=list)
    files: dict[str, str] = field(default_factory=dict)
    # Where derived caches live (.git/ledger/); None: compute, remember nothing.
    state_dir: str | None = None
    # Lookup indexes, built on first use: rules ask per version and gate, and a
    # scan per question made them O(versions x results) at 10,000 steps.
    # init=False, so dataclasses.replace() (new lists) starts without them.
    _versions_by_id: dict[str, Version] | None = field(default=None, init=False, repr=False)
    _results_by_key: dict[tuple[str, str], list[Result]] | None = field(
        default=None, init=False, repr=False
    )
    # What load_state built, for a later load of another commit (load_state's previous),
    # and under which reading (dir, prefix, reflection bar): kept by replace(), which
    # the verbs use to freeze a configuration, as the reading says what it is good for.
    _reading: tuple[str, str, int] | None = field(default=None, repr=False, compare=False)
    _built: dict[tuple[str, str], Any] = field(default_factory=dict, repr=False, compare=False)
    _listings: dict[Any, Any] | None = field(default=None, repr=False, compare=False)

    def version(self, vid: str) -> Version | None:
        if self._versions_by_id is None or len(self._versions_by_id) != len(self.versions):
            self._versions_by_id = {v.id: v for v in self.versions}
        return self._versions_by_id.get(vid)

    def no_version(self, vid: str, hint: str = "see 'git ledger status'") -> BadInput:
        """The error for a version this state lacks: its file's own problem when it has
        one (it does not parse, or names another id), never "no version" for a file
        that is there."""
        parsed = try_parse_version(vid, self.config.ledger.id_prefix)
        base = self.config.dir
        path = f"{base}/{parsed.base}-matrix.md" if parsed and parsed.cell else f"{base}/{vid}.md"
        for where, error in self.problems:
            if where == path:
                text = error if error.startswith(f"{path}:") else f"{path}: {error}"
                return BadInput(text, f"fix {path} (its committed history: git log -p -- {path})")
        return BadInput(f"no version {vid!r} in {base}/", hint)

    def open_versions(self) -> list[Version]:
        return [
            v for v in self.versions if not v.concluded and not v.front.matrix and not v.front.void
        ]

    def open_matrices(self) -> list[MatrixFront]:
        return [m for _, m in self.matrices if not m.concluded]

    def matrix(self, mid: str) -> tuple[str, MatrixFront] | None:
        return next(((p, m) for p, m in self.matrices if m.id == mid), None)

    def concluded(self) -> list[Version]:
        return [v for v in self.versions if v.concluded]

    def results_for(
        self, vid: str, gate: str, *, ok_only: bool = True, remeasured: bool = False
    ) -> list[Result]:
        """Results a verdict stands on; ``remeasured``: only the later re-measurements."""
        if self._results_by_key is None:
            index: dict[tuple[str, str], list[Result]] = {}
            for r in self.results:
                index.setdefault((r.version, r.gate), []).append(r)
            self._results_by_key = index
        found = self._results_by_key.get((vid, gate), [])
        return [
            r for r in found if (r.status == "ok" or not ok_only) and r.remeasured == remeasured
        ]

    def reflection_for(self, vid: str) -> Reflection | None:
        return next((r for r in self.reflections if r.front.after == vid), None)

    def version_key(self, vid: str) -> VersionId:
        parsed = try_parse_version(vid, self.config.ledger.id_prefix)
        return parsed or VersionId(self.config.ledger.id_prefix, 0)


def cell_versions(path: str, matrix: MatrixFront) -> list[Version]:
    """A matrix's cells as versions (V213.A ...), concluded when the matrix is.

    They let ``record``/``run`` work on a cell and let the reflection triggers
    see a matrix whose cells all stayed inside noise as they would see
    sequential versions.
    """
    from ledger.core.model.entries import Conclusion

    # Built from the matrix's validated entry (rebuilt from the cache): nothing to
    # validate again, and no validator built for a read (ledger.core.model.trusted).
    out = []
    for cell in matrix.cells:
        conclusion = None
        verdict = matrix.verdicts.get(cell.name)
        if matrix.concluded and verdict is not None:
            stat = matrix.comparison.get(cell.name)
            conclusion = construct(
                Conclusion,
                verdict=verdict,
                next=f"matrix {matrix.id} concluded",
                override=matrix.override if matrix.winner == cell.name else None,
                gates=[stat] if stat is not None else [],
            )
        front = construct(
            VersionFront,
            id=f"{matrix.id}.{cell.name}",
            bet=cell.bet,
            gate=cell.gate,
            files=cell.files,
            falsifier=cell.falsifier,
            subsystem=cell.subsystem,
            matrix=matrix.id,
            conclusion=conclusion,
        )
        out.append(Version(front, path, ""))
    return out


def _validate(model: type[BaseModel], data: Any, where: str) -> dict[str, Any]:
    try:
        return model.model_validate(data).model_dump(mode="json")
    except ValidationError as exc:
        err = exc.errors()[0]
        key = ".".join(str(p) for p in err["loc"]) or "(top level)"
        raise BadInput(f"{where}: '{key}': {err['msg']}") from None


def parse_entry(kind: str, data: bytes, where: str) -> dict[str, Any]:
    """Parse and validate one entry file into cacheable JSON data."""
    if kind == "result":
        return {"model": _validate(ResultFile, load_json(data, where), where)}
    doc = parse_document(decode_text(data, where), where)
    if kind == "version":
        front = _validate(VersionFront, doc.front, where)
        hypothesis = get_section(doc.body, HYPOTHESIS)
        if hypothesis is None:
            raise BadInput(f"{where}: missing the '## {HYPOTHESIS}' section")
        return {"model": front, "hypothesis": hypothesis}
    if kind == "reflection":
        front = _validate(ReflectionFront, doc.front, where)
        words, why = read_sections(doc.body, bool(front.get("target_gate")))
        retired = None
        if front.get("target_gate"):
            retired = front["target_gate"] if target_audit(doc.body)[1] == "retire" else None
        return {
            "model": front,
            "missing": list(missing_from(words, MIN_WORDS)),
            "words": words,
            "why": why,
            "retired": retired,
        }
    if kind == "matrix":
        return {"model": _validate(MatrixFront, doc.front, where)}
    if kind == "phase":
        return {"model": _validate(PhaseFront, doc.front, where)}
    raise BadInput(f"{where}: unknown entry kind {kind}")


def check_placement(kind: str, rel: str, model: dict[str, Any]) -> str | None:
    """The file name must agree with the id inside it (one file per fact)."""
    name = rel.rsplit("/", 1)[-1]
    if kind == "version" and name != f"{model['id']}.md":
        return f"file name does not match its id {model['id']!r}"
    if kind == "reflection" and name != f"REFLECTION_{model['after']}.md":
        return f"file name does not match 'after: {model['after']}'"
    if kind == "matrix" and name != f"{model['id']}-matrix.md":
        return f"file name does not match its id {model['id']!r}"
    if kind == "result":
        stem = result_stem(
            model.get("seed"),
            model.get("window"),
            model.get("replicate"),
            model.get("status") == "failed",
        )
        expected = result_path("", model["version"], model["gate"], stem)
        if rel != expected:
            return f"path does not match version/gate/seed inside it (expected {expected})"
    return None


# What a load made of each file, by (path, blob), kept on its state: a command that
# loads the state again after its own transition (conclude's ``next:`` line) passes
# the state it had and rebuilds only the files that transition changed. Built entries
# are immutable (frozen models, a Result over the cached dict it already shares).
_Built = tuple[str | None, Any]


def load_state(
    store: Store,
    config: LedgerConfig,
    snap: Snapshot,
    cache: EntryCache | None = None,
    previous: LedgerState | None = None,
) -> LedgerState:
    """The state at ``snap``; ``previous``, a state this process loaded (of another
    commit), lends what it built of the files that did not change."""
    base = config.dir
    own_cache = cache is None
    cache = cache or EntryCache(store.ledger_state_dir)
    state = LedgerState(
        config=config, commit_id=snap.commit_id, state_dir=str(store.ledger_state_dir)
    )
    prefix = config.ledger.id_prefix
    # Everything a file's outcome depends on besides its path and content.
    reading = (base, prefix, config.triggers.reflection_min_words)
    lent = previous is not None and previous._reading == reading
    known = previous._built if previous is not None and lent else {}
    files = snap.files(base, previous._listings if previous is not None else None)
    state.files = files
    built: dict[tuple[str, str], _Built] = {}
    for path in sorted(files):
        blob = files[path]
        outcome = known.get((path, blob))
        if outcome is None:
            outcome = _build(cache, snap, config, base, prefix, path, blob)
        built[path, blob] = outcome
        kind, made = outcome
        if kind is None:
            continue
        if kind == "problem":
            state.problems.append((path, made))
        elif kind == "version":
            state.versions.append(made)
        elif kind == "result":
            state.results.append(made)
        elif kind == "reflection":
            state.reflections.append(made)
        elif kind == "matrix":
            state.matrices.append((path, made))
        elif kind == "phase":
            state.phase = made
    state._reading, state._built, state._listings = reading, built, snap.listings
    for path, matrix in state.matrices:
        state.versions.extend(cell_versions(path, matrix))
    state.versions.sort(key=lambda v: state.version_key(v.id))
    # The loop's own entries (a campaign's candidates, a batch loop's weights...):
    # one that does not parse is a listed problem, never dropped silently.
    from ledger.core.loops import preset_for

    state.problems.extend(preset_for(config).problems(store, config, snap))
    if own_cache:
        cache.save()
    return state


def _build(
    cache: EntryCache,
    snap: Snapshot,
    config: LedgerConfig,
    base: str,
    prefix: str,
    path: str,
    blob: str,
) -> _Built:
    """What one file of the ledger dir is in the state: (kind, the entry built), or
    ("problem", why), or (None, None) for a file that is no entry."""
    rel = path[len(base) + 1 :]
    kind = classify(rel, prefix)
    if kind is None:
        return None, None
    key = f"{kind}:{blob}"
    parsed = cache.get(key)
    if parsed is None:
        try:
            parsed = parse_entry(kind, snap.read_blob(blob), path)
        except BadInput as exc:
            parsed = {"error": exc.message}
        cache.put(key, parsed)
    if "error" in parsed:
        return "problem", str(parsed["error"])
    model = parsed["model"]
    misplaced = check_placement(kind, rel, model)
    if misplaced:
        return "problem", misplaced
    # Dumped by this very code from a model that validated (parse_entry; the cache is
    # keyed by the code): rebuilt, not validated again (ledger.core.model.trusted).
    if kind == "version":
        return kind, Version(rebuild(VersionFront, model), path, str(parsed["hypothesis"]))
    if kind == "result":
        return kind, Result(model, path)
    if kind == "reflection":
        min_words = config.triggers.reflection_min_words
        return kind, Reflection(
            rebuild(ReflectionFront, model),
            path,
            missing_from(parsed["words"], min_words)
            if "words" in parsed
            else tuple(parsed["missing"]),
            parsed.get("retired"),
            lacking(parsed["words"], parsed.get("why", {}), min_words)
            if "words" in parsed
            else tuple(parsed["missing"]),
        )
    if kind == "matrix":
        return kind, rebuild(MatrixFront, model)
    if kind == "phase":
        return kind, rebuild(PhaseFront, model)
    return None, None


def load_version(config: LedgerConfig, snap: Snapshot, vid: str) -> Version | None:
    """One version (or matrix cell) read on its own, without the rest of the ledger.

    None when there is no such file; a file that does not parse raises its error.

    A transition that touches one version (``record``, a finished ``run``) must
    not cost more in a ledger of 10,000 steps than in one of 10.
    """
    parsed = try_parse_version(vid, config.ledger.id_prefix)
    if parsed is None:
        return None
    base = config.dir
    if parsed.cell:
        path = f"{base}/{parsed.base}-matrix.md"
        data = snap.read(path)
        if data is None:
            return None
        matrix = MatrixFront.model_validate(parse_entry("matrix", data, path)["model"])
        return next((v for v in cell_versions(path, matrix) if v.id == vid), None)
    path = f"{base}/{vid}.md"
    data = snap.read(path)
    if data is None:
        return None
    # A file that is there but does not parse is reported as such (path, line,
    # reason), never as a version that does not exist.
    parsed_entry = parse_entry("version", data, path)
    front = VersionFront.model_validate(parsed_entry["model"])
    if front.id != vid:
        raise BadInput(
            f"{path}: its id is {front.id!r}, not {vid!r}", "the file name must match its id"
        )
    return Version(front, path, str(parsed_entry["hypothesis"]))
