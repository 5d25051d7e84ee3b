"""Benchmark: the FFN's non-linearity on the character LM (ReLU, GELU, SwiGLU, GeGLU at equal
parameters); writes one JSON asset only with --write.

Usage:
    python benchmarks/ffn_activations.py            # prints the rows
    python benchmarks/ffn_activations.py --write    # and writes course_utils/assets/ffn_activations.json

Every row is Chapter 11's 2017 block (the modern-block table's recipe: d_model 64, 2 layers, 500
AdamW steps, batch 16 of 64 characters) with one change, its FFN's activation, trained from the
same initial weights per seed (seeds 0, 1, 2) and scored in bits per character on the same
validation windows. CPU time per step is measured with one thread; it depends on the machine.
"""

from __future__ import annotations

import argparse
import time

import torch

from course_utils.charlm import charlm_split
from course_utils.runs import machine_record, write_asset
from course_utils.runs.ffn import FFN_ACTIVATIONS_FILE, FFN_ACTIVATIONS_RECIPE, run_activation


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--write", action="store_true", help="write the JSON asset")
    args = parser.parse_args()
    recipe = FFN_ACTIVATIONS_RECIPE
    torch.set_num_threads(recipe["threads"])
    start = time.perf_counter()
    data = charlm_split()
    rows = []
    for seed in recipe["seeds"]:
        for name in recipe["activations"]:
            row = run_activation(name, seed, recipe, data)
            rows.append(row)
            print(row, flush=True)
    record = {"recipe": recipe, "rows": rows, "total_seconds": round(time.perf_counter() - start, 1),
              "machine": machine_record()}
    if args.write:
        print(f"wrote {write_asset(FFN_ACTIVATIONS_FILE, record).name}")


if __name__ == "__main__":
    main()
