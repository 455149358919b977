"""Only ``ledger/core/gitcli.py`` starts the git program (DESIGN.md section 4).

One boundary per outside world: a git started anywhere else skips the
environment gitcli hands to git (the C locale the tool reads git's words in, the
allowlist that keeps a hook's ``GIT_INDEX_FILE`` or ``GIT_DIR`` from redirecting a
git aimed elsewhere) and the one-line errors it makes of git's failures.

The check reads the source (``ast``): every call that starts a process
(``subprocess``, ``os.posix_spawn*``, ``os.exec*``, ``os.system``, asyncio's
subprocesses), through any import alias, whose program is git: a literal
``"git"``, an argv list that starts with it, or a name assigned such a list in
the same function or module. A planted call shows each shape is caught.
"""

from __future__ import annotations

import ast
import shutil
from pathlib import Path

import pytest

from ledger.core import gitcli
from ledger.core.errors import BadInput
from tests.helpers import Repo

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "ledger"

# Who may start git, and why. Each must still start it (a stale allowance is a hole).
ALLOWED = {
    "ledger/core/gitcli.py": "the one runner of the git program",
    # The hooks' stdlib fast path (ledger/hooks/fast.py) spawns git through
    # repobase.git with os.posix_spawnp: importing subprocess costs a hook more than
    # the interpreter start. Documented in both modules and in DESIGN.md.
    "ledger/core/repobase.py": "the hooks' fast path: posix_spawnp, no subprocess",
}
# Known exceptions, to be removed: none left (verify's log_changes reads its
# ``git log`` through gitcli.run_bytes since the split of verify, issue 25).
KNOWN: tuple[str, ...] = ()

_STARTERS = {
    "subprocess": {
        "run",
        "Popen",
        "call",
        "check_call",
        "check_output",
        "getoutput",
        "getstatusoutput",
    },
    "os": {
        "system",
        "popen",
        "posix_spawn",
        "posix_spawnp",
        "spawnv",
        "spawnve",
        "spawnvp",
        "spawnvpe",
        "spawnl",
        "spawnle",
        "spawnlp",
        "spawnlpe",
        "execv",
        "execve",
        "execvp",
        "execvpe",
        "execl",
        "execle",
        "execlp",
        "execlpe",
    },
    "asyncio": {"create_subprocess_exec", "create_subprocess_shell"},
}
_PROGRAM_KEYWORDS = {"args", "argv", "executable", "path", "file", "cmd", "program"}


def _is_git(text: str) -> bool:
    program = text.strip().split(" ", 1)[0]
    return program == "git" or program.endswith("/git")


def _assignments(scope: ast.AST) -> dict[str, list[ast.expr]]:
    """The values assigned to each plain name in ``scope``, nested functions aside."""
    out: dict[str, list[ast.expr]] = {}
    for child in ast.iter_child_nodes(scope):
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        targets: list[ast.expr] = []
        if isinstance(child, ast.Assign):
            targets = child.targets
        elif isinstance(child, (ast.AnnAssign, ast.NamedExpr)) and child.value is not None:
            targets = [child.target]
        for target in targets:
            if isinstance(target, ast.Name) and isinstance(
                child, (ast.Assign, ast.AnnAssign, ast.NamedExpr)
            ):
                out.setdefault(target.id, []).append(child.value or ast.Constant(None))
        for name, values in _assignments(child).items():
            out.setdefault(name, []).extend(values)
    return out


