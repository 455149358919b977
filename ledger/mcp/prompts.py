"""The server's prompts: one per loop, carrying the loop's procedure, so a client can
start a loop from a prompt. Each names the tools that take its steps; ``next`` is
always the way back after a crash or a lost context.

The loops are the registry's (``ledger.core.loops.NAMES``); a loop without a
procedure here still gets the generic one (a test holds that every loop has its own).
"""

from __future__ import annotations

from ledger.core.loops import NAMES

_COMMON = (
    "Before each step call the 'next' tool and take the step it proposes; fill each "
    "placeholder with what its 'meanings' entry says. A refused call returns the rule, the "
    "message and the fix: follow the fix, never work around the rule (no --override unless a "
    "person said why). Call 'status' to see where the loop stands. Settings that run "
    "programs are a person's edit of ledger.toml, not yours."
)

PROCEDURES: dict[str, tuple[str, str]] = {
    "versions": (
        "Run the versions loop: pre-register one bet, measure it, conclude honestly, reflect.",
        "1. Set up the ledger with 'init' if there is none.\n"
        "2. Pre-register the next bet with 'register' BEFORE writing its code: the hypothesis "
        "(bet), the gate, the files it changes and the falsifier (the result that would show "
        "it wrong). One version is open at a time.\n"
        "3. Write the code and commit it with git (the hooks tie the commit to the version).\n"
        "4. Measure: 'run' the gate's configured command per seed, then 'wait'; or measure "
        "yourself and 'record' each seed's results inline (result: a JSON object).\n"
        "5. 'conclude' with the verdict the statistics allow (confirmed, refuted, "
        "inconclusive) and what comes next; a verdict inside the noise is refused.\n"
        "6. When 'triggers' fire (refutations in a row, stagnation), 'reflect' writes "
        "REFLECTION_<ID>.md: fill every section and commit it with git before the next "
        "registration.\n"
        "7. 'phase' declares a phase transition when the direction is exhausted.",
    ),
    "campaign": (
        "Run a performance campaign: a fixed contract, one commit per candidate, four "
        "measurements each.",
        "1. Set up with 'init' (preset campaign) if there is no ledger.\n"
        "2. Write training_log/contract.md (what is measured, what may change) and commit it "
        "with 'contract'; it is fixed once committed.\n"
        "3. Record the base with 'candidate_record' (verdict base), then 'arm' the campaign.\n"
        "4. For each optimisation: one commit, measured (speed, accelerator memory, CPU "
        "memory, correctness: each a number or 'N/A: reason'), recorded with "
        "'candidate_record' as promoted or rejected (a reason is required).\n"
        "5. 'mistake_add' when a mistake is caught; 'benchmark_adjust' when the measuring "
        "changes (earlier numbers stop counting).\n"
        "6. 'close' writes the closing report; 'finish' lists what is outstanding until "
        "nothing is; then 'deliver' the base and promoted commits.",
    ),
    "batches": (
        "Run the batches loop: revise exactly one weight per batch until convergence.",
        "1. Set up with 'init' (preset batches) if there is no ledger.\n"
        "2. 'weights_init' commits batch-0's weights from a JSON file; it freezes the "
        "[batches] thresholds.\n"
        "3. Evaluate each topic with 'gate_topic' (fidelity rate, monotonicity, endpoints), "
        "recording it for the open batch.\n"
        "4. Close the batch with 'gate_batch' (record).\n"
        "5. Open the next batch with 'weights_revise' (exactly one weight, with a reason) or "
        "'weights_copy'.\n"
        "6. 'gate_converged' (record) ends the loop when the last K batch ratios all pass.",
    ),
}


def names() -> list[str]:
    """The prompts' names: one per loop."""
    return [f"{loop}-loop" for loop in NAMES]


def prompt(name: str) -> tuple[str, str] | None:
    """The description and the text of prompt ``name`` (None: no such prompt)."""
    loop = name.removesuffix("-loop")
    if name not in names():
        return None
    description, steps = PROCEDURES.get(loop, (f"Run the {loop} loop.", ""))
    return description, f"{description}\n\n{steps}\n\n{_COMMON}".replace("\n\n\n", "\n\n")
