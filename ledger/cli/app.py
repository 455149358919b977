"""The click app: the root group, the generic verbs, and the exit codes.

Thin click wrappers that parse, then call one command module imported inside the
wrapper (``--help`` or a hook never pays for pygit2, pydantic, scipy).

Each loop declares its own verbs (``ledger/presets/<name>/verbs.py``), added to the
root group here: one app parses them all, and the MCP tools and the man page derive
from it. What the verbs share (the context object, ``--json``) is in ``clikit``.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import click

from ledger import __version__
from ledger.core.clikit import Ctx, add_verbs, declare, json_option, pass_ctx
from ledger.core.loops import NAMES as PRESETS
from ledger.hooks import STAGES as HOOK_STAGES
from ledger.presets.batches import verbs as batches_verbs
from ledger.presets.campaign import verbs as campaign_verbs
from ledger.presets.versions import verbs as versions_verbs

# What users type: git runs the git-ledger console script for `git ledger`.
PROG = "git ledger"


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.option(
    "-C",
    "cwd",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    default=Path("."),
    help="Run as if started in this directory.",
)
@click.version_option(__version__, prog_name="git-ledger")
@click.pass_context
def cli(ctx: click.Context, cwd: Path) -> None:
    """A git-native ledger for improvement loops: every transition is one commit.

    Exit codes: 0 ok, 1 a rule refused or a check found something,
    2 bad usage or bad input (nothing written), 3 internal error,
    4 committed but the work tree is behind (run doctor --fix),
    5 the environment refused a write (disk full, permission, read-only).
    """
    if cwd != Path("."):
        # As git does: -C changes directory first, so every relative path given
        # after it (--out-dir, a results file, --out) is relative to DIR. Undone
        # when the command ends, for callers that run commands in-process.
        from ledger.core.errors import BadInput

        before = os.getcwd()
        try:
            os.chdir(cwd)
        except OSError:
            raise BadInput(
                f"cannot change to {cwd}: no such directory", "pass an existing directory to -C"
            ) from None
        ctx.call_on_close(lambda: os.chdir(before))
        cwd = Path(os.getcwd())
    ctx.obj = Ctx(cwd)


@declare("write", note="Sets up a ledger in the server's repository.")
@cli.command()
@click.option(
    "--preset",
    type=click.Choice(list(PRESETS)),
    default=None,
    help="Which loop this ledger serves (default: versions).",
)
@click.option("--dir", "directory", default=None, help="Ledger directory (default: training_log).")
@json_option
@pass_ctx
def init(obj: Ctx, preset: str | None, directory: str | None, as_json: bool) -> int:
    """Write ledger.toml, the ledger dir and its template in one commit."""
    from ledger.cli import init as command

    return command.run(obj.cwd, preset, directory, as_json)


@declare("read")
@cli.command()
@json_option
@pass_ctx
def status(obj: Ctx, as_json: bool) -> int:
    """Where the loop stands: versions, triggers, problems, and the next action."""
    from ledger.cli import status as command

    return command.run_status(obj.cwd, as_json)


@declare("read")
@cli.command("next")
@json_option
@pass_ctx
def next_(obj: Ctx, as_json: bool) -> int:
    """The single next action, with the exact command to run."""
    from ledger.cli import status as command

    return command.run_next(obj.cwd, as_json)


@declare("read")
@cli.command()
@click.argument("rev", required=False)
@click.option("-n", "limit", type=click.IntRange(min=1), default=None, help="Show at most N.")
@click.option("--step", default=None, help="Only transitions of this step id.")
@json_option
@pass_ctx
def log(obj: Ctx, rev: str | None, limit: int | None, step: str | None, as_json: bool) -> int:
    """Transitions recorded in commit trailers, newest first."""
    from ledger.cli import log as command

    return command.run(obj.cwd, rev, limit, step, as_json)


# Not a tool: it is the server itself.
@declare("read", served=False)
@cli.command()
@click.option("--read-only", is_flag=True, help="Serve only the tools that change nothing.")
@click.option(
    "--tools",
    "tool_sets",
    default=None,
    metavar="SETS",
    help="Serve only these tool sets, comma-separated: core, read, write, destructive, "
    "versions, campaign, batches.",
)
@click.option(
    "--max-argument-bytes",
    type=click.IntRange(min=1),
    default=None,
    help="Refuse a longer argument as bad input (default 65536).",
)
@pass_ctx
def mcp(obj: Ctx, read_only: bool, tool_sets: str | None, max_argument_bytes: int | None) -> int:
    """Serve the verbs to agents over MCP (stdio), inside this repository only.

    Needs the extra: pip install 'git-ledger[mcp]'.
    """
    from ledger.core import statuscache
    from ledger.mcp import stdio

    statuscache.moved = None  # a server's verbs answer in this process: nothing to warm
    return stdio.serve(
        obj.cwd,
        cli,
        read_only=read_only,
        tools=tool_sets,
        max_argument_bytes=max_argument_bytes,
    )


# Not a tool: it builds a throwaway repository elsewhere, and the server acts only
# inside its own repository.
@declare("write", served=False)
@cli.command()
@click.argument("directory", required=False, type=click.Path(file_okay=False, path_type=Path))
def demo(directory: Path | None) -> int:
    """Walk a whole loop on a generated throwaway repository, printing each command."""
    from ledger.cli import demo as command

    return command.run(directory, cli)


@cli.group()
def hooks() -> None:
    """Install, remove or run the git hooks that hold the discipline."""


# The hooks are not tools: a person installs or removes them (they hold the
# discipline the agent works under), and git runs them.
@declare("write", served=False)
@hooks.command("install")
@click.option(
    "--pre-commit-framework",
    "framework",
    is_flag=True,
    help="Add the hooks to .pre-commit-config.yaml and run 'pre-commit install'.",
)
@click.option(
    "--hooks-path",
    "allow_hooks_path",
    is_flag=True,
    help="Install into core.hooksPath when it is set.",
)
@click.option(
    "--server",
    is_flag=True,
    help="Also install the server hooks (pre-receive, update, post-receive): for a repository "
    "others push to.",
)
@pass_ctx
def hooks_install(obj: Ctx, framework: bool, allow_hooks_path: bool, server: bool) -> int:
    """Install the pre-commit, prepare-commit-msg, commit-msg and pre-push hooks."""
    from ledger.cli import hooks as command

    return command.install(obj.cwd, allow_hooks_path, framework, server)


@declare("write", served=False)  # see hooks install
@hooks.command("uninstall")
@click.option("--hooks-path", "allow_hooks_path", is_flag=True, help="Use core.hooksPath when set.")
@pass_ctx
def hooks_uninstall(obj: Ctx, allow_hooks_path: bool) -> int:
    """Remove git-ledger's hooks and restore any hook they replaced."""
    from ledger.cli import hooks as command

    return command.uninstall(obj.cwd, allow_hooks_path)


