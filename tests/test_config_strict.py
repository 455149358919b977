"""ledger.toml types are strict: a value of the wrong type is exit 2 naming the key."""

from __future__ import annotations

import pytest

from tests.helpers import Repo, fingerprint


@pytest.mark.parametrize(
    ("old", "new", "key"),
    [
        ("sigma_k = 2.0", "sigma_k = true", "sigma_k"),
        ("noise_floor = 1.0", 'noise_floor = "1.0"', "noise_floor"),
        ("noise_floor = 1.0", "noise_floor = inf", "noise_floor"),
        ("sigma_k = 2.0", "sigma_k = nan", "sigma_k"),
        ("min_windows = 5", "min_windows = 5.5", "min_windows"),
        (
            "consecutive_refutations = 3",
            "consecutive_refutations = true",
            "consecutive_refutations",
        ),
    ],
)
def test_wrong_types_in_ledger_toml_are_bad_input_naming_the_key(
    repo: Repo, old: str, new: str, key: str
) -> None:
    toml = repo.path / "ledger.toml"
    text = toml.read_text()
    assert old in text, old
    toml.write_text(text.replace(old, new))
    before = fingerprint(repo.path)
    result = repo.run("status")
    assert result.code == 2, (result.code, result.err)
    assert key in result.err and len(result.err.strip().splitlines()) == 1, result.err
    assert fingerprint(repo.path) == before


def test_an_integer_where_a_float_is_expected_is_fine(repo: Repo) -> None:
    toml = repo.path / "ledger.toml"
    toml.write_text(toml.read_text().replace("sigma_k = 2.0", "sigma_k = 2"))
    assert repo.run("status").code == 0
