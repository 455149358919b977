"""Thin click wrappers: parse, then call one command module. Docstrings are the help.

Command modules are imported inside each wrapper, so ``git ledger --help`` or a
hook with nothing to do never pays for pygit2, pydantic or scipy.
"""

from __future__ import annotations

import os
import sys
import traceback
from pathlib import Path
from typing import Any

import click

from ledger import __version__


class _Ctx:
    def __init__(self, cwd: Path) -> None:
        self.cwd = cwd


pass_ctx = click.make_pass_decorator(_Ctx)
json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON (stable schema).")


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.option(
    "-C",
    "cwd",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("."),
    help="Run as if started in this directory.",
)
@click.version_option(__version__, prog_name="git-ledger")
@click.pass_context
def cli(ctx: click.Context, cwd: Path) -> None:
    """A git-native ledger for improvement loops: every transition is one commit.

    Exit codes: 0 ok, 1 a rule refused or a check found something,
    2 bad usage or bad input (nothing written), 3 internal error.
    """
    ctx.obj = _Ctx(cwd)
    if os.environ.get("LEDGER_TEST_CRASH"):  # test-only: exercise the exit-3 path
        raise RuntimeError("crash requested by LEDGER_TEST_CRASH")


@cli.command()
@click.option(
    "--preset",
    type=click.Choice(["versions", "campaign", "batches"]),
    default=None,
    help="Which loop this ledger serves (default: versions).",
)
@click.option("--dir", "directory", default=None, help="Ledger directory (default: training_log).")
@json_option
@pass_ctx
def init(obj: _Ctx, preset: str | None, directory: str | None, as_json: bool) -> int:
    """Write ledger.toml, the ledger dir and its template in one commit."""
    from ledger.commands import init as command

    return command.run(obj.cwd, preset, directory, as_json)


@cli.command()
@json_option
@pass_ctx
def status(obj: _Ctx, as_json: bool) -> int:
    """Where the loop stands: versions, triggers, problems, and the next action."""
    from ledger.commands import status as command

    return command.run_status(obj.cwd, as_json)


@cli.command("next")
@json_option
@pass_ctx
def next_(obj: _Ctx, as_json: bool) -> int:
    """The single next action, with the exact command to run."""
    from ledger.commands import status as command

    return command.run_next(obj.cwd, as_json)


@cli.command()
@click.argument("rev", required=False)
@click.option("-n", "limit", type=click.IntRange(min=1), default=None, help="Show at most N.")
@click.option("--step", default=None, help="Only transitions of this step id.")
@json_option
@pass_ctx
def log(obj: _Ctx, rev: str | None, limit: int | None, step: str | None, as_json: bool) -> int:
    """Transitions recorded in commit trailers, newest first."""
    from ledger.commands import log as command

    return command.run(obj.cwd, rev, limit, step, as_json)


@cli.command()
@click.argument("step_id")
@json_option
@pass_ctx
def show(obj: _Ctx, step_id: str, as_json: bool) -> int:
    """One entry (a version or a reflection) with its results and statistics."""
    from ledger.commands import show as command

    return command.run(obj.cwd, step_id, as_json)


def _error_log(cwd: Path) -> Path | None:
    """Where a bug's traceback goes: .git/ledger/last-error.log if we are in a repo."""
    try:
        from ledger.store import Store

        path = Store(cwd).ledger_state_dir / "last-error.log"
        path.parent.mkdir(parents=True, exist_ok=True)
        return path
    except Exception:
        return None


def _cwd_from(argv: list[str]) -> Path:
    for i, arg in enumerate(argv):
        if arg == "-C" and i + 1 < len(argv):
            return Path(argv[i + 1])
        if arg.startswith("-C") and len(arg) > 2:
            return Path(arg[2:])
    return Path(".")


def main(argv: list[str] | None = None) -> None:
    from ledger import output
    from ledger.errors import LedgerError

    args = sys.argv[1:] if argv is None else argv
    try:
        result: Any = cli.main(args=args, prog_name="git-ledger", standalone_mode=False)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.exceptions.Abort:
        output.error("aborted")
        sys.exit(1)
    except click.ClickException as exc:
        output.error(exc.format_message().replace("\n", " ") + " (see 'git ledger --help')")
        sys.exit(2)
    except LedgerError as exc:
        output.error(exc.one_line())
        sys.exit(exc.exit_code)
    except BrokenPipeError:
        sys.exit(0)
    except Exception as exc:
        log_path = _error_log(_cwd_from(args))
        where = ""
        if log_path is not None:
            log_path.write_text(traceback.format_exc())
            where = f"; traceback in {log_path}"
        output.error(f"internal error: {type(exc).__name__}: {exc}{where}")
        sys.exit(3)
    sys.exit(result if isinstance(result, int) else 0)
