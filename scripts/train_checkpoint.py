"""Train Chapter 6's reversal model with the fast recipe and write course_utils/assets/reversal_transformer.pt.

Usage: python scripts/train_checkpoint.py [--steps N] [--out PATH]

Later chapters load the result with course_utils.pretrained.load_reversal_model() instead of
training. The run is seeded; on the same machine and thread count it reproduces the shipped
weights (other CPUs may differ in the last float bits, not in accuracy).
"""

from __future__ import annotations

import argparse
import copy
from pathlib import Path

import torch

from course_utils.evaluation import evaluate_by_length, results_table
from course_utils.pretrained import CHECKPOINT_PATH, FAST_RECIPE, save_checkpoint, train_reversal_model


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=None, help="override the recipe's steps (smoke runs)")
    parser.add_argument("--out", type=Path, default=CHECKPOINT_PATH)
    parser.add_argument("--no-eval", action="store_true", help="skip the evaluation table")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: PyTorch's choice)")
    args = parser.parse_args(argv)
    if args.threads is not None:
        torch.set_num_threads(args.threads)
    recipe = copy.deepcopy(FAST_RECIPE)
    model, history = train_reversal_model(recipe, progress=True, steps=args.steps)
    if args.steps is not None:
        recipe["train"]["steps"] = len(history.losses)
        recipe["train"]["warmup"] = min(recipe["train"]["warmup"], args.steps - 1)
    path = save_checkpoint(model, recipe, args.out)
    print(f"trained {len(history.losses)} steps in {history.seconds:.1f} s, final loss {history.losses[-1]:.4f}")
    print(f"wrote {path} ({path.stat().st_size / 1024:.0f} KiB)")
    if not args.no_eval:
        print(results_table(evaluate_by_length(model, range(3, 16), 200), (recipe["min_len"], recipe["max_len"])))


if __name__ == "__main__":
    main()
