"""Train Chapter 9's two shipped reversal models and write them to course_utils/assets/.

Usage: python scripts/train_length_checkpoints.py [--schemes NAME ...] [--steps N]

The winner (WINNER, trained for WINNER_STEPS steps) and the paper's sinusoidal model (the
benchmark's budget), both with the benchmark's recipe otherwise
(course_utils.length_generalisation.scheme_recipe, trained on lengths 3-10), so the notebook
loads them instead of training. Each checkpoint stores its exact match and token accuracy at
lengths 3-40 (100 strings each) in its recipe, under "curve". Seeded: on the same machine and thread count it
reproduces the shipped weights (other CPUs may differ in the last float bits).
"""

from __future__ import annotations

import argparse

from course_utils.length_generalisation import (
    LOSER,
    SCHEMES,
    TEST_LENGTHS,
    WINNER,
    WINNER_STEPS,
    checkpoint_path,
    length_curve,
    train_scheme,
)
from course_utils.pretrained import save_checkpoint


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--schemes", nargs="+", default=[WINNER, LOSER], choices=list(SCHEMES))
    parser.add_argument("--steps", type=int, default=None, help="override the recipe's steps (smoke runs)")
    args = parser.parse_args(argv)
    for name in args.schemes:
        steps = args.steps or (WINNER_STEPS if name == WINNER else None)
        model, history, recipe = train_scheme(name, 3, 10, steps, progress=False)
        recipe["curve"] = length_curve(model, TEST_LENGTHS, 100)
        recipe["train_seconds"] = round(history.seconds, 1)
        path = save_checkpoint(model, recipe, checkpoint_path(name))
        em = {n: recipe["curve"]["exact_match"][str(n)] for n in (3, 4, 10, 11, 15, 20, 30, 40)}
        print(f"{name}: {len(history.losses)} steps in {history.seconds:.1f} s -> {path.name} "
              f"({path.stat().st_size / 1024:.0f} KiB); exact match % by length {em}")


if __name__ == "__main__":
    main()