@declare("read", served=False)  # see hooks install
@hooks.command("run", context_settings={"ignore_unknown_options": True})
@click.argument(
    "stage",
    type=click.Choice(HOOK_STAGES),
)
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
@pass_ctx
def hooks_run(obj: Ctx, stage: str, args: tuple[str, ...]) -> int:
    """Run one stage's checks as the installed hook would (also the pre-commit framework's entry)."""
    from ledger.cli import hooks as command

    return command.run_stage(obj.cwd, stage, args)


@declare(
    "read",
    hidden=frozenset({"fmt", "out"}),
    fixed=("--format", "md"),
    output="text",
    note="Returns the markdown report.",
)
@cli.command()
@click.option("--format", "fmt", type=click.Choice(["md", "html", "json"]), default="md")
@click.option(
    "--out", type=click.Path(dir_okay=False, path_type=Path), default=None, help="Write here."
)
@click.option("--since", default=None, help="Only versions from this one on.")
@click.option(
    "--all",
    "everything",
    is_flag=True,
    help="Every version (default on a feature branch: those since the default branch).",
)
@pass_ctx
def report(obj: Ctx, fmt: str, out: Path | None, since: str | None, everything: bool) -> int:
    """A PR-ready report: markdown comment, self-contained HTML with plots, or JSON."""
    from ledger.cli import report as command

    return command.run(obj.cwd, fmt, out, since, everything)


