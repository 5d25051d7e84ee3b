"""Train Chapter 8's tiny-Shakespeare character LM and write course_utils/assets/charlm_shakespeare.pt.

Usage: python scripts/train_charlm_checkpoint.py [--steps N] [--out PATH]

The checkpoint holds the weights, the recipe and the training log (training loss per step,
validation bits per character every few steps), so Chapter 8 draws its loss curve without
retraining. Seeded; other CPUs may differ in the last float bits, not in quality.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from course_utils.charlm import CHARLM_RECIPE, CHECKPOINT_PATH, save_charlm, train_charlm


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=None, help="override the recipe's steps (smoke runs)")
    parser.add_argument("--out", type=Path, default=CHECKPOINT_PATH)
    args = parser.parse_args(argv)
    model, history, log = train_charlm(CHARLM_RECIPE, progress=True, steps=args.steps)
    path = save_charlm(model, log, args.out)
    print(f"trained {len(history.losses)} steps in {history.seconds:.1f} s; validation bits/char by step:")
    print(dict(zip(log["val_steps"], [round(b, 3) for b in log["val_bits_per_char"]], strict=True)))
    print(f"wrote {path} ({path.stat().st_size / 1024:.0f} KiB)")


if __name__ == "__main__":
    main()
