"""Tab completion as each shell does it, for real: bash through git's own completion,
zsh through its completion system in a pseudo-terminal, fish through ``complete -C``."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

GIT_BASH_COMPLETION = Path("/usr/share/bash-completion/completions/git")

# zsh completes only in an interactive line editor: drive one in a pseudo-terminal
# (zsh/zpty), let every compadd also write its matches to a file, type the line and TAB,
# then a command that marks the end (waited for; nothing here is timed).
ZSH_DRIVER = r"""
zmodload zsh/zpty
out=$1; done=$2; line=$3; fp=$4
zpty z zsh -f -i
zpty -w z "PS1=''; fpath=($fp \$fpath); autoload -U compinit; compinit -u -D"
zpty -w z "compadd () { local -a h; builtin compadd -A h \"\$@\"; print -rl -- \$h >> $out; builtin compadd \"\$@\" }"
zpty -w z "$line"$'\t'
zpty -w z $'\x15'"print ok > $done"
for i in {1..1200}; do [[ -e $done ]] && break; sleep 0.1; done
zpty -d z
[[ -e $done ]]
"""


def bash_complete(
    line: str, script: Path, cwd: Path, env: dict[str, str] | None = None
) -> list[str]:
    """What ``line<TAB>`` offers in bash with git's completion and ``script`` sourced."""
    program = f"""
source {GIT_BASH_COMPLETION}
source {script}
COMP_LINE={line!r}; COMP_POINT=${{#COMP_LINE}}
read -ra COMP_WORDS <<< "$COMP_LINE"
[[ $COMP_LINE == *" " ]] && COMP_WORDS+=("")
COMP_CWORD=$((${{#COMP_WORDS[@]}} - 1))
if [[ ${{COMP_WORDS[0]}} == git ]]; then __git_wrap__git_main; else _git_ledger_direct; fi
printf '%s\\n' "${{COMPREPLY[@]}}"
"""
    proc = subprocess.run(
        ["bash", "--norc", "-c", program],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return sorted({w.strip() for w in proc.stdout.splitlines() if w.strip()})


def zsh_complete(line: str, fpath: Path, cwd: Path, env: dict[str, str] | None = None) -> list[str]:
    """What ``line<TAB>`` offers in zsh with ``fpath`` (holding ``_git-ledger``) first."""
    out, done = cwd / ".zsh-matches", cwd / ".zsh-done"
    out.unlink(missing_ok=True)
    done.unlink(missing_ok=True)
    proc = subprocess.run(
        ["zsh", "-f", "-c", ZSH_DRIVER, "zsh", str(out), str(done), line, str(fpath)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, f"zsh never finished completing {line!r}: {proc.stderr}"
    found = out.read_text().split("\n") if out.exists() else []
    out.unlink(missing_ok=True)
    done.unlink(missing_ok=True)
    return sorted({w.strip() for w in found if w.strip()})


def fish_complete(
    line: str, script: Path, cwd: Path, env: dict[str, str] | None = None
) -> list[str]:
    """What ``line<TAB>`` offers in fish with ``script`` sourced (names, no descriptions)."""
    proc = subprocess.run(
        ["fish", "--no-config", "-c", f"source {script}; complete -C {line!r}"],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return sorted({w.split("\t", 1)[0] for w in proc.stdout.splitlines() if w.strip()})


def parses(shell: str, script: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([shell, "-n", str(script)], capture_output=True, text=True, check=False)


def have(shell: str) -> bool:
    return shutil.which(shell) is not None
