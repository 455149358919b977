"""The standing-baseline walk of a gate, remembered across processes by a hash chain.

Who held the standing best before each version is a prefix computation: the
answer at version *i* depends only on the versions before it (their order,
verdicts and results on the gate) and on the gate's and the statistics'
configuration. Replaying it costs one comparison per confirmed version, so a
``conclude`` at 10,000 steps paid for 10,000 comparisons to add one.

Each version gets a link ``h_i = H(h_{i-1}, what the walk reads of version i)``
(its id, whether and how it is concluded, the blob ids of its results on the
gate); the cache keeps, per gate and configuration, the chain and the best
after each link. A caller resumes from the longest prefix whose links agree
and compares only the versions after it. The same inputs always give the same
links, so a cached answer is never stale, and the file is derived data like
the entry cache: delete it any time, a corrupt or foreign one is ignored.
"""

from __future__ import annotations

import hashlib
import json
import os
from typing import Any

from ledger.core.codeid import code_id
from ledger.core.repobase import write_atomic

FILE = "baseline-history.json"
KEEP = 16  # (gate, configuration) pairs remembered


def config_key(gate: str, config: Any) -> str:
    """The gate and every setting a comparison on it reads, as one key."""
    cfg = config.gates[gate]
    text = json.dumps(
        [gate, cfg.model_dump(mode="json"), config.stats.model_dump(mode="json")], sort_keys=True
    )
    return hashlib.blake2b(text.encode(), digest_size=12).hexdigest()


def link(previous: str, fingerprint: str) -> str:
    return hashlib.blake2b(f"{previous}\0{fingerprint}".encode(), digest_size=10).hexdigest()


def load(state_dir: str, key: str) -> tuple[list[str], list[str | None]]:
    """(chain, best id after each link) cached for ``key``; empty when there is none."""
    try:
        with open(os.path.join(state_dir, "cache", FILE), encoding="utf-8") as handle:
            raw = json.load(handle)
        if raw.get("version") != code_id():
            return [], []
        found = raw["gates"].get(key)
        if found is None:
            return [], []
        chain, best = found["chain"], found["best"]
        if isinstance(chain, list) and isinstance(best, list) and len(chain) == len(best):
            return chain, best
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        pass
    return [], []


def save(state_dir: str, key: str, chain: list[str], best: list[str | None]) -> None:
    path = os.path.join(state_dir, "cache", FILE)
    try:
        try:
            with open(path, encoding="utf-8") as handle:
                raw = json.load(handle)
            gates = raw["gates"] if raw.get("version") == code_id() else {}
            if not isinstance(gates, dict):
                gates = {}
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            gates = {}
        gates.pop(key, None)
        gates[key] = {"chain": chain, "best": best}
        while len(gates) > KEEP:
            del gates[next(iter(gates))]
        data = json.dumps({"version": code_id(), "gates": gates}, separators=(",", ":"))
        write_atomic(path, data, durable=False)
    except OSError:
        return  # a cache that cannot be written only costs time
