"""`next`'s proposed registration names only planned files that exist.

The parent version's planned files are read from the ledger; a planned file may
never have been written, or code moved since (a restructure, a rename), so next
keeps the planned files still in the work tree and asks the person to name them
(``<FILES>``) when none is left: a registration it proposes never names a file
that is not there. Through git's dispatch, hooks installed.
"""

from __future__ import annotations

from tests.helpers import Repo
from tests.test_next_refusals import concluded_v1, follow


def _concluded_v2(repo: Repo, files: str) -> None:
    concluded_v1(repo)
    repo.ok("register", "V2", "--bet", "b", "--gate", "recent", "--files", files,
            "--falsifier", "f")  # fmt: skip
    (repo.path / "src/cache.py").write_text("SIZE = 80\n")
    repo.git("commit", "-q", "-am", "perf(cache): 80", "-m", "Ledger-Step: V2")
    repo.ok("run", "V2", "--gate", "recent", "--seeds", "1,2,3")
    repo.ok("conclude", "V2", "--verdict", "inconclusive", "--next", "go on")


def test_a_planned_file_never_written_is_not_proposed(bare_repo: Repo) -> None:
    _concluded_v2(bare_repo, "src/cache.py,src/never.py")
    nxt = bare_repo.ok("next", "--json").json()
    assert nxt["action"] == "register" and nxt["step"] == "V3", nxt
    assert "--files src/cache.py " in nxt["command"] and "never" not in nxt["command"], nxt
    follow(bare_repo, nxt)


def test_no_planned_file_left_the_person_names_them(bare_repo: Repo) -> None:
    _concluded_v2(bare_repo, "src/never.py")
    nxt = bare_repo.ok("next", "--json").json()
    assert nxt["action"] == "register" and "never" not in nxt["command"], nxt
    assert "--files '<FILES>'" in nxt["command"] and "<FILES>" in nxt["placeholders"], nxt
    follow(bare_repo, nxt)  # the person names the files: not refused
    assert bare_repo.ok("status", "--json").json()["open"] == ["V3"]


def test_planned_files_that_are_there_are_kept(bare_repo: Repo) -> None:
    concluded_v1(bare_repo)
    nxt = bare_repo.ok("next", "--json").json()
    assert "--files src/cache.py" in nxt["command"] and "<FILES>" not in nxt["placeholders"]
