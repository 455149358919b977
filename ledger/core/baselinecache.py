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
links, so a cached answer is never stale. The file is one derived cache
(:mod:`ledger.core.caches`): the last :data:`KEEP` walks under this code's key;
delete it any time, a corrupt or foreign one is ignored.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from ledger.core import caches

FILE = "baseline-history.json"
KEEP = 16  # (gate, configuration) pairs remembered


def config_key(gate: str, config: Any) -> str:
    """The gate and every setting a comparison on it reads, as one key."""
    from ledger.core.model.trusted import plain

    text = json.dumps([gate, plain(config.gates[gate]), plain(config.stats)], sort_keys=True)
    return hashlib.blake2b(text.encode(), digest_size=12).hexdigest()


def link(previous: str, fingerprint: str) -> str:
    return hashlib.blake2b(f"{previous}\0{fingerprint}".encode(), digest_size=10).hexdigest()


def load(state_dir: str, key: str) -> tuple[list[str], list[str | None]]:
    """(chain, best id after each link) cached for ``key``; empty when there is none."""
    found = caches.recall(caches.path(state_dir, FILE), caches.key(FILE), key, dict)
    chain, best = (found.get("chain"), found.get("best")) if found is not None else (None, None)
    if isinstance(chain, list) and isinstance(best, list) and len(chain) == len(best):
        return chain, best
    return [], []


def save(state_dir: str, key: str, chain: list[str], best: list[str | None]) -> None:
    caches.remember(
        caches.path(state_dir, FILE), caches.key(FILE), key, {"chain": chain, "best": best}, KEEP
    )
