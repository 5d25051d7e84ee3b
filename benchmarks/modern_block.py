"""Benchmark: Chapter 11's modern block against the 2017 block on the character LM; ends with one JSON line.

Usage:
    python benchmarks/modern_block.py              # every row; prints the record
    python benchmarks/modern_block.py --write      # and writes course_utils/assets/modern_block.json

Every row trains one ModernLM from scratch with MODERN_BLOCK_RECIPE (same data, seed, steps,
batch and schedule) on one CPU thread and scores validation bits per character. Rows: the 2017
block (post-LN LayerNorm, ReLU FFN, sinusoidal positions, multi-head attention, biases), each
modern change alone, and all of them together; then the first and last rows again with two more
seeds, to show how much one run varies. Times are CPU seconds (time.process_time) of
the training loop, divided by the steps; they depend on the machine.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from course_utils.modern import charlm_data  # noqa: E402
from course_utils.runs import asset_path  # noqa: E402
from course_utils.runs.modern import MODERN_BLOCK_FILE, MODERN_BLOCK_RECIPE, run_variant  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="write the shipped result (default: print only)")
    args = parser.parse_args()
    torch.set_num_threads(MODERN_BLOCK_RECIPE["threads"])
    start = time.process_time()
    data = charlm_data()
    rows = []
    print(f"{'variant':<18} {'bits/char':>9} {'params':>8} {'CPU ms/step':>11}")
    for name in MODERN_BLOCK_RECIPE["variants"]:
        row = run_variant(name, MODERN_BLOCK_RECIPE, data)
        rows.append(row)
        print(f"{name:<18} {row['bits_per_char']:>9.3f} {row['parameters']:>8,} {row['cpu_ms_per_step']:>11.1f}",
              flush=True)
    spread = []
    for name in MODERN_BLOCK_RECIPE["spread_variants"]:
        for seed in MODERN_BLOCK_RECIPE["spread_seeds"]:
            row = run_variant(name, MODERN_BLOCK_RECIPE, data, seed=seed)
            spread.append(row)
            print(f"{name:<18} {row['bits_per_char']:>9.3f} {row['parameters']:>8,} {row['cpu_ms_per_step']:>11.1f}"
                  f"  (seed {seed})", flush=True)
    result = {"rows": rows, "spread": spread, "cpu_seconds_total": round(time.process_time() - start, 1),
              "torch": torch.__version__, "machine": platform.machine(), "recipe": MODERN_BLOCK_RECIPE}
    if args.write:
        asset_path(MODERN_BLOCK_FILE).write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