# Not a tool: it draws an image for a person; report returns the same numbers.
@declare("write", served=False)
@cli.command()
@click.option("--gate", required=True)
@click.option(
    "--out",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="A .svg file, or .png with the plots extra (default: .git/ledger/plots/<gate>.svg).",
)
@click.option("--metric", default=None, help="Another metric of the gate (default: its primary).")
@pass_ctx
def plot(obj: Ctx, gate: str, out: Path | None, metric: str | None) -> int:
    """One gate's trajectory: verdicts, standing baseline, noise band."""
    from ledger.cli import report as command

    return command.plot(obj.cwd, gate, out, metric)


@declare("read")
@cli.command()
@click.argument("rev_range", metavar="[RANGE]", required=False)
@json_option
@pass_ctx
def verify(obj: Ctx, rev_range: str | None, as_json: bool) -> int:
    """Replay history and check every invariant (exit 1: findings; 2: cannot verify)."""
    from ledger.cli import verify as command

    return command.run(obj.cwd, rev_range, as_json)


@cli.group("config")
def config_() -> None:
    """Configuration transitions."""


@declare(
    "write",
    config_key="key",
    args={
        "key": "The dotted ledger.toml key, e.g. stats.sigma_k (no key that names a command).",
        "value": 'The new value, a TOML literal (e.g. 2.5, true, "text").',
    },
)
@config_.command("set")
@click.argument("key")
@click.argument("value")
@click.option("--reason", required=True, help="Why the setting changes (one line).")
@json_option
@pass_ctx
def config_set(obj: Ctx, key: str, value: str, reason: str, as_json: bool) -> int:
    """Change KEY in ledger.toml as its own transition; applies to later registrations."""
    from ledger.cli import config as command

    return command.run_set(obj.cwd, key, value, reason, as_json)


# Not a tool: sharing through a remote (fetch, merge, push) is a person's step,
# and nothing next or a refusal proposes.
@declare("write", served=False)
@cli.command()
@click.argument("remote", required=False)
@json_option
@pass_ctx
def sync(obj: Ctx, remote: str | None, as_json: bool) -> int:
    """Share the ledger through a git remote: fetch, merge (views regenerated), push."""
    from ledger.cli import sync as command

    return command.run(obj.cwd, remote, as_json)


# Not a tool: git runs it during a merge.
@declare("write", served=False)
@cli.command("merge-driver", hidden=True)
@click.argument("ancestor")
@click.argument("ours")
@click.argument("theirs")
@click.argument("path")
def merge_driver(ancestor: str, ours: str, theirs: str, path: str) -> int:
    """git's merge driver for generated views (merge=ledger-views)."""
    from ledger.hooks import mergeviews

    return mergeviews.run(ancestor, ours, theirs, path)


@declare(
    "destructive",
    note="With fix: removes stale locks, finishes an interrupted transition, autosaves "
    "entries; with stop_runs: stops the ledger's runs.",
)
@cli.command()
@click.option("--fix", is_flag=True, help="Repair what is safe to repair.")
@click.option("--stop-runs", is_flag=True, help="With --fix: stop runs the ledger recorded.")
@click.option(
    "--wait-for-locks",
    "wait_locks",
    is_flag=True,
    help="Only wait (up to 60 s) until no lock file is held by a process at work.",
)
@json_option
@pass_ctx
def doctor(obj: Ctx, fix: bool, stop_runs: bool, wait_locks: bool, as_json: bool) -> int:
    """Stale locks, interrupted work, leftover processes, hook health (exit 1 if a problem remains)."""
    from ledger.cli import doctor as command

    return command.run(obj.cwd, fix, stop_runs, as_json, wait_locks)


# Not a tool: every tool carries its help in its description and schema.
@declare("read", served=False)
@cli.command("help")
@click.argument("verb", nargs=-1)
@click.pass_context
def help_(ctx: click.Context, verb: tuple[str, ...]) -> int:
    """Help on one verb (help matrix new), or on all of them."""
    command: click.Command = cli
    here = ctx.find_root()
    for name in verb:
        sub = command.get_command(here, name) if isinstance(command, click.Group) else None
        if sub is None:
            from ledger.core.errors import BadInput

            raise BadInput(f"no verb {' '.join(verb)!r}", "see 'git ledger help'")
        here = click.Context(sub, info_name=name, parent=here)
        command = sub
    click.echo(here.get_help())
    return 0


