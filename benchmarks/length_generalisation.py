"""Benchmark: length generalisation of string reversal under every positional scheme (Chapter 9).

Usage:
    python benchmarks/length_generalisation.py --write         # every scheme, writes the JSON asset
    python benchmarks/length_generalisation.py --schemes rope t5          # prints only
    python benchmarks/length_generalisation.py --parts long --update --write   # only the longer budget

Each scheme is trained from scratch with the same model, steps, batch and seed (Chapter 6's fast
recipe; only the positional scheme changes) on lengths 3-10, then evaluated by greedy decoding
on fresh seeded strings of every length 3-40 (exact match and token accuracy, in percent).
The variant of exercise 40.5 trains on lengths 1-4 and tests on 12. Schemes that stay below
90 % exact match somewhere inside 3-10 at the budget are then trained again with 4 times the
steps, to tell "slow to learn" apart from "does not extrapolate". The last line printed is
one JSON record; it is also written to course_utils/assets/length_generalisation.json, which
Chapter 9 reads. Timings depend on the machine and on whatever else runs on it. The two models
Chapter 9 loads are made by `scripts/train_checkpoint.py --run length` (the winner with twice the steps).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from course_utils.runs import machine_record, write_asset
from course_utils.runs.length import (
    CAUSAL_SCHEMES,
    LONG_FACTOR,
    RESULTS_PATH,
    SCHEMES,
    SLOW_BELOW,
    STEPS,
    TEST_LENGTHS,
    VARIANT_LENGTHS,
    VARIANT_STEPS,
    VARIANT_TEST,
    length_curve,
    position_gap,
    results_recipe,
    train_scheme,
)

PARTS = ("main", "variant", "long")


def _train(name: str, min_len: int, max_len: int, steps: int | None):
    return train_scheme(name, min_len, max_len, steps)  # CAUSAL_SCHEMES train Chapter 8's decoder-only model


def _worst_inside(result: dict) -> float:
    return min(result["exact_match"][str(n)] for n in range(3, 11))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--schemes", nargs="+", default=[*SCHEMES, *CAUSAL_SCHEMES],
                        choices=[*SCHEMES, *CAUSAL_SCHEMES])
    parser.add_argument("--parts", nargs="+", default=list(PARTS), choices=list(PARTS),
                        help="main: lengths 3-10 at the budget; variant: lengths <= 4; "
                        f"long: {LONG_FACTOR}x the steps for schemes below {SLOW_BELOW:.0f} %% inside 3-10")
    parser.add_argument("--steps", type=int, default=None, help="override the recipe's steps (smoke runs)")
    parser.add_argument("--n-per-length", type=int, default=100, help="test strings per length")
    parser.add_argument("--write", action="store_true", help="write the shipped result (default: print only)")
    parser.add_argument("--out", type=Path, default=RESULTS_PATH, help="where to write the JSON record")
    parser.add_argument("--update", action="store_true",
                        help="merge these results into the existing JSON record (times add up) instead of replacing it")
    args = parser.parse_args()
    start = time.perf_counter()
    old = json.loads(args.out.read_text()) if args.update and args.out.exists() else None
    recipe = results_recipe()  # what the freshness check compares with the code
    recipe["n_per_length"] = args.n_per_length
    if args.steps is not None:
        recipe["steps_override"] = args.steps
    record: dict = {"recipe": recipe, "train_lengths": [3, 10], "schemes": {}}
    if "main" in args.parts:
        for name in args.schemes:
            model, history, _ = _train(name, 3, 10, args.steps)
            curve = length_curve(model, TEST_LENGTHS, args.n_per_length)
            record["schemes"][name] = {**curve, "train_seconds": round(history.seconds, 1),
                                       "steps": len(history.losses)}
            if SCHEMES.get(name, {}).get("random_positions"):  # trained and tested on different positions
                record["schemes"][name].update(position_gap(model))
            em = curve["exact_match"]
            print(f"{name:22s} trained {history.seconds:5.1f} s; exact match % at 10/11/15/20/40: "
                  f"{em['10']}/{em['11']}/{em['15']}/{em['20']}/{em['40']}", flush=True)
    if "variant" in args.parts:
        record["variant_40_5"] = {"train_lengths": list(VARIANT_LENGTHS), "schemes": {}}
        for name in args.schemes:
            model, history, _ = _train(name, *VARIANT_LENGTHS, args.steps or VARIANT_STEPS)
            curve = length_curve(model, VARIANT_TEST, args.n_per_length)
            record["variant_40_5"]["schemes"][name] = {**curve, "train_seconds": round(history.seconds, 1)}
            print(f"{name:22s} trained on 1-4: exact match % at 4 / 12: {curve['exact_match']['4']} / "
                  f"{curve['exact_match']['12']}", flush=True)
    if "long" in args.parts:
        # a scheme that has not learned the task inside the training lengths says nothing about
        # extrapolation yet: give it LONG_FACTOR times the steps and measure again
        at_budget = {**(old or {}).get("schemes", {}), **record["schemes"]}
        slow = [n for n in args.schemes if n in at_budget and _worst_inside(at_budget[n]) < SLOW_BELOW]
        steps = (args.steps or STEPS) * LONG_FACTOR
        record["long_budget"] = {"steps": steps, "below": SLOW_BELOW, "schemes": {}}
        for name in slow:
            model, history, _ = _train(name, 3, 10, steps)
            curve = length_curve(model, TEST_LENGTHS, args.n_per_length)
            record["long_budget"]["schemes"][name] = {**curve, "train_seconds": round(history.seconds, 1)}
            em = curve["exact_match"]
            print(f"{name:22s} {steps} steps, trained {history.seconds:5.1f} s; worst at 3-10 "
                  f"{_worst_inside(curve)}; at 11/15/20: {em['11']}/{em['15']}/{em['20']}", flush=True)
    record["total_seconds"] = round(time.perf_counter() - start, 1)
    record["machine"] = machine_record()
    print(f"total time {record['total_seconds']:.0f} s", flush=True)
    if old is not None:
        old["schemes"].update(record["schemes"])
        for part in ("variant_40_5", "long_budget"):
            if part in record:
                merged = old.setdefault(part, record[part])
                merged.update({k: v for k, v in record[part].items() if k != "schemes"})
                merged["schemes"].update(record[part]["schemes"])
        old["total_seconds"] = round(old.get("total_seconds", 0.0) + record["total_seconds"], 1)
        old["recipe"] = record["recipe"]  # today's recipe: re-run every scheme whose recipe changed
        record = old
    if args.write:
        write_asset(args.out, record)
    print(json.dumps(record))


if __name__ == "__main__":
    main()
