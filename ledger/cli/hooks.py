"""``git ledger hooks install|uninstall|run``: native hooks or the pre-commit framework.

Native hooks go into the *common* hooks dir so every linked worktree (matrix
cells) gets them. Each script is rendered from the packaged template in
hooks/, records its identity and the interpreter, and runs a foreign hook it
replaced (kept as ``<hook>.legacy``) first; uninstall puts that one back.
"""

from __future__ import annotations

import os
from pathlib import Path

from ledger.core import gitcli, launch, output
from ledger.core.context import open_store
from ledger.core.errors import BadInput, LedgerError, Refused
from ledger.core.repobase import write_atomic
from ledger.core.resources import read_resource, render
from ledger.hooks.fast import CLIENT_STAGES, SERVER_STAGES, STAGES

# The server's memory of each ledger branch's tip (ledger.hooks.servertips): written once
# a push landed, so by a hook of its own that the fast path never runs.
POST_RECEIVE = "post-receive"

IDENTITY = "# identity: git-ledger-hook v2"
IDENTITY_PREFIX = "# identity: git-ledger-hook"
FRAMEWORK_CONFIG = ".pre-commit-config.yaml"


def hooks_dir(cwd: Path, allow_hooks_path: bool) -> Path:
    store = open_store(cwd)
    workdir = store.require_workdir()
    configured = gitcli.config_get(workdir, "core.hooksPath")
    default = store.common_dir / "hooks"
    if configured and (workdir / Path(configured).expanduser()).resolve() == default.resolve():
        configured = None  # points at the repository's own hooks dir: nothing to fight
    if configured:
        if not allow_hooks_path:
            raise Refused(
                f"core.hooksPath is set to {configured!r}: hooks there are managed elsewhere "
                "(another hook manager, or a shared folder)",
                "add git-ledger to that manager (see README: pre-commit framework), or "
                "pass --hooks-path to install into that folder anyway",
            )
        path = Path(configured).expanduser()
        return path if path.is_absolute() else workdir / path
    return default


def is_ours(path: Path) -> bool:
    try:
        return IDENTITY_PREFIX in path.read_text(errors="replace")
    except OSError:
        return False


def script(stage: str) -> str:
    """The hook for ``stage``: the installed program, isolated (see ledger.core.launch)."""
    if stage == POST_RECEIVE:
        boot = launch.boot("ledger.hooks.servertips", "main")
    else:
        boot = launch.boot("ledger.hooks.fast", "run")
    return render(
        read_resource("hooks", "ledger-hook.sh"),
        stage=stage,
        python=launch.interpreter(),
        package=launch.package_root(),
        boot=boot,
    )


def install(cwd: Path, allow_hooks_path: bool, framework: bool, server: bool = False) -> int:
    """The client hooks (a working clone's); with ``server`` the server's pre-receive,
    update and post-receive too, for a repository others push to."""
    if framework:
        return install_framework(cwd)
    store = open_store(cwd)
    stages: tuple[str, ...]
    if server and store.workdir is None:
        # The repository pushed to: a bare one runs only what receives pushes.
        target, stages = store.common_dir / "hooks", (*SERVER_STAGES, POST_RECEIVE)
    else:
        target = hooks_dir(cwd, allow_hooks_path)
        stages = (*STAGES, POST_RECEIVE) if server else CLIENT_STAGES
    target.mkdir(parents=True, exist_ok=True)
    for stage in stages:
        legacy = target / f"{stage}.legacy"
        if (target / stage).exists() and not is_ours(target / stage) and legacy.exists():
            raise Refused(
                f"{stage} has a foreign hook and {legacy.name} already exists",
                f"move one of them away: {legacy}",
            )
    for stage in stages:
        path = target / stage
        if path.exists() and not is_ours(path):
            path.rename(target / f"{stage}.legacy")
            output.say(f"kept your existing {stage} hook as {stage}.legacy (it still runs first)")
        write_atomic(path, script(stage), mode=0o755)
    output.say(f"installed {len(stages)} git-ledger hooks ({', '.join(stages)}) in {target}")
    if not server:
        output.say(
            "the server's hooks (pre-receive, update, post-receive): "
            "git ledger hooks install --server"
        )
    if store.workdir is not None:
        _configure_driver(cwd)
    return 0


def _configure_driver(cwd: Path) -> None:
    """Define the views merge driver too (repairing an unsafe 0.1 one), when there is a ledger."""
    from ledger.core.context import load_config
    from ledger.hooks.mergeviews import configure_driver

    store = open_store(cwd)
    if load_config(store) is not None:
        configure_driver(store.require_workdir())


def uninstall(cwd: Path, allow_hooks_path: bool) -> int:
    target = hooks_dir(cwd, allow_hooks_path)
    removed = 0
    for stage in (*STAGES, POST_RECEIVE):
        path = target / stage
        if path.exists() and is_ours(path):
            path.unlink()
            removed += 1
            legacy = target / f"{stage}.legacy"
            if legacy.exists():
                legacy.rename(path)
                output.say(f"restored your {stage} hook")
    output.say(f"removed {removed} git-ledger hook(s) from {target}")
    return 0


