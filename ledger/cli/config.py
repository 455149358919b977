"""``git ledger config set KEY VALUE --reason TEXT``: a visible configuration transition.

The verdict-affecting tables (gates, stats, triggers, batches, campaign) are
frozen per version: a verdict uses the values in force at its registration.
Changing them is a transition of its own (``Ledger-Transition: config``) that
applies to versions registered after it; ``verify`` flags any other change.

The file is edited in place, line by line, so comments and layout stay; the
result is parsed back and must differ from the original in exactly KEY.
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

from ledger.core import output
from ledger.core.context import Context, open_context
from ledger.core.errors import BadInput, Refused
from ledger.core.model.config import parse_config
from ledger.core.model.ids import one_line
from ledger.core.store import Snapshot, Transition


def parse_value(text: str) -> tuple[Any, str]:
    """(value, its TOML spelling): a TOML literal if it is one, else a string."""
    try:
        value = tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text, json.dumps(text)
    return value, text.strip()


def _header(line: str) -> list[str] | None:
    stripped = line.split("#", 1)[0].strip()
    if stripped.startswith("[") and stripped.endswith("]") and not stripped.startswith("[["):
        return [p.strip().strip('"') for p in stripped[1:-1].split(".")]
    return None


def edit(text: str, table: list[str], key: str, literal: str) -> str:
    lines = text.split("\n")
    start = None
    for i, line in enumerate(lines):
        if _header(line) == table:
            start = i
            break
    if start is None:
        name = ".".join(table)
        return text.rstrip("\n") + f"\n\n[{name}]\n{key} = {literal}\n"
    end = next(
        (j for j in range(start + 1, len(lines)) if lines[j].lstrip().startswith("[")),
        len(lines),
    )
    for j in range(start + 1, end):
        name, sep, _ = lines[j].partition("=")
        if sep and name.strip().strip('"') == key:
            indent = lines[j][: len(lines[j]) - len(lines[j].lstrip())]
            lines[j] = f"{indent}{key} = {literal}"
            return "\n".join(lines)
    insert = end
    while insert > start + 1 and not lines[insert - 1].strip():
        insert -= 1
    lines.insert(insert, f"{key} = {literal}")
    return "\n".join(lines)


def _without(data: dict[str, Any], path: list[str]) -> dict[str, Any]:
    """``data`` without the key at ``path``, and without the tables on the way that
    leaves empty (a key set in a table the file did not have adds that table)."""
    copy = json.loads(json.dumps(data, default=str))
    nodes = [copy]
    for part in path[:-1]:
        node = nodes[-1].get(part, {}) if isinstance(nodes[-1], dict) else {}
        nodes.append(node)
    if isinstance(nodes[-1], dict):
        nodes[-1].pop(path[-1], None)
    for parent, part in zip(reversed(nodes[:-1]), reversed(path[:-1]), strict=True):
        if isinstance(parent, dict) and parent.get(part) == {}:
            del parent[part]
    return dict(copy)


def _lookup(data: dict[str, Any], path: list[str]) -> Any:
    node: Any = data
    for part in path:
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node


def refuse_frozen(ctx: Context, snap: Snapshot, key: str, value: Any) -> None:
    """Refuse to change a number the loop froze at ``snap`` (exit 1): the loop's own
    declaration (:meth:`ledger.core.loops.Preset.frozen_settings`), which its checks of
    ledger.toml read too, so no gate meets a value that ``config set`` wrote."""
    from ledger.core.loops import preset_for

    for setting in preset_for(ctx.config).frozen_settings(ctx, snap):
        refusal = setting.refusal(value) if setting.key == key else None
        if refusal is not None:
            raise Refused(refusal, f"keep {key} = {setting.literal()}")


def run_set(cwd: Path, key: str, value: str, reason: str, as_json: bool) -> int:
    ctx = open_context(cwd)
    reason = one_line(reason, "--reason")
    one_line(value, "VALUE")
    parts = [p for p in key.split(".")]
    if len(parts) < 2 or not all(parts):
        raise BadInput(f"invalid key {key!r}", "use TABLE.KEY, e.g. gates.recent.noise_floor")
    ctx.require_committed_config()
    prefix = ["tool", "ledger"] if ctx.config_file == "pyproject.toml" else []
    new_value, literal = parse_value(value)
    name = ctx.config_file

    def build(snap: Snapshot) -> Transition:
        current = snap.read(name)
        if current is None:
            raise BadInput(f"{name} is not committed", "commit it first")
        # A frozen key is refused (exit 1) however ledger.toml spells it.
        refuse_frozen(ctx, snap, ".".join(parts), new_value)
        text = current.decode("utf-8")
        path = prefix + parts
        updated = edit(text, path[:-1], path[-1], literal)
        try:
            before, after = tomllib.loads(text), tomllib.loads(updated)
        except tomllib.TOMLDecodeError:
            raise BadInput(
                f"cannot set {key} in place", f"edit {name} by hand and commit it on its own"
            ) from None
        if _lookup(after, path) != new_value or _without(before, path) != _without(after, path):
            raise BadInput(
                f"cannot set {key} in place (an inline table or a multi-line value)",
                f"edit {name} by hand and commit it on its own (a configuration transition)",
            )
        parse_config(updated, name)  # bad types are exit 2, naming the key
        refuse_frozen(ctx, snap, ".".join(parts), new_value)
        return Transition(
            kind="config",
            step="config",
            subject=f"chore(config): set {key} = {literal}",
            writes={name: updated.encode()},
            trailers=(("Ledger-Reason", reason),),
        )

    commit_id, _ = ctx.store.transact(build)
    if as_json:
        output.emit_json({"key": key, "value": new_value, "commit": commit_id, "reason": reason})
    else:
        output.say(
            f"set {key} = {literal} ({commit_id[:10]}): applies to versions registered from now on"
        )
    return 0
