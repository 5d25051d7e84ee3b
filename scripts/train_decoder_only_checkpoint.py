"""Train Chapter 8's decoder-only reversal model and write course_utils/assets/reversal_decoder_only.pt.

Usage: python scripts/train_decoder_only_checkpoint.py [--steps N] [--out PATH]

Chapter 8 loads the result with course_utils.reversal_lm.load_decoder_only_reversal() instead
of training. The run is seeded; on the same machine and thread count it reproduces the shipped
weights (other CPUs may differ in the last float bits, not in accuracy).
"""

from __future__ import annotations

import argparse
import copy
from pathlib import Path

from course_utils.evaluation import evaluate_by_length, results_table
from course_utils.pretrained import save_checkpoint
from course_utils.reversal_lm import (
    CHECKPOINT_PATH,
    DECODER_ONLY_RECIPE,
    reverse_strings_decoder_only,
    train_decoder_only_reversal,
)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=None, help="override the recipe's steps (smoke runs)")
    parser.add_argument("--out", type=Path, default=CHECKPOINT_PATH)
    args = parser.parse_args(argv)
    recipe = copy.deepcopy(DECODER_ONLY_RECIPE)
    model, history = train_decoder_only_reversal(recipe, progress=True, steps=args.steps)
    recipe["train"]["steps"] = len(history.losses)
    recipe["train"]["warmup"] = min(recipe["train"]["warmup"], len(history.losses) - 1)
    recipe["train_loss"] = [round(x, 5) for x in history.losses]  # the training log, for the loss curve
    path = save_checkpoint(model, recipe, args.out)
    print(f"trained {len(history.losses)} steps in {history.seconds:.1f} s, final loss {history.losses[-1]:.4f}")
    print(f"wrote {path} ({path.stat().st_size / 1024:.0f} KiB)")
    results = evaluate_by_length(lambda s: reverse_strings_decoder_only(model, s), range(3, 16), 200)
    print(results_table(results, (recipe["min_len"], recipe["max_len"])))


if __name__ == "__main__":
    main()