# Each loop's verbs, declared with the loop that owns them. A verb's place in
# --help, the man page and completion is click's sorted listing, not this order.
for _preset_verbs in (versions_verbs, campaign_verbs, batches_verbs):
    add_verbs(cli, _preset_verbs.COMMANDS)


def _log_traceback(args: list[str]) -> str:
    """Write the traceback being handled to last-error.log; say where (or nothing)."""
    from ledger.core.context import error_log

    log_path = error_log(_cwd_from(args))
    if log_path is None:
        return ""
    try:
        import traceback

        from ledger.core.repobase import write_atomic

        write_atomic(log_path, traceback.format_exc())
    except OSError:
        return ""
    return f"; traceback in {log_path}"


def _cwd_from(argv: list[str]) -> Path:
    for i, arg in enumerate(argv):
        if arg == "-C" and i + 1 < len(argv):
            return Path(argv[i + 1])
        if arg.startswith("-C") and len(arg) > 2:
            return Path(arg[2:])
    return Path(".")


def _wants_json(args: list[str]) -> bool:
    return "--json" in args or any(
        a == "--format=json" or (a == "json" and i and args[i - 1] == "--format")
        for i, a in enumerate(args)
    )


def _fail(args: list[str], message: str, code: int) -> None:
    """One line on stderr; with --json also an error object on stdout, so a
    script reading JSON never has to parse English."""
    from ledger.core import output

    output.error(message)
    if _wants_json(args):
        output.emit_json({"error": message, "exit_code": code})
    sys.exit(code)


def _help_hint(exc: click.ClickException) -> str:
    ctx = getattr(exc, "ctx", None)
    path = ctx.command_path.split()[2:] if ctx is not None else []
    return "git ledger help" + "".join(f" {p}" for p in path)


def main(argv: list[str] | None = None) -> None:
    if sys.platform == "win32":  # for callers that skip ledger.__main__ (README: Platforms)
        from ledger.core.repobase import WINDOWS_UNSUPPORTED

        sys.stderr.write(WINDOWS_UNSUPPORTED)
        sys.exit(2)
    from ledger.core.errors import LedgerError

    args = sys.argv[1:] if argv is None else argv
    if not args and "_GIT_LEDGER_COMPLETE" not in os.environ:
        # Like click's no_args_is_help and git's own bare `git`: the usage, whole, on
        # stderr, and the bad-usage exit code.
        with click.Context(cli, info_name=PROG, **cli.context_settings) as ctx:
            click.echo(ctx.get_help(), err=True)
        sys.exit(2)
    from ledger.core import statuscache

    statuscache.moved = []  # the contexts that commit (ledger.cli.status.warm)
    try:
        result: Any = cli.main(
            args=args,
            # Completion scripts name the console script (a zsh `#compdef git ledger`
            # would take over git's own completion).
            prog_name="git-ledger" if "_GIT_LEDGER_COMPLETE" in os.environ else PROG,
            complete_var="_GIT_LEDGER_COMPLETE",
            standalone_mode=False,
        )
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.exceptions.Abort:
        _fail(args, "aborted", 1)
    except click.ClickException as exc:
        message = exc.format_message().replace("\n", " ")
        _fail(args, f"{message} (see '{_help_hint(exc)}')", 2)
    except LedgerError as exc:
        if exc.exit_code == 3:  # no class says what it is: a bug, and it gets its traceback
            _fail(args, f"internal error: {exc.one_line()}{_log_traceback(args)}", 3)
        _fail(args, exc.one_line(), exc.exit_code)
    except BrokenPipeError:
        sys.exit(0)
    except OSError as exc:
        from ledger.core.errors import ENVIRONMENT_ERRNOS, environment_error, os_errno

        if os_errno(exc) not in ENVIRONMENT_ERRNOS:
            _fail(args, f"internal error: {type(exc).__name__}: {exc}{_log_traceback(args)}", 3)
        _fail(args, environment_error(exc, "cannot write").one_line(), 5)
    except Exception as exc:
        _fail(args, f"internal error: {type(exc).__name__}: {exc}{_log_traceback(args)}", 3)
    code = result if isinstance(result, int) else 0
    if code == 0 and statuscache.moved:
        from ledger.cli.status import warm

        warm(statuscache.moved, lambda: cli)
    sys.exit(code)
