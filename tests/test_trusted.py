"""Models rebuilt from their own validated dumps (ledger.core.model.trusted) are the
models validation gives: for the configuration of every preset and for every kind of
entry, and for every model field that holds another model."""

from __future__ import annotations

import tomllib
import types
from pathlib import Path
from typing import Any, Union, get_args, get_origin

import pytest
from pydantic import BaseModel

from ledger.core.model import entries
from ledger.core.model.config import LedgerConfig, parse_config
from ledger.core.model.trusted import _shape, construct, plain, rebuild
from tests.helpers import Repo

ROOT = Path(__file__).resolve().parent.parent
TEMPLATES = sorted((ROOT / "templates").glob("ledger-*.toml"))

RICH = """
[ledger]
dir = "log"
id_prefix = "R"

[gates.recent]
metric = "score"
direction = "higher"
noise_floor = 0.5
bar = { mean = 1.0, p25 = 0.5 }

[gates.recent.metrics]
score = "$.score"
loss = { path = "$.loss", direction = "lower" }

[gates.older]
metric = "loss"
direction = "lower"
mode = "walk-forward"
command = ["python", "eval.py"]
metrics = { loss = "$.loss" }

[stats]
matrix_sigma = { "3" = 2.5 }

[run]
command = ["python", "train.py"]

[params]
files = ["params.yaml"]
"""


def configs() -> list[tuple[str, str]]:
    return [(path.name, path.read_text()) for path in TEMPLATES] + [("rich", RICH)]


@pytest.mark.parametrize(("name", "text"), configs(), ids=[n for n, _ in configs()])
def test_a_configuration_rebuilt_from_its_dump_is_the_validated_one(name: str, text: str) -> None:
    config = parse_config(text)
    dumped = config.model_dump(mode="json")
    again = rebuild(LedgerConfig, dumped)
    assert again == config
    assert plain(again) == dumped and plain(config) == dumped
    assert_same_types(again, config)
    assert tomllib.loads(text)  # the corpus is real TOML, not a dict made up here


def entry_models() -> list[BaseModel]:
    stat = entries.GateStat(
        gate="recent", metric="score", direction="higher", n=3, n_eff=3.0, mean=1.5, outcome="x"
    )
    return [
        entries.VersionFront(
            id="V2",
            parent="V1",
            bet="b",
            gate="recent",
            files=["a.py"],
            falsifier="f",
            conclusion=entries.Conclusion(verdict="confirmed", next="n", gates=[stat, stat]),
        ),
        entries.VersionFront(id="V1", bet="b", gate="recent", falsifier="f"),
        entries.ReflectionFront(id="R", after="V5", triggers=["streak"], exhausted=["cache"]),
        entries.PhaseFront(state="parked", conditions={"a": "held: yes"}),
        entries.MatrixFront(
            id="V9",
            baselines={"recent": "V8"},
            cells=[
                entries.MatrixCell(
                    name="A",
                    slug="a",
                    bet="b",
                    gate="recent",
                    falsifier="f",
                    branch="ledger/V9.A-a",
                )
            ],
            verdicts={"A": "confirmed"},
            comparison={"A": stat},
        ),
        entries.ResultFile(
            version="V1",
            gate="recent",
            seed="1",
            metrics={"score": 1.0},
            provenance=entries.Provenance(
                source_sha256="0" * 64, source_name="r.json", code_commit=None, dirty=False
            ),
            params={"lr": [0.1, {"deep": None}]},
        ),
    ]


@pytest.mark.parametrize("model", entry_models(), ids=lambda m: type(m).__name__)
def test_an_entry_rebuilt_from_its_dump_is_the_validated_one(model: BaseModel) -> None:
    dumped = model.model_dump(mode="json")
    again = rebuild(type(model), dumped)
    assert again == model
    assert plain(again) == dumped
    assert_same_types(again, model)


