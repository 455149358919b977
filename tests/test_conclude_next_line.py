"""conclude's `next:` line is judged on the ledger conclude has just written.

conclude builds that ledger in memory (the same state its README views are rendered
from) instead of reading the whole ledger a second time; what it says next must still
be what `git ledger next` says of the commit, whether the loop goes on or the verdict
just written fires a reflection trigger.
"""

from __future__ import annotations

from tests.helpers import Repo
from tests.test_next_walk_states import register_cache, shop


def _conclude_says_what_next_says(repo: Repo, vid: str, verdict: str) -> str:
    out = repo.ok("conclude", vid, "--verdict", verdict, "--next", "go on").out
    said = out.strip().splitlines()[-1]
    assert said.startswith("next: "), out
    proposed = repo.ok("next", "--json").json()
    assert said.split("  # ", 1)[0] == f"next: {proposed['command']}", (said, proposed)
    return proposed["command"]


def _measured(repo: Repo, vid: str, size: int) -> None:
    """``vid`` registered, its code committed and measured on the recent gate."""
    register_cache(repo, vid)
    repo.write("src/cache.py", f"SIZE = {size}\n")
    repo.commit_all(f"feat(cache): {vid} — size {size}")
    repo.ok("run", vid, "--gate", "recent", "--seeds", "1,2")


def test_conclude_next_line_is_next_of_the_ledger_it_wrote(bare_repo: Repo) -> None:
    repo = shop(bare_repo)
    for vid, size, verdict in (("V1", 96, "confirmed"), ("V2", 32, "inconclusive")):
        _measured(repo, vid, size)
        command = _conclude_says_what_next_says(repo, vid, verdict)
        assert command.startswith("git ledger register "), command
    _measured(repo, "V3", 16)
    # Set after V3's registration: V3's verdict is judged by the configuration frozen
    # then, the next step by today's, where two bets without a gain fire the trigger.
    # The verdict on V3 is what fires it: a `next:` judged on the ledger as it was before
    # the conclusion would propose concluding V3, one judged under V3's frozen
    # configuration registering V4.
    repo.ok("config", "set", "triggers.stagnation_versions", "2", "--reason", "a short fuse")
    command = _conclude_says_what_next_says(repo, "V3", "inconclusive")
    assert command.startswith("git ledger reflect "), command


def test_conclude_next_line_after_a_refutation_is_next_s_revert(bare_repo: Repo) -> None:
    """A refuted version's code still on the branch: `next` reads that fresh from git
    (revert it, or build on it), and so does conclude's line."""
    repo = shop(bare_repo)
    for vid, size, verdict in (("V1", 96, "confirmed"), ("V2", 4, "refuted")):
        _measured(repo, vid, size)
        command = _conclude_says_what_next_says(repo, vid, verdict)
    assert command.startswith("git revert "), command
