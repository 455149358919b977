"""``git ledger init``: write ledger.toml, the ledger dir and its template in one commit."""

from __future__ import annotations

import re
from pathlib import Path

from ledger.core import output
from ledger.core.configfile import read_config_text
from ledger.core.context import load_config, open_store
from ledger.core.errors import BadInput, Refused
from ledger.core.loops import preset_for
from ledger.core.model.config import CONFIG_FILE, parse_config
from ledger.core.repobase import DEFAULT_PRESET
from ledger.core.resources import read_resource, render
from ledger.core.state import LedgerState
from ledger.core.store import Snapshot, Transition
from ledger.core.views import readme_update
from ledger.hooks.mergeviews import attributes_text


def run(cwd: Path, preset: str | None, directory: str | None, as_json: bool) -> int:
    store = open_store(cwd)
    store.require_workdir()
    if directory is not None and not re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_./-]{0,99}", directory):
        raise BadInput(f"invalid ledger dir {directory!r}", "use a relative path like training_log")
    on_disk = read_config_text(store)
    if on_disk is not None and on_disk[0] == CONFIG_FILE:
        # A ledger.toml the user wrote before init is adopted as it is.
        config_name, config_text = on_disk
        config = parse_config(config_text, config_name)
        for given, actual, flag in (
            (preset, config.ledger.preset, "--preset"),
            (directory, config.ledger.dir, "--dir"),
        ):
            if given is not None and given != actual:
                raise BadInput(
                    f"{flag} {given} disagrees with {CONFIG_FILE} ({actual})",
                    f"drop {flag} or edit {CONFIG_FILE}",
                )
    elif on_disk is not None:
        config_name, config_text = on_disk
        config = parse_config(config_text, config_name)
    else:
        config_name = CONFIG_FILE
        chosen = preset or DEFAULT_PRESET
        config_text = render(
            read_resource("templates", f"ledger-{chosen}.toml"), dir=directory or "training_log"
        )
        config = parse_config(config_text, CONFIG_FILE)

    def build(snap: Snapshot) -> Transition:
        base = config.dir
        # Initialised = configuration and ledger dir both on record. A committed
        # ledger.toml without its dir (written by hand first) is adopted.
        if load_config(store, snap) is not None and snap.is_tree(base):
            raise Refused("this repository already has a ledger", "see 'git ledger status'")
        empty = LedgerState(config=config, commit_id=snap.commit_id)
        preset = preset_for(config)
        writes: dict[str, bytes | None] = {
            config_name: snap.read(config_name) or config_text.encode(),
            **readme_update(snap, empty, preset),
        }
        attributes = snap.read(".gitattributes")
        writes[".gitattributes"] = attributes_text(
            config, attributes.decode() if attributes is not None else ""
        ).encode()
        writes.update(preset.init_writes(config, snap))
        return Transition(
            kind="init",
            step="init",
            subject=f"chore(ledger): initialise the {config.ledger.preset} ledger in {base}/",
            writes=writes,
        )

    commit_id, transition = store.transact(build)
    from ledger.hooks.mergeviews import configure_driver

    configure_driver(store.require_workdir())
    if as_json:
        output.emit_json(
            {
                "commit": commit_id,
                "preset": config.ledger.preset,
                "dir": config.dir,
                "files": sorted(transition.writes),
            }
        )
    else:
        output.say(
            f"initialised a {config.ledger.preset} ledger in {config.dir}/ ({commit_id[:10]})"
        )
        output.say("next: git ledger next")
    return 0
