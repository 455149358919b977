"""The versions loop's facts (:mod:`ledger.core.facts`): each result, by its version,
gate and seed or window (its path: ``results/<V>/<gate>/<stem>.json``, the stem carrying
the replicate slot and a failed run's mark), valued by its bytes; and, from a version's
or matrix's file, its registration (the frozen part), its verdict (the conclusion) and
its voiding, each valued by a digest of what it says (the file's generated tables
change with every record and are no fact)."""

from __future__ import annotations

from ledger.core.entrykind import classify
from ledger.core.facts import Fact, FactFn, FactReader, digest


def result_facts(_reader: FactReader, rel: str, blob: str) -> list[Fact]:
    parts = rel.split("/")
    if len(parts) != 4 or not parts[3].endswith(".json"):
        return []
    vid, gate, stem = parts[1], parts[2], parts[3][: -len(".json")]
    return [Fact(f"result {vid} {gate} {stem}", blob, vid)]


def step_facts(reader: FactReader, rel: str, blob: str) -> list[Fact]:
    what = classify(rel, reader.prefix)
    if what not in ("version", "matrix"):
        return []
    parsed = reader.parse(what, blob, rel)
    if isinstance(parsed, str):
        return []  # unparseable-entry: judged where it was written
    from ledger.core.verify.registrations import frozen

    vid = rel[: -len("-matrix.md")] if what == "matrix" else rel[: -len(".md")]
    model = parsed["model"]
    fixed, closing = frozen(what, parsed)
    found = [Fact(f"registration {vid}", fixed, vid)]
    if what == "matrix":
        if model.get("concluded") or model.get("winner"):
            found.append(Fact(f"verdict {vid}", closing, vid))
        return found
    if model.get("conclusion"):
        found.append(Fact(f"verdict {vid}", digest(model["conclusion"]), vid))
    if model.get("void"):
        found.append(Fact(f"void {vid}", digest(model["void"]), vid))
    return found


FACTS: list[tuple[str, FactFn]] = [("results/**", result_facts), ("*.md", step_facts)]
