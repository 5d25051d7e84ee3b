"""Benchmark: stretch Chapter 9's RoPE model to longer strings; writes one JSON asset only with --write.

Usage:
    python benchmarks/rope_stretch.py            # prints the table
    python benchmarks/rope_stretch.py --write    # and writes course_utils/assets/rope_stretch.json

Trains the "rope" scheme exactly as Chapter 9's experiment does (Chapter 6's fast recipe, lengths
3-10, seed 0), then scores, on the same seeded test strings (200 per length at 10, 20 and 40):
the model as it is, with position interpolation (positions divided by 4; Chen et al., 2023) and
with an NTK-aware base (base * 4^(d_k/(d_k-2))), each with no retraining and after a 100-step
fine-tune on strings of 3-40 letters; and Chapter 9's shipped winner for comparison. Counts of
exact matches are stored, so the book can put a Wilson interval on each. Timings depend on the
machine and whatever else runs on it.
"""

from __future__ import annotations

import argparse
import time

import torch

from course_utils.evaluation import evaluate_by_length
from course_utils.positional import stretch_rope
from course_utils.runs import machine_record, write_asset
from course_utils.runs.length import WINNER, load_scheme_model
from course_utils.runs.reversal import run_reversal
from course_utils.runs.rope_stretch import ROPE_STRETCH_FILE, fine_tune, rope_stretch_recipe


def _counts(model, recipe) -> dict[str, int]:
    n = recipe["n_per_length"]
    results = evaluate_by_length(model, recipe["eval_lengths"], n, recipe["eval_seed"])
    return {str(length): round(r["exact_match"] * n) for length, r in results.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", type=int, default=1, help="torch threads")
    parser.add_argument("--write", action="store_true", help="write the JSON asset")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    start = time.perf_counter()
    recipe = rope_stretch_recipe()
    record: dict = {"recipe": recipe, "rows": {}}
    model, history, _ = run_reversal(recipe["base"], progress=False)
    record["base_train_seconds"] = round(history.seconds, 1)
    for method in recipe["methods"]:
        counts = _counts(stretch_rope(model, method, recipe["factor"]), recipe)
        record["rows"][f"{method}, no retraining"] = counts
        print(f"{method:>13}, no retraining: {counts}", flush=True)
    for method in recipe["methods"]:
        tuned, ft_history = fine_tune(model, method, recipe)
        counts = _counts(tuned, recipe)
        record["rows"][f"{method}, fine-tuned"] = counts
        record.setdefault("fine_tune_seconds", {})[method] = round(ft_history.seconds, 1)
        print(f"{method:>13}, fine-tuned:    {counts}", flush=True)
    counts = _counts(load_scheme_model(WINNER), recipe)
    record["rows"]["winner"] = counts
    print(f"{'winner':>13}:                {counts}", flush=True)
    record["total_seconds"] = round(time.perf_counter() - start, 1)
    record["machine"] = machine_record()
    print(f"total {record['total_seconds']} s", flush=True)
    if args.write:
        print(f"wrote {write_asset(ROPE_STRETCH_FILE, record).name}")


if __name__ == "__main__":
    main()
