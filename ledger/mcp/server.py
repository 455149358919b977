"""``git ledger mcp``: a stdio MCP server over the same verbs (extra ``git-ledger[mcp]``).

Every tool call runs the CLI itself, in this process, through click: the same
parsing, the same rules, the same ``--json``. Nothing here restates a rule, so
the server cannot do what the CLI would refuse. A refusal comes back as a
structured tool error (``LedgerError.as_dict``: kind, exit code, rule,
message, fix), never as text a client must parse.

The server is fixed to the repository it was started in: every call runs with
``-C`` that directory and every path argument must resolve inside the
repository. The SDK points fds 0 and 1 away from the wire while it serves, so
nothing a command or its children print can corrupt the protocol; what the
command writes to ``sys.stdout``/``sys.stderr`` is captured per thread, so
calls (a long ``wait``, a quick ``status``) can run side by side.

The SDK is imported only when serving; ``ledger.mcp.tools`` (schemas, argv)
never imports it.
"""

from __future__ import annotations

import io
import json
import sys
import threading
import traceback
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import click

from ledger.core.errors import BadInput, LedgerError, Refused, environment_error
from ledger.core.repobase import write_atomic
from ledger.mcp import policy
from ledger.mcp import tools as mcptools

EXTRA_HINT = "pip install 'git-ledger[mcp]'"
RESOURCE_SCHEME = "ledger"


@dataclass
class Outcome:
    """One tool call: the command's exit code, its output, or the error it raised."""

    exit_code: int
    stdout: str = ""
    stderr: str = ""
    error: dict[str, object] | None = None
    data: Any = field(default=None)


class _PerThread(io.TextIOBase):
    """sys.stdout/sys.stderr for the server: a call's writes go to that call's buffer."""

    def __init__(self, fallback: TextIO) -> None:
        self._fallback = fallback
        self._local = threading.local()

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return "utf-8"

    def isatty(self) -> bool:
        return False

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        buffer: io.StringIO | None = getattr(self._local, "buffer", None)
        return (buffer or self._fallback).write(text)

    def flush(self) -> None:
        if getattr(self._local, "buffer", None) is None:
            self._fallback.flush()

    @contextmanager
    def capture(self) -> Iterator[io.StringIO]:
        self._local.buffer = io.StringIO()
        try:
            yield self._local.buffer
        finally:
            self._local.buffer = None


def _streams() -> tuple[_PerThread, _PerThread]:
    """Install the per-thread streams once (idempotent)."""
    out, err = sys.stdout, sys.stderr
    if not isinstance(out, _PerThread):
        out = sys.stdout = _PerThread(out)
    if not isinstance(err, _PerThread):
        err = sys.stderr = _PerThread(err)
    return out, err


def _internal(exc: BaseException, cwd: Path) -> dict[str, object]:
    """A bug: the traceback goes where the CLI puts it, the client gets kind 'internal'."""
    from ledger.core.context import error_log

    where = ""
    log_path = error_log(cwd)
    if log_path is not None:
        write_atomic(
            log_path, "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
        )
        where = f"; traceback in {log_path}"
    message = f"internal error: {type(exc).__name__}: {exc}{where}"
    return LedgerError(message, "report it with the traceback").as_dict()


def _bad_usage(message: str) -> dict[str, object]:
    return BadInput(message.replace("\n", " "), "see the tool's input schema").as_dict()


