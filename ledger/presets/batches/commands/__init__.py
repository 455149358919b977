"""Batches verbs: weights init|revise|copy, gate topic|batch|converged, trace emit, resume.

One module per verb group: ``weights`` (init, revise, copy), ``gates`` (topic,
batch, converged), ``tracing`` (trace emit, resume), and ``common``, what they
share.
"""

from __future__ import annotations

from ledger.presets.batches.commands.gates import gate_batch, gate_converged, gate_topic
from ledger.presets.batches.commands.tracing import resume, trace_emit
from ledger.presets.batches.commands.weights import (
    parse_new,
    weights_change,
    weights_init,
    weights_vocabulary,
)

# The verbs the command line calls, and what a caller may read besides.
__all__ = [
    "gate_batch",
    "gate_converged",
    "gate_topic",
    "parse_new",
    "resume",
    "trace_emit",
    "weights_change",
    "weights_init",
    "weights_vocabulary",
]
