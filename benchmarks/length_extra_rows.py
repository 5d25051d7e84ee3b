"""Benchmark: two rows Chapter 9 discusses beyond its main experiment; writes one JSON asset.

Usage:
    python benchmarks/length_extra_rows.py            # prints the record
    python benchmarks/length_extra_rows.py --write    # and writes course_utils/assets/length_extra_rows.json

- ``randomized``, scored two ways: with the plain positions 0, 1, 2, ... (as the main
  experiment scores every scheme) and with random positions at test time too, one sorted random
  subset per test string kept for every decoding step (Ruoss et al.'s evaluation; no retraining).
- ``sinusoidal-end``: the paper's sinusoidal encoding with source positions counted from the end,
  the row Chapter 9's quiz asks about.

Both are trained exactly like the main experiment's schemes (Chapter 6's fast recipe, STEPS
steps, lengths 3-10, the same seed) and scored on the same seeded test strings (100 per length,
3-40). Timings depend on the machine and on whatever else runs on it.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch

from course_utils.random_position_eval import reverse_with_random_positions
from course_utils.runs import asset_path, machine_record, write_asset
from course_utils.runs.length import (
    EXTRA_ROWS_FILE,
    MAX_POSITION,
    STEPS,
    TEST_LENGTHS,
    extra_rows_recipe,
    length_curve,
)
from course_utils.runs.reversal import run_reversal

OUT = asset_path(EXTRA_ROWS_FILE)


def _at(curve: dict) -> str:
    return "/".join(str(curve["exact_match"][n]) for n in ("3", "10", "11", "20"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n-per-length", type=int, default=100, help="test strings per length")
    parser.add_argument("--threads", type=int, default=1, help="torch threads")
    parser.add_argument("--write", action="store_true", help="write the shipped result (default: print only)")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    start = time.perf_counter()
    recipes = extra_rows_recipe()
    recipes["n_per_length"] = args.n_per_length
    record: dict = {"recipe": recipes, "train_lengths": [3, 10], "steps": STEPS, "n_per_length": args.n_per_length,
                    "rows": {}}

    model, history, _ = run_reversal(recipes["randomized"], progress=False)
    plain = length_curve(model, TEST_LENGTHS, args.n_per_length)
    random_at_test = length_curve(
        lambda strings: reverse_with_random_positions(model, strings, MAX_POSITION, seed=len(strings[0])),
        TEST_LENGTHS, args.n_per_length)
    record["rows"]["randomized"] = {"plain_positions": plain, "random_positions_at_test": random_at_test,
                                    "train_seconds": round(history.seconds, 1), "steps": len(history.losses)}
    print(f"randomized: exact match % at 3/10/11/20, plain positions {_at(plain)}; "
          f"random positions at test {_at(random_at_test)}", flush=True)

    model, history, _ = run_reversal(recipes["sinusoidal-end"], progress=False)
    curve = length_curve(model, TEST_LENGTHS, args.n_per_length)
    record["rows"]["sinusoidal-end"] = {**curve, "train_seconds": round(history.seconds, 1),
                                        "steps": len(history.losses)}
    print(f"sinusoidal-end: exact match % at 3/10/11/20 {_at(curve)}", flush=True)

    record["total_seconds"] = round(time.perf_counter() - start, 1)
    record["machine"] = machine_record()
    if args.write:
        write_asset(args.out, record)
    print(json.dumps(record))


if __name__ == "__main__":
    main()