def execute(
    spec: mcptools.ToolSpec,
    arguments: dict[str, Any],
    cwd: Path,
    root: Path,
    app: click.Group,
    *,
    limit: int = policy.MAX_ARGUMENT_BYTES,
    selection: policy.Selection | None = None,
) -> Outcome:
    """Run one tool call through the command line ``app``, in this process; never raises.

    What an agent may not do (:mod:`ledger.mcp.policy`) is refused before the command
    runs: an argument over ``limit`` bytes, a tool outside ``selection``, a
    configuration key a person edits."""
    out, err = _streams()
    command = mcptools.command_for(spec, app)
    if command is None:
        return Outcome(2, error=_bad_usage(f"this git-ledger has no '{spec.name}' verb"))
    try:
        chosen = selection or policy.Selection()
        if not chosen.serves(spec):
            raise Refused(f"[mcp-not-served] {spec.name}: {chosen.why_not(spec)}", "ask a person")
        policy.check_size(spec, arguments, limit)
        policy.check_config_key(spec, arguments)
        argv = mcptools.argv_for(spec, command, arguments, cwd, root)
    except LedgerError as exc:
        return Outcome(exc.exit_code, error=exc.as_dict())
    with out.capture() as stdout, err.capture() as stderr:
        error: dict[str, object] | None = None
        try:
            result = app.main(
                args=["-C", str(cwd), *argv], prog_name="git-ledger", standalone_mode=False
            )
            code = result if isinstance(result, int) else 0
        except LedgerError as exc:
            code = exc.exit_code
            error = _internal(exc, cwd) if code == 3 else exc.as_dict()
        except click.exceptions.Exit as exc:
            code = exc.exit_code
        except click.exceptions.Abort:
            code, error = 1, Refused("aborted").as_dict()
        except click.ClickException as exc:
            code, error = 2, _bad_usage(exc.format_message())
        except SystemExit as exc:  # nothing should exit the server from inside a verb
            code = exc.code if isinstance(exc.code, int) else 1
        except OSError as exc:
            failure = environment_error(exc, "cannot write")
            code = failure.exit_code
            error = _internal(exc, cwd) if code == 3 else failure.as_dict()
        except Exception as exc:
            code, error = 3, _internal(exc, cwd)
    outcome = Outcome(code, stdout.getvalue(), stderr.getvalue(), error)
    if error is None and spec.output == "json" and outcome.stdout.strip():
        with suppress(ValueError):  # not JSON after all: the client gets the text
            outcome.data = json.loads(outcome.stdout)
    return outcome


# --- resources: the ledger's entries at HEAD, read-only ----------------------------

_KINDS = {"version": "text/markdown", "reflection": "text/markdown", "result": "application/json"}


def entries(cwd: Path) -> list[tuple[str, str, str]]:
    """(kind, id, path) of every version, reflection and result committed at HEAD."""
    from ledger.core.context import open_context

    state = open_context(cwd).state()
    found = [("version", v.id, v.path) for v in state.versions]
    found += [("reflection", r.front.id, r.path) for r in state.reflections]
    prefix = f"{state.config.dir}/results/"
    found += [
        ("result", r.path.removeprefix(prefix).removesuffix(".json"), r.path) for r in state.results
    ]
    return found


def uri(kind: str, entry_id: str) -> str:
    return f"{RESOURCE_SCHEME}://{kind}/{entry_id}"


def read_entry(cwd: Path, address: str) -> tuple[str, str]:
    """The committed text and MIME type of the entry at ``ledger://KIND/ID``."""
    kind, _, entry_id = address.removeprefix(f"{RESOURCE_SCHEME}://").partition("/")
    if not address.startswith(f"{RESOURCE_SCHEME}://") or kind not in _KINDS:
        raise BadInput(f"unknown resource {address!r}", "use ledger://version|reflection|result/ID")
    from ledger.core.context import open_context

    ctx = open_context(cwd)
    for found_kind, found_id, path in entries(cwd):
        if (found_kind, found_id) == (kind, entry_id):
            data = ctx.store.snapshot().read(path)
            if data is not None:
                return data.decode("utf-8", errors="replace"), _KINDS[kind]
    raise BadInput(f"no {kind} {entry_id!r} is committed", "list the resources to see the ids")


def loop_of(cwd: Path) -> str | None:
    """The preset of the ledger here, or None (no ledger yet, or unreadable config)."""
    from ledger.core.context import load_config
    from ledger.core.store import Store

    try:
        loaded = load_config(Store(cwd))
    except Exception:
        return None
    return loaded[0].ledger.preset if loaded else None
