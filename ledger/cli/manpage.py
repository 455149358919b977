"""The man page git shows for ``git ledger --help``, generated from the click commands.

git turns ``git ledger --help`` into ``git help ledger``, which runs ``man git-ledger``.
The page is rendered from the same click objects that parse the command line, kept
in the repository as ``man/git-ledger.1`` (a test checks it matches) and installed by
the wheel as ``share/man/man1/git-ledger.1``, where man finds it from a virtual
environment whose ``bin/`` is on PATH. Regenerate with ``python -m ledger.cli.manpage``.
No date in it: the page changes only when the commands do.
"""

from __future__ import annotations

import inspect
import sys
from pathlib import Path

import click

from ledger import __version__
from ledger.core.repobase import write_atomic

PAGE = Path(__file__).resolve().parents[2] / "man" / "git-ledger.1"


def _roff(text: str) -> str:
    """Escape text for roff: backslashes, and a leading dot or quote on a line."""
    out = []
    for line in text.replace("\\", "\\e").replace("-", "\\-").splitlines():
        out.append("\\&" + line if line.startswith((".", "'")) else line)
    return "\n".join(out)


def _paragraphs(text: str) -> list[str]:
    return [" ".join(p.split()) for p in inspect.cleandoc(text).split("\n\n") if p.strip()]


def _options(ctx: click.Context, command: click.Command) -> list[str]:
    lines = []
    for param in command.get_params(ctx):
        record = param.get_help_record(ctx)
        if record is None or (ctx.parent is not None and param is command.get_help_option(ctx)):
            continue
        names, helptext = record
        lines += [".TP", f"\\fB{_roff(names)}\\fR", _roff(" ".join(helptext.split()))]
    return lines


def _command(ctx: click.Context, command: click.Command, path: list[str]) -> list[str]:
    if command.hidden:
        return []
    lines: list[str] = []
    if path:
        usage = " ".join(command.collect_usage_pieces(ctx))
        lines += [f".SS {_roff(' '.join(path))}"]
        lines += [f"\\fBgit ledger {_roff(' '.join(path))}\\fR {_roff(usage)}", ".PP"]
        for para in _paragraphs(command.help or ""):
            lines += [_roff(para), ".PP"]
        lines += _options(ctx, command)
    if isinstance(command, click.Group):
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            if sub is not None:
                child = click.Context(sub, info_name=name, parent=ctx)
                lines += _command(child, sub, [*path, name])
    return lines


def render(cli: click.Group) -> str:
    ctx = click.Context(cli, info_name="git ledger", **cli.context_settings)
    description = _paragraphs(cli.help or "")
    lines = [
        f'.TH GIT\\-LEDGER 1 "" "git-ledger {__version__}" "Git Manual"',
        ".SH NAME",
        f"git\\-ledger \\- {_roff(description[0])}",
        ".SH SYNOPSIS",
        "\\fBgit ledger\\fR [\\fB\\-C\\fR \\fIDIR\\fR] \\fIVERB\\fR [\\fIOPTIONS\\fR] [\\fIARGS\\fR]",
        ".br",
        "\\fBgit ledger help\\fR [\\fIVERB\\fR]",
        ".SH DESCRIPTION",
    ]
    for para in description[1:]:
        lines += [_roff(para), ".PP"]
    lines += [
        "Every transition of the loop is one git commit with Ledger\\-Transition: and",
        "Ledger\\-Step: trailers. Every read verb takes \\fB\\-\\-json\\fR; every verb takes",
        "\\fB\\-C\\fR \\fIDIR\\fR. \\fBgit ledger help\\fR \\fIVERB\\fR prints one verb's help.",
        ".SH OPTIONS",
        *_options(ctx, cli),
        ".SH VERBS",
        *_command(ctx, cli, []),
        ".SH EXIT STATUS",
        "0 ok; 1 a rule refused the action or a check found something; 2 bad usage or",
        "bad input (nothing written); 3 internal error (traceback in",
        ".IR .git/ledger/last\\-error.log );",
        "4 the transition is committed but the index and work tree are behind:",
        "\\fBgit ledger doctor \\-\\-fix\\fR completes it; 5 the environment refused a write",
        "(a full disk, a permission, a read\\-only file system; the hint names what to do),",
        "nothing committed.",
        ".SH SEE ALSO",
        "\\fBgit\\fR(1), \\fBgithooks\\fR(5), and README.md of git\\-ledger.",
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    from ledger.cli.app import cli

    text = render(cli)
    if sys.argv[1:] == ["--check"]:
        sys.exit(0 if PAGE.exists() and PAGE.read_text() == text else 1)
    write_atomic(PAGE, text)
    print(f"wrote {PAGE}")


if __name__ == "__main__":
    main()