def test_a_dump_without_a_field_gets_its_default() -> None:
    """What an older dump of a model that has since gained a field would be (the caches
    are keyed by the code, so only by hand): the field takes its default, as
    ``model_construct`` gives it."""
    front = entries.VersionFront(id="V1", bet="b", gate="recent", falsifier="f", ships=["x"])
    dumped = front.model_dump(mode="json")
    del dumped["ships"], dumped["void"]
    again = rebuild(entries.VersionFront, dumped)
    assert again.ships == [] and again.void is None and again.bet == "b"
    assert plain(again) == {**dumped, "ships": [], "void": None}


def assert_same_types(a: Any, b: Any) -> None:
    assert type(a) is type(b), (a, b)
    if isinstance(a, BaseModel):
        for name in type(a).model_fields:
            assert_same_types(getattr(a, name), getattr(b, name))
    elif isinstance(a, list):
        for x, y in zip(a, b, strict=True):
            assert_same_types(x, y)
    elif isinstance(a, dict):
        for key in a:
            assert_same_types(a[key], b[key])


def reachable(root: type[BaseModel], seen: set[type[BaseModel]]) -> None:
    if root in seen:
        return
    seen.add(root)
    for field in root.model_fields.values():
        for model in models_in(field.annotation):
            reachable(model, seen)


def models_in(annotation: Any) -> list[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [m for arg in get_args(annotation) for m in models_in(arg)]


def test_every_field_that_holds_a_model_is_one_rebuild_knows() -> None:
    """A new field shape (a tuple of models, a union of two) would be left a dict by
    rebuild: every model the configuration and the entries reach is checked."""
    roots = [LedgerConfig, *(type(m) for m in entry_models())]
    seen: set[type[BaseModel]] = set()
    for root in roots:
        reachable(root, seen)
    assert entries.GateStat in seen and len(seen) > 15
    for model in seen:
        for name, field in model.model_fields.items():
            if models_in(field.annotation):
                assert _shape(field.annotation) is not None, f"{model.__name__}.{name}"
            else:
                origin = get_origin(field.annotation)
                assert origin not in (Union, types.UnionType) or not any(
                    models_in(a) for a in get_args(field.annotation)
                )


def test_a_configuration_is_validated_once_then_rebuilt_and_a_bad_one_never_kept(
    repo: Repo,
) -> None:
    cache = repo.path / ".git/ledger/cache/config.json"
    repo.ok("status")
    assert cache.exists() and '"gates"' in cache.read_text()
    kept = cache.read_text()
    repo.ok("status")
    assert cache.read_text() == kept
    toml = repo.path / "ledger.toml"
    text = toml.read_text()
    toml.write_text("noise = 1\n" + text)
    for _ in range(2):
        bad = repo.run("status")
        assert bad.code == 2 and "unknown key 'noise'" in bad.err, bad.err
    assert cache.read_text() == kept
    # A kept configuration of another shape is parsed again, never believed.
    assert '"gates":{' in kept
    cache.write_text(kept.replace('"gates":{', '"gates":7,"x":{'))
    toml.write_text(text)
    assert repo.ok("status", "--json").json()["counts"]["versions"] == 0


def test_a_constructed_model_is_the_validated_one_with_its_defaults() -> None:
    values = {"gate": "g", "metric": "m", "direction": "lower", "n": 2, "n_eff": 2.0}
    built = construct(entries.GateStat, **values, mean=1.5, outcome="x")
    assert built == entries.GateStat(**values, mean=1.5, outcome="x")
    assert built.unit == "" and built.comparable is True and built.sigma is None
    assert construct(entries.Conclusion, verdict="refuted", next="n").gates == []
    # A default factory is called for each model (two never share one list), and the
    # model is the validated one all the way down.
    cells = [
        construct(entries.VersionFront, id=f"V3.{c}", bet="b", gate="g", falsifier="f")
        for c in "AB"
    ]
    assert cells[0].files == [] and cells[0].files is not cells[1].files
    assert cells[0] == entries.VersionFront(id="V3.A", bet="b", gate="g", falsifier="f")
    assert plain(cells[0]) == cells[0].model_dump(mode="json")
