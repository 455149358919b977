"""git-ledger demo evaluation: a noisy objective tuned by the parameters in params.json.

The score is a smooth function of the learning rate, the width and the dropout
(best near lr=0.3, width=64, dropout=0.1), plus Gaussian noise drawn from the
seed, so the same seed always gives the same result and different seeds give
the spread a verdict must see through. ``--unseeded`` draws the noise without
the seed, to show what DETERMINISM: FAIL looks like.
"""

import argparse
import json
import math
import random
import time


def objective(lr: float, width: int, dropout: float) -> float:
    return (
        100.0
        - 40.0 * math.log10(lr / 0.3) ** 2
        - 0.004 * (width - 64) ** 2
        - 60.0 * (dropout - 0.1) ** 2
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--params", default="params.json")
    parser.add_argument("--noise", type=float, default=0.6)
    parser.add_argument("--unseeded", action="store_true")
    args = parser.parse_args()
    started = time.perf_counter()
    with open(args.params) as handle:
        params = json.load(handle)
    rng = random.Random() if args.unseeded else random.Random(args.seed)
    base = objective(float(params["lr"]), int(params["width"]), float(params["dropout"]))
    # A short "training run": the score is the mean of noisy evaluations.
    evals = [base + rng.gauss(0.0, args.noise * 3) for _ in range(9)]
    score = sum(evals) / len(evals)
    result = {
        "score": round(score, 6),
        "loss": round(max(0.0, (100.0 - score) / 100.0), 6),
        "params": params,
        "evals": [round(e, 6) for e in evals],
        "wall_time_s": round(time.perf_counter() - started, 6),
    }
    with open(args.out, "w") as handle:
        json.dump(result, handle, indent=2, sort_keys=True)
    print(f"seed {args.seed}: score {score:.3f}")


if __name__ == "__main__":
    main()
