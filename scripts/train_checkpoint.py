"""Train a shipped model from scratch with its recipe and write its checkpoint to course_utils/assets/.

Usage: python scripts/train_checkpoint.py [--run NAME] [--steps N] [--out PATH] [--threads N] [--no-eval]

NAME is a key of ``course_utils.runs.makers.RUNNERS`` (``--help`` lists them); which file each
makes, and with which command, is in ``course_utils/assets/README.md`` (generated from
``course_utils.runs.registry.MADE_BY``).

Every checkpoint holds its kind, config, the recipe that actually ran (after --steps) and its
results (training log, curves); `python -m course_utils.runs check` compares the recipe with the
code. Seeded: on the same machine and thread count a run reproduces the shipped weights (other
CPUs may differ in the last float bits, not in accuracy).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import torch

from course_utils.runs.makers import RUNNERS


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", choices=list(RUNNERS), default="reversal",
                        help="which shipped model (default: reversal)")
    parser.add_argument("--steps", type=int, default=None, help="override the recipe's steps (smoke runs)")
    parser.add_argument("--out", type=Path, default=None, help="write here instead of course_utils/assets/")
    parser.add_argument("--no-eval", action="store_true", help="skip the evaluation table")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: PyTorch's choice)")
    args = parser.parse_args(argv)
    if args.threads is not None:
        torch.set_num_threads(args.threads)
    for line in RUNNERS[args.run](args.steps, args.out, not args.no_eval):
        print(line)


if __name__ == "__main__":
    main()