class _Scan(ast.NodeVisitor):
    """Calls that start git in one module: (line, source of the call)."""

    def __init__(self) -> None:
        self.modules: dict[str, str] = {}  # local name -> module (import subprocess as sp)
        self.functions: dict[str, str] = {}  # local name -> "module.function"
        self.scopes: list[dict[str, list[ast.expr]]] = []
        self.found: list[tuple[int, str]] = []

    # names -----------------------------------------------------------------

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            if alias.name in _STARTERS:
                self.modules[alias.asname or alias.name] = alias.name

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.module in _STARTERS:
            for alias in node.names:
                if alias.name in _STARTERS[node.module]:
                    self.functions[alias.asname or alias.name] = f"{node.module}.{alias.name}"

    def visit_Module(self, node: ast.Module) -> None:
        self.scopes = [_assignments(node)]
        self.generic_visit(node)

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self.scopes.append(_assignments(node))
        self.generic_visit(node)
        self.scopes.pop()

    visit_FunctionDef = _function
    visit_AsyncFunctionDef = _function

    # what a call starts ----------------------------------------------------

    def _starter(self, func: ast.expr) -> bool:
        if isinstance(func, ast.Name):
            return func.id in self.functions
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
            module = self.modules.get(func.value.id)
            return module is not None and func.attr in _STARTERS[module]
        return False

    def _names_git(self, node: ast.expr, depth: int = 0) -> bool:
        if depth > 8:
            return False
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return _is_git(node.value)
        if isinstance(node, ast.JoinedStr) and node.values:
            first = node.values[0]
            return isinstance(first, ast.Constant) and _is_git(str(first.value))
        if isinstance(node, (ast.List, ast.Tuple)) and node.elts:
            first = node.elts[0]
            inner = first.value if isinstance(first, ast.Starred) else first
            return self._names_git(inner, depth + 1)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            return self._names_git(node.left, depth + 1)
        if isinstance(node, ast.Call) and ast.unparse(node.func) == "shutil.which" and node.args:
            return self._names_git(node.args[0], depth + 1)
        if isinstance(node, ast.Name):
            for scope in reversed(self.scopes):
                if node.id in scope:
                    return any(self._names_git(v, depth + 1) for v in scope[node.id])
        return False

    def visit_Call(self, node: ast.Call) -> None:
        if self._starter(node.func):
            candidates = [*node.args[:2]]
            candidates += [k.value for k in node.keywords if k.arg in _PROGRAM_KEYWORDS]
            if any(self._names_git(arg) for arg in candidates):
                self.found.append((node.lineno, ast.unparse(node)[:80]))
        self.generic_visit(node)


def git_starters(root: Path) -> dict[str, list[tuple[int, str]]]:
    """Every module below ``root`` (a copy of the package's parent) that starts git."""
    out: dict[str, list[tuple[int, str]]] = {}
    for path in sorted((root / "ledger").rglob("*.py")):
        scan = _Scan()
        scan.visit(ast.parse(path.read_text(), filename=str(path)))
        if scan.found:
            out[path.relative_to(root).as_posix()] = scan.found
    return out


def _outside_the_boundary(found: dict[str, list[tuple[int, str]]]) -> dict[str, object]:
    return {
        path: calls
        for path, calls in found.items()
        if path not in ALLOWED and not path.startswith(KNOWN)
    }


def test_only_gitcli_starts_git() -> None:
    found = git_starters(ROOT)
    outside = _outside_the_boundary(found)
    assert not outside, f"start git through ledger.core.gitcli, not here: {outside}"
    stale = sorted(path for path in ALLOWED if path not in found)
    assert not stale, f"these no longer start git: drop them from ALLOWED: {stale}"
    moved = [prefix for prefix in KNOWN if not any(p.startswith(prefix) for p in found)]
    assert not moved, f"no longer starts git: drop it from KNOWN: {moved}"


PLANTED = {
    "argv list": 'import subprocess\nsubprocess.run(["git", "status"], check=False)\n',
    "argv in a name": (
        "import subprocess\n\ndef f(tip):\n    args = ['git', 'log', tip]\n"
        "    return subprocess.run(args, capture_output=True)\n"
    ),
    "module-level argv": (
        "import subprocess\nGIT = ['git']\n\ndef f():\n"
        "    return subprocess.Popen([*GIT, 'cat-file', '--batch'])\n"
    ),
    "alias": "from subprocess import check_output as out\nout(['git', 'rev-parse', 'HEAD'])\n",
    "module alias": "import subprocess as sp\nsp.Popen(('git', 'fetch'))\n",
    "posix_spawnp": "import os\nos.posix_spawnp('git', ['git', 'status'], os.environ)\n",
    "a shell": "import os\nos.system('git gc --auto')\n",
    "which": "import shutil, subprocess\nsubprocess.call([shutil.which('git'), 'gc'])\n",
    "a concatenation": "import subprocess\nsubprocess.run(['git'] + ['status'])\n",
}


