"""``python -m ledger`` and the ``git-ledger`` console script.

The platform is checked here, before click or anything else is imported: on
Windows outside WSL the hooks (POSIX shell scripts), the locks (``fcntl``) and
process handling do not work, and a user gets one line saying so, not a
traceback from deep inside an import.
"""

import sys

from ledger.core.repobase import WINDOWS_UNSUPPORTED


def main() -> None:
    if sys.platform == "win32":
        sys.stderr.write(WINDOWS_UNSUPPORTED)
        sys.exit(2)
    _fewer_collections()
    if sys.argv[1:2] in (["status"], ["next"], ["verify"]) and sys.argv[2:] in ([], ["--json"]):
        # What agents, pushes and CI jobs ask most: answered without importing click when
        # the answer is at hand (ledger.cli.status.at_hand, ledger.cli.verify.run_at_hand),
        # else by the app, as any verb.
        _at_hand(sys.argv[1], sys.argv[2:] == ["--json"])
    from ledger.cli.app import main as cli_main

    try:
        cli_main()
    except SystemExit as done:
        exit_now(done)
        raise


def _fewer_collections() -> None:
    """Run the cyclic garbage collector less often than CPython's default (every 700
    container allocations) in this short-lived process.

    A read of a long ledger allocates millions of containers that all live to the end
    (the entry cache, the state, a report's tables) and almost no cycles to free, so
    the default spends its passes walking live data: 220 collections for a report at
    1,000 versions, more for a cold status or a full verify. Reference counting still
    frees everything that is not a cycle at once; only cycles wait longer.
    """
    import gc

    gc.set_threshold(100_000, 20, 20)


def _at_hand(verb: str, as_json: bool) -> None:
    """Exit with the verb's answer when it is at hand; return when the app must run."""
    import os
    from pathlib import Path

    if "_GIT_LEDGER_COMPLETE" in os.environ:
        return  # shell completion: click's own protocol
    cwd = Path(".")  # as the app passes it (no -C)
    try:
        if verb == "verify":
            from ledger.cli.verify import run_at_hand

            code = run_at_hand(cwd, as_json)
        else:
            from ledger.cli.status import at_hand

            code = at_hand(cwd, verb, as_json, _app)
    except BrokenPipeError:
        code = 0  # as the app: a reader that went away is no failure
    if code is None:
        return
    done = SystemExit(code)
    exit_now(done)
    raise done


def _app() -> object:
    """The click app's root group, imported when a step's MCP call is not remembered."""
    from ledger.cli.app import cli

    return cli


def exit_now(done: SystemExit) -> None:
    """End the process at once when nothing is left to finish (else return).

    Tearing down an interpreter that imported click, rich or pydantic (freeing
    every module's objects) costs about as much as a warm ``status``'s own work.
    It is skipped only when that is all exit would do: an integer status, no
    profiler or tracer (``python -m cProfile`` writes its output after main), no
    thread but this one, nothing registered with :mod:`atexit` (logging,
    tempfile's cleanups and concurrent.futures register there), and stdout and
    stderr flushed. Every file git-ledger writes is closed (and renamed into
    place) before the command returns, so no buffer is left behind.
    """
    import os

    code = done.code
    if code is not None and not isinstance(code, int):
        return  # a message for sys.exit to print
    if sys.getprofile() is not None or sys.gettrace() is not None:
        return  # python -m cProfile, a debugger or coverage: they finish after main
    threading = sys.modules.get("threading")
    if threading is not None and threading.active_count() > 1:
        return
    import atexit

    pending = getattr(atexit, "_ncallbacks", None)
    if pending is None or pending() > 0:
        return
    if sys.stdout is None or sys.stderr is None:
        return  # started with a descriptor closed: the normal exit copes
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        return  # a closed pipe or stream: the normal exit reports it
    os._exit(code or 0)


if __name__ == "__main__":
    main()
