"""Benchmark: length generalisation of string reversal under every positional scheme (Chapter 9).

Usage:
    python benchmarks/length_generalisation.py                 # every scheme, writes the JSON asset
    python benchmarks/length_generalisation.py --schemes rope t5 --no-write

Each scheme is trained from scratch with the same model, steps, batch and seed (Chapter 6's fast
recipe; only the positional scheme changes) on lengths 3-10, then evaluated by greedy decoding
on fresh seeded strings of every length 3-40 (exact match and token accuracy, in percent).
The variant of exercise 40.5 trains on lengths 1-4 and tests on 12. The last line printed is
one JSON record; it is also written to course_utils/assets/length_generalisation.json, which
Chapter 9 reads. Timings depend on the machine and on whatever else runs on it.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

import torch

from course_utils.length_generalisation import (
    CAUSAL_SCHEMES,
    LOSER,
    RESULTS_PATH,
    SCHEMES,
    TEST_LENGTHS,
    WINNER,
    checkpoint_path,
    length_curve,
    train_causal_scheme,
    train_scheme,
)
from course_utils.pretrained import save_checkpoint

VARIANT_LENGTHS = (1, 4)  # exercise 40.5: train on lengths <= 4 ...
VARIANT_TEST = (1, 2, 3, 4, 12)  # ... and test on 12
VARIANT_STEPS = 200  # short strings are learned in fewer steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--schemes", nargs="+", default=[*SCHEMES, *CAUSAL_SCHEMES],
                        choices=[*SCHEMES, *CAUSAL_SCHEMES])
    parser.add_argument("--steps", type=int, default=None, help="override the recipe's steps (smoke runs)")
    parser.add_argument("--n-per-length", type=int, default=100, help="test strings per length")
    parser.add_argument("--no-variant", action="store_true", help="skip the lengths <= 4 variant")
    parser.add_argument("--variant-only", action="store_true", help="only the lengths <= 4 variant")
    parser.add_argument("--no-write", action="store_true", help="do not write the JSON asset")
    parser.add_argument("--out", type=Path, default=RESULTS_PATH, help="where to write the JSON record")
    parser.add_argument("--update", action="store_true",
                        help="add these schemes to the existing JSON asset (times add up) instead of replacing it")
    parser.add_argument("--checkpoints", action="store_true",
                        help=f"also save the {WINNER} and {LOSER} models as Chapter 9's shipped checkpoints "
                        "(the same recipe as scripts/train_length_checkpoints.py)")
    args = parser.parse_args()
    start = time.perf_counter()
    record: dict = {"train_lengths": [3, 10], "schemes": {}}
    for name in [] if args.variant_only else args.schemes:
        if name in CAUSAL_SCHEMES:  # Chapter 8's decoder-only model, reversal as one sequence
            model, history, recipe = train_causal_scheme(name, 3, 10, args.steps)
        else:
            model, history, recipe = train_scheme(name, 3, 10, args.steps)
        curve = length_curve(model, TEST_LENGTHS, args.n_per_length)
        if args.checkpoints and name in (WINNER, LOSER):
            save_checkpoint(model, recipe, checkpoint_path(name))
        record["schemes"][name] = {**curve, "train_seconds": round(history.seconds, 1), "steps": len(history.losses)}
        em = curve["exact_match"]
        print(f"{name:22s} trained {history.seconds:5.1f} s; exact match % at 10/11/15/20/40: "
              f"{em['10']}/{em['11']}/{em['15']}/{em['20']}/{em['40']}", flush=True)
    if not args.no_variant:
        record["variant_40_5"] = {"train_lengths": list(VARIANT_LENGTHS), "schemes": {}}
        for name in args.schemes:
            train_fn = train_causal_scheme if name in CAUSAL_SCHEMES else train_scheme
            model, history, _ = train_fn(name, *VARIANT_LENGTHS, args.steps or VARIANT_STEPS)
            curve = length_curve(model, VARIANT_TEST, args.n_per_length)
            record["variant_40_5"]["schemes"][name] = {**curve, "train_seconds": round(history.seconds, 1)}
            print(f"{name:22s} trained on 1-4: exact match % at 4 / 12: {curve['exact_match']['4']} / "
                  f"{curve['exact_match']['12']}", flush=True)
    record["total_seconds"] = round(time.perf_counter() - start, 1)
    record["machine"] = {"torch_threads": torch.get_num_threads(), "processor": platform.machine(),
                         "cpu_cores": os.cpu_count()}
    print(f"total time {record['total_seconds']:.0f} s", flush=True)
    if args.update and args.out.exists():
        old = json.loads(args.out.read_text())
        old["schemes"].update(record["schemes"])
        if "variant_40_5" in record:
            old.setdefault("variant_40_5", record["variant_40_5"])["schemes"].update(record["variant_40_5"]["schemes"])
        old["total_seconds"] = round(old.get("total_seconds", 0.0) + record["total_seconds"], 1)
        record = old
    if not args.no_write:
        args.out.write_text(json.dumps(record, indent=1) + "\n")
    print(json.dumps(record))


if __name__ == "__main__":
    main()