@pytest.mark.parametrize("source", list(PLANTED.values()), ids=list(PLANTED))
def test_a_planted_git_call_is_caught(tmp_path: Path, source: str) -> None:
    """A copy of the package with git started from the command line's doctor fails."""
    shutil.copytree(PACKAGE, tmp_path / "ledger", ignore=shutil.ignore_patterns("__pycache__"))
    target = tmp_path / "ledger/cli/doctor.py"
    target.write_text(target.read_text() + "\n\n" + source)
    outside = _outside_the_boundary(git_starters(tmp_path))
    assert list(outside) == ["ledger/cli/doctor.py"], outside


def test_other_programs_and_gitcli_calls_are_not_git(tmp_path: Path) -> None:
    (tmp_path / "ledger").mkdir()
    (tmp_path / "ledger/mod.py").write_text(
        "import subprocess\nfrom ledger.core import gitcli\n\n"
        "def f(exe):\n    subprocess.run([exe, 'install'])\n"
        "    subprocess.Popen(['python', '-c', 'print(1)'])\n"
        "    gitcli.run(['status'], '.')\n    return 'git'\n"
    )
    assert git_starters(tmp_path) == {}


# What the modules that left the boundary now use ----------------------------


def test_one_cat_file_process_answers_every_read_and_says_what_it_lacks(bare_repo: Repo) -> None:
    """history.GitHistory reads verify's blobs through gitcli.CatFileBatch."""
    bare_repo.write("a.txt", "alpha\n")
    bare_repo.write("b.bin", b"\x00\xff\n" * 3)
    bare_repo.commit_all("chore: two files")
    blob_a = bare_repo.git("rev-parse", "HEAD:a.txt").strip()
    blob_b = bare_repo.git("rev-parse", "HEAD:b.bin").strip()
    tree = bare_repo.git("rev-parse", "HEAD^{tree}").strip()
    batch = gitcli.CatFileBatch(bare_repo.path)
    try:
        assert batch.read(blob_a) == ("blob", b"alpha\n")
        assert batch.read("0" * 40) is None  # missing: the stream stays in step
        assert batch.read(blob_b) == ("blob", b"\x00\xff\n" * 3)
        kind, _ = batch.read(tree) or ("", b"")
        assert kind == "tree"  # read whole, so the next answer is not its tail
        assert batch.read(blob_a) == ("blob", b"alpha\n")
        with pytest.raises(BadInput):
            batch.read(f"{blob_a}\n{blob_b}")  # one name per line: never two
    finally:
        batch.close()
    assert batch.read(blob_b) == ("blob", b"\x00\xff\n" * 3)  # started again after close
    batch.close()


def test_git_responds_names_what_went_wrong(bare_repo: Repo, tmp_path: Path) -> None:
    """doctor's check: None in a repository, the failure's name outside one."""
    assert gitcli.responds(bare_repo.path, timeout=5) is None
    outside = tmp_path / "not-a-repo"
    outside.mkdir()
    assert gitcli.responds(outside, timeout=5) == "CalledProcessError"


def test_bytes_out_of_git_are_not_decoded(bare_repo: Repo) -> None:
    bare_repo.write("b.bin", b"\xff\xfe")
    bare_repo.commit_all("chore: a binary")
    proc = gitcli.run_bytes(["cat-file", "blob", "HEAD:b.bin"], bare_repo.path)
    assert (proc.returncode, proc.stdout) == (0, b"\xff\xfe")
    assert gitcli.run_bytes(["cat-file", "-e", "HEAD:none"], bare_repo.path).returncode != 0
