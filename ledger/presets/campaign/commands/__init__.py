"""Campaign verbs: contract, arm, candidate record, benchmark adjust, mistake add, finish,
close, deliver.

One module per verb group: ``opening`` (contract, arm), ``records`` (candidate,
benchmark adjustment, mistake), ``closing`` (finish, close), ``delivery``
(deliver), and ``common``, what they share.
"""

from __future__ import annotations

from ledger.presets.campaign.commands.closing import close, finish, out_of_scope
from ledger.presets.campaign.commands.delivery import deliver
from ledger.presets.campaign.commands.opening import CONTRACT_SKELETON, arm, contract
from ledger.presets.campaign.commands.records import (
    benchmark_adjust,
    candidate_record,
    mistake_add,
)

# The verbs the command line calls, and what a caller may read besides.
__all__ = [
    "CONTRACT_SKELETON",
    "arm",
    "benchmark_adjust",
    "candidate_record",
    "close",
    "contract",
    "deliver",
    "finish",
    "mistake_add",
    "out_of_scope",
]
