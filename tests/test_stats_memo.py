"""scipy's answers remembered across processes (ledger.core.distributions._Answers).

The property: a process that asks a question an earlier process answered, in
this repository or in another one of the same user, gets the very same double
without importing scipy; a file that is corrupt, or was written by other code or
another scipy, is never believed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ledger.core import distributions

ROOT = Path(__file__).resolve().parents[1]

# The questions a gate asks: a configured floor (normal), and estimated σ at small n.
ASK = """
import json, sys
sys.path.insert(0, {root!r})
from ledger.core import stats
stats.remember_answers(__import__("pathlib").Path({path!r}))
kw = dict(sigma_k=2.0, alpha=0.05, power=0.8, small_n=30)
answers = [stats.mde_for_se(1.0, df, **kw) for df in (None, 2.0, 4.0)]
answers.append(stats.critical_k(3.0, **{{k: kw[k] for k in ("sigma_k", "alpha", "small_n")}})[0])
print(json.dumps({{"answers": answers, "scipy": "scipy" in sys.modules}}))
"""


def ask(path: Path, user: Path | None = None) -> dict[str, object]:
    """The answers of a process whose repository cache is ``path``, and whose user
    cache directory is ``user`` (none: no home, so only the repository's file)."""
    code = ASK.format(root=str(ROOT), path=str(path))
    env = {**os.environ, "XDG_CACHE_HOME": str(user or ""), "HOME": os.environ["HOME"]}
    if user is None:
        env["HOME"] = ""
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
    ).stdout
    result: dict[str, object] = json.loads(out)
    return result


def scipy_answers() -> list[float]:
    """The same questions asked of scipy directly, past both caches."""
    nc = distributions.power_nc.__wrapped__.__wrapped__  # type: ignore[attr-defined]
    tq = distributions.t_quantile.__wrapped__.__wrapped__  # type: ignore[attr-defined]
    answers = [nc(2.0, None, 0.8)]
    for df in (2.0, 4.0):
        k = max(2.0, tq(0.975, df))
        answers.append(nc(k, df, 0.8))
    answers.append(tq(0.975, 3.0))
    return answers


def test_a_second_process_gets_the_same_answers_without_scipy(tmp_path: Path) -> None:
    path = tmp_path / "cache" / "stats.json"
    first = ask(path)
    assert first["scipy"] is True and path.exists()
    second = ask(path)
    assert second["scipy"] is False
    assert second["answers"] == first["answers"] == scipy_answers()


@pytest.mark.parametrize(
    "text",
    [
        "{not json",
        json.dumps({"key": "another program", "answers": {"power_nc(2.0, None, 0.8)": 42.0}}),
        json.dumps({"key": "another program", "data": {"power_nc(2.0, None, 0.8)": 42.0}}),
        json.dumps({"answers": {"power_nc(2.0, None, 0.8)": 42.0}}),
        json.dumps({"data": {"power_nc(2.0, None, 0.8)": 42.0}}),
        json.dumps([1, 2]),
    ],
    ids=["corrupt", "old-format", "foreign-key", "no-key", "no-key-data", "not-a-table"],
)
def test_a_file_that_is_not_ours_is_never_believed(tmp_path: Path, text: str) -> None:
    path = tmp_path / "stats.json"
    path.write_text(text)
    result = ask(path)
    assert result["scipy"] is True
    assert result["answers"] == scipy_answers()
    # ... and it is replaced by one the next process can use.
    assert ask(path) == {"answers": result["answers"], "scipy": False}


def test_a_wrong_answer_under_the_right_key_is_what_a_cache_would_give(tmp_path: Path) -> None:
    """The check above can fail: the memo is really read (same key, planted answer)."""
    path = tmp_path / "stats.json"
    ask(path)
    data = json.loads(path.read_text())
    data["data"]["power_nc(2.0, None, 0.8)"] = 42.0
    path.write_text(json.dumps(data))
    assert ask(path)["answers"][0] == 42.0  # type: ignore[index]


def test_an_unwritable_cache_only_costs_speed(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    result = ask(blocker / "stats.json")  # its parent is a file: nothing can be written
    assert result["answers"] == scipy_answers()


def test_another_repository_of_the_same_user_gets_them_without_scipy(tmp_path: Path) -> None:
    user = tmp_path / "xdg"
    first = ask(tmp_path / "one" / "stats.json", user)
    assert first["scipy"] is True
    assert (user / "git-ledger" / "stats.json").exists()
    second = ask(tmp_path / "two" / "stats.json", user)
    assert second == {"answers": first["answers"], "scipy": False}
    assert second["answers"] == scipy_answers()


def test_the_user_file_is_really_read_and_a_foreign_one_is_not_believed(tmp_path: Path) -> None:
    user = tmp_path / "xdg"
    ask(tmp_path / "one" / "stats.json", user)
    shared = user / "git-ledger" / "stats.json"
    data = json.loads(shared.read_text())
    data["data"]["power_nc(2.0, None, 0.8)"] = 42.0
    shared.write_text(json.dumps(data))
    assert ask(tmp_path / "two" / "stats.json", user)["answers"][0] == 42.0  # type: ignore[index]
    shared.write_text(json.dumps({"key": "another program", "data": data["data"]}))
    result = ask(tmp_path / "three" / "stats.json", user)
    assert result == {"answers": scipy_answers(), "scipy": True}


def test_the_repositorys_own_answer_comes_before_the_users(tmp_path: Path) -> None:
    user = tmp_path / "xdg"
    repo = tmp_path / "one" / "stats.json"
    ask(repo, user)
    data = json.loads(repo.read_text())
    data["data"]["power_nc(2.0, None, 0.8)"] = 42.0
    repo.write_text(json.dumps(data))
    assert ask(repo, user)["answers"][0] == 42.0  # type: ignore[index]
    assert ask(tmp_path / "two" / "stats.json", user)["answers"] == scipy_answers()


def test_an_unwritable_user_cache_only_costs_speed(tmp_path: Path) -> None:
    user = tmp_path / "xdg"
    user.write_text("")  # a file where the directory would be
    repo = tmp_path / "one" / "stats.json"
    assert ask(repo, user)["answers"] == scipy_answers()
    assert ask(repo, user)["scipy"] is False  # the repository's file still holds them


@pytest.mark.parametrize(
    ("xdg", "home", "expected"),
    [
        ("/x/cache", "/h", "/x/cache/git-ledger/stats.json"),
        ("", "/h", "/h/.cache/git-ledger/stats.json"),
        ("relative/cache", "/h", "/h/.cache/git-ledger/stats.json"),  # not absolute: ignored
        ("", "", None),
        ("", "relative", None),
    ],
)
def test_the_user_file_follows_the_xdg_rules(
    monkeypatch: pytest.MonkeyPatch, xdg: str, home: str, expected: str | None
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", xdg)
    monkeypatch.setenv("HOME", home)
    found = distributions.user_file()
    assert (str(found) if found is not None else None) == expected