FRAMEWORK_BLOCK = """\
  - repo: local
    hooks:
      - id: git-ledger-pre-commit
        name: git-ledger (pre-commit)
        entry: git-ledger hooks run pre-commit
        language: system
        stages: [pre-commit]
        always_run: true
        pass_filenames: false
      - id: git-ledger-prepare-commit-msg
        name: git-ledger (prepare-commit-msg)
        entry: git-ledger hooks run prepare-commit-msg
        language: system
        stages: [prepare-commit-msg]
        always_run: true
      - id: git-ledger-commit-msg
        name: git-ledger (commit-msg)
        entry: git-ledger hooks run commit-msg
        language: system
        stages: [commit-msg]
        always_run: true
      - id: git-ledger-pre-push
        name: git-ledger (pre-push)
        entry: git-ledger hooks run pre-push
        language: system
        stages: [pre-push]
        always_run: true
        pass_filenames: false
"""


def install_framework(cwd: Path) -> int:
    """Add git-ledger to .pre-commit-config.yaml and let pre-commit install the stages."""
    store = open_store(cwd)
    workdir = store.require_workdir()
    config = workdir / FRAMEWORK_CONFIG
    original = config.read_bytes() if config.exists() else None
    text = original.decode("utf-8", "replace") if original is not None else "repos:\n"
    _check_framework_entries(text)
    if "git-ledger-pre-commit" not in text and "repos:" not in text:
        raise BadInput(
            f"{FRAMEWORK_CONFIG} has no 'repos:' list", "add the block from the README by hand"
        )
    import shutil

    exe = shutil.which("pre-commit")
    if exe is None:
        raise BadInput("the pre-commit program is not installed", "pip install pre-commit")
    # Native git-ledger hooks would be moved to <stage>.legacy by the framework
    # and then run twice: take them out first (a foreign hook they kept comes back).
    # All or nothing: a failed framework install puts them (and the config) back.
    native_dir = store.common_dir / "hooks"
    native = any(is_ours(native_dir / stage) for stage in STAGES)
    kept = {
        path: (path.read_bytes(), path.stat().st_mode)
        for stage in STAGES
        for path in (native_dir / stage, native_dir / f"{stage}.legacy")
        if path.is_file()
    }
    try:
        if native:
            uninstall(cwd, allow_hooks_path=False)
        return _framework_install(workdir, config, text, exe)
    except LedgerError:
        if original is None:
            config.unlink(missing_ok=True)
        else:
            write_atomic(config, original)
        for stage in STAGES:
            for path in (native_dir / stage, native_dir / f"{stage}.legacy"):
                if path not in kept:
                    path.unlink(missing_ok=True)
        for path, (data, mode) in kept.items():
            write_atomic(path, data, mode=mode & 0o7777)
        if native:
            output.warn("the framework install failed: the native git-ledger hooks are back")
        raise


def _framework_install(workdir: Path, config: Path, text: str, exe: str) -> int:
    if "git-ledger-pre-commit" not in text:
        write_atomic(config, text.rstrip("\n") + "\n" + FRAMEWORK_BLOCK)
        output.say(f"added git-ledger hooks to {FRAMEWORK_CONFIG} (commit it)")
    proc = gitcli.run(["config", "--get", "core.hooksPath"], workdir, check=False)
    if proc.returncode == 0:
        output.warn("core.hooksPath is set; 'pre-commit install' will refuse until it is unset")
    import subprocess

    types = [arg for stage in STAGES for arg in ("--hook-type", stage)]
    done = subprocess.run(
        [exe, "install", *types], cwd=workdir, capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise BadInput(f"pre-commit install failed: {done.stderr.strip() or done.stdout.strip()}")
    output.say(
        "pre-commit installed the pre-commit, prepare-commit-msg, commit-msg and pre-push stages"
    )
    return 0


def _check_framework_entries(text: str) -> None:
    """Hooks that carry git-ledger's ids must run git-ledger, not whatever a commit put there.

    The framework runs each hook's ``entry`` through a shell; a pushed
    .pre-commit-config.yaml could keep the id and change the command, and an
    install that only looked for the id would vouch for it.
    """
    import yaml

    try:
        data = yaml.safe_load(text) or {}
    except yaml.YAMLError as exc:
        raise BadInput(f"{FRAMEWORK_CONFIG} is not valid YAML: {exc}") from None
    repos = data.get("repos") if isinstance(data, dict) else None
    for repo in repos if isinstance(repos, list) else []:
        hooks = repo.get("hooks") if isinstance(repo, dict) else None
        for hook in hooks if isinstance(hooks, list) else []:
            hook_id = hook.get("id") if isinstance(hook, dict) else None
            if not isinstance(hook_id, str) or not hook_id.startswith("git-ledger-"):
                continue
            stage = hook_id.removeprefix("git-ledger-")
            entry = hook.get("entry")
            language = hook.get("language")
            extra = hook.get("args")
            if (
                (entry is not None and entry != f"git-ledger hooks run {stage}")
                or (language is not None and language not in ("system", "python"))
                or extra
            ):
                entry = f"{entry} {extra}" if extra else entry
                raise Refused(
                    f"{FRAMEWORK_CONFIG}: hook {hook_id} runs {entry!r} ({language}), "
                    f"not git-ledger",
                    f"make its entry 'git-ledger hooks run {stage}' or remove it, then retry",
                )


def run_stage(cwd: Path, stage: str, args: tuple[str, ...]) -> int:
    from ledger.hooks import fast as hookrun

    if cwd != Path("."):
        os.chdir(cwd)
    if stage == POST_RECEIVE:
        from ledger.hooks import servertips

        return servertips.main()
    return hookrun.main([stage, *args])
