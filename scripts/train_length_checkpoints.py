"""Train Chapter 9's two shipped reversal models and write them to course_utils/assets/.

Usage: python scripts/train_length_checkpoints.py [--schemes NAME ...] [--steps N]

The winner (WINNER, trained for WINNER_STEPS steps) and the paper's sinusoidal model (the
benchmark's budget), both with the benchmark's recipe otherwise
(course_utils.length_generalisation.scheme_recipe, trained on lengths 3-10), so the notebook
loads them instead of training. Each checkpoint stores its exact match and token accuracy at
lengths 3-40 (100 strings each) in its recipe, under "curve", and at lengths 3-10 on 1000 other
strings each, under "inside_curve", and on every one of the 17,576 strings of 3 letters, under
"every_string_3". Seeded: on the same machine and thread count it
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
    every_string_score,
    length_curve,
    train_scheme,
)
from course_utils.pretrained import save_checkpoint

INSIDE_N, INSIDE_SEED = 1000, 99  # strings per length 3-10 for "inside_curve", and their generator's seed


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--schemes", nargs="+", default=[WINNER, LOSER], choices=list(SCHEMES))
    parser.add_argument("--steps", type=int, default=None, help="override the recipe's steps (smoke runs)")
    args = parser.parse_args(argv)
    for name in args.schemes:
        steps = args.steps or (WINNER_STEPS if name == WINNER else None)
        model, history, recipe = train_scheme(name, 3, 10, steps, progress=False)
        recipe["curve"] = length_curve(model, TEST_LENGTHS, 100)
        # a closer look inside the training lengths, where one string in 100 is already 1 %
        recipe["inside_curve"] = {"n_per_length": INSIDE_N, "seed": INSIDE_SEED,
                                  **length_curve(model, range(3, 11), INSIDE_N, seed=INSIDE_SEED)}
        recipe["every_string_3"] = every_string_score(model, 3)  # all 17,576 strings of 3 letters
        recipe["train_seconds"] = round(history.seconds, 1)
        path = save_checkpoint(model, recipe, checkpoint_path(name))
        em = {n: recipe["curve"]["exact_match"][str(n)] for n in (3, 4, 10, 11, 15, 20, 30, 40)}
        inside = min(recipe["inside_curve"]["exact_match"].values())
        print(f"{name}: {len(history.losses)} steps in {history.seconds:.1f} s -> {path.name} "
              f"({path.stat().st_size / 1024:.0f} KiB); exact match % by length {em}; "
              f"worst at 3-10 on {INSIDE_N} strings each: {inside}; every 3-letter string: "
              f"{recipe['every_string_3']['exact_match']} ({recipe['every_string_3']['wrong']} wrong)")


if __name__ == "__main__":
    main()
