"""Train Chapter 9's two shipped reversal models and write them to course_utils/assets/.

Usage: python scripts/train_length_checkpoints.py [--schemes NAME ...] [--steps N]

The winner (rope-end-randomized) and the paper's sinusoidal model, both with the benchmark's
recipe (course_utils.length_generalisation.scheme_recipe, trained on lengths 3-10), so the
notebook loads them instead of training. Seeded: on the same machine and thread count it
reproduces the shipped weights (other CPUs may differ in the last float bits).
"""

from __future__ import annotations

import argparse

from course_utils.length_generalisation import LOSER, SCHEMES, WINNER, checkpoint_path, length_curve, train_scheme
from course_utils.pretrained import save_checkpoint


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--schemes", nargs="+", default=[WINNER, LOSER], choices=list(SCHEMES))
    parser.add_argument("--steps", type=int, default=None, help="override the recipe's steps (smoke runs)")
    args = parser.parse_args(argv)
    for name in args.schemes:
        model, history, recipe = train_scheme(name, 3, 10, args.steps, progress=True)
        path = save_checkpoint(model, recipe, checkpoint_path(name))
        em = length_curve(model, (3, 10, 11, 15, 20, 30, 40), 100)["exact_match"]
        print(f"{name}: {len(history.losses)} steps in {history.seconds:.1f} s -> {path.name} "
              f"({path.stat().st_size / 1024:.0f} KiB); exact match % by length {em}")


if __name__ == "__main__":
    main()
