"""Benchmark: train Chapter 6's reversal recipe from scratch and print one JSON line.

Usage:
    python benchmarks/reversal.py               # the chapter's fast recipe
    python benchmarks/reversal.py --reference   # also the reference recipe, in the same run, and the speed ratio

The JSON holds train_seconds (optimisation only, no evaluation, wall clock), train_cpu_seconds
(the process's CPU time over the same span, which other jobs on a shared machine disturb less), steps, params and
exact_match / token_accuracy by length 3..15 (greedy decoding, fresh seeded test strings).
Timings depend on the machine and on whatever else runs on it.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import torch

from course_utils.evaluation import evaluate_by_length
from course_utils.pretrained import FAST_RECIPE, REFERENCE_RECIPE, train_reversal_model

LENGTHS = range(3, 16)


def run(recipe: dict, n_per_length: int) -> dict:
    """Train ``recipe`` from scratch, evaluate by length, return the benchmark record."""
    cpu_start = time.process_time()
    model, history = train_reversal_model(recipe, progress=False)
    cpu_seconds = time.process_time() - cpu_start  # CPU time of this process: less sensitive to other load
    results = evaluate_by_length(model, LENGTHS, n_per_length)
    return {
        "train_seconds": round(history.seconds, 1),
        "train_cpu_seconds": round(cpu_seconds, 1),
        "steps": len(history.losses),
        "params": sum(p.numel() for p in model.parameters()),
        "final_loss": round(sum(history.losses[-50:]) / 50, 4),
        "exact_match": {str(n): round(100 * r["exact_match"], 1) for n, r in results.items()},
        "token_accuracy": {str(n): round(100 * r["token_accuracy"], 1) for n, r in results.items()},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reference", action="store_true", help="also train the reference recipe")
    parser.add_argument("--n-per-length", type=int, default=200, help="test strings per length")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: PyTorch's choice)")
    args = parser.parse_args()
    if args.threads is not None:
        torch.set_num_threads(args.threads)
    fast = run(FAST_RECIPE, args.n_per_length)
    fast["torch_threads"] = torch.get_num_threads()
    print(json.dumps({"fast": fast}), file=sys.stderr, flush=True)  # progress: the reference takes minutes
    if not args.reference:
        print(json.dumps(fast))
        return
    reference = run(REFERENCE_RECIPE, args.n_per_length)
    speedup = reference["train_seconds"] / fast["train_seconds"]
    cpu_speedup = reference["train_cpu_seconds"] / fast["train_cpu_seconds"]
    print(json.dumps({"fast": fast, "reference": reference, "speedup": round(speedup, 2),
                      "cpu_speedup": round(cpu_speedup, 2)}))


if __name__ == "__main__":
    main()
