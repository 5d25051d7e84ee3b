"""Benchmark: Chapter 11's modern block against the 2017 block on the character LM; ends with one JSON line.

Usage:
    python benchmarks/modern_block.py              # every row, printed only
    python benchmarks/modern_block.py --write      # and writes course_utils/assets/modern_block.json
    python benchmarks/modern_block.py --variants "RoPE,no biases" --rows-out /tmp/part1.jsonl
                                                   # some rows only, one JSON line per row (to run in parallel)
    python benchmarks/modern_block.py --from-rows /tmp/part*.jsonl --write
                                                   # assemble the asset from such parts

Every row trains one ModernLM from scratch with MODERN_BLOCK_RECIPE (same data, steps, batch and
schedule) on one CPU thread and scores validation bits per character, once per seed of the
recipe (initialisation and batches). Rows: the 2017 block (post-LN LayerNorm, ReLU FFN,
sinusoidal positions, multi-head attention, biases), each modern change alone, all of them
together, and two rows beyond them (a sliding window of 8 and linear attention, each trained
that way from the start). The 2017 block is also scored under the window without retraining.
Times are CPU seconds (time.process_time) of the training loop, divided by the steps; they
depend on the machine and on its load.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from course_utils.charlm import charlm_split  # noqa: E402
from course_utils.runs import machine_record, write_asset  # noqa: E402
from course_utils.runs.modern import MODERN_BLOCK_FILE, MODERN_BLOCK_RECIPE, run_variant  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="write the shipped result (default: print only)")
    parser.add_argument("--variants", help="comma-separated rows to run (default: all)")
    parser.add_argument("--rows-out", help="append each row as one JSON line to this file; no asset")
    parser.add_argument("--from-rows", nargs="+", help="assemble the asset from row files, train nothing")
    args = parser.parse_args()
    torch.set_num_threads(MODERN_BLOCK_RECIPE["threads"])
    start = time.process_time()
    variants = list(MODERN_BLOCK_RECIPE["variants"])
    if args.from_rows:
        found = {}
        for name in args.from_rows:
            for line in Path(name).read_text().splitlines():
                row = json.loads(line)
                found[(row["variant"], row["seed"])] = row
        rows = [found[(v, s)] for v in variants for s in MODERN_BLOCK_RECIPE["seeds"]]
        cpu_total = sum(r.pop("cpu_seconds") for r in rows)
    else:
        chosen = variants if not args.variants else [v.strip() for v in args.variants.split(",")]
        data = charlm_split()
        rows = []
        print(f"{'variant':<18} {'seed':>4} {'bits/char':>9} {'params':>8} {'CPU ms/step':>11}")
        for name in chosen:
            for seed in MODERN_BLOCK_RECIPE["seeds"]:
                t0 = time.process_time()
                row = run_variant(name, MODERN_BLOCK_RECIPE, data, seed=seed)
                rows.append(row)
                print(f"{name:<18} {seed:>4} {row['bits_per_char']:>9.3f} {row['parameters']:>8,} "
                      f"{row['cpu_ms_per_step']:>11.1f}", flush=True)
                if args.rows_out:
                    with open(args.rows_out, "a") as f:
                        f.write(json.dumps({**row, "cpu_seconds": round(time.process_time() - t0, 1)}) + "\n")
        cpu_total = time.process_time() - start
        if args.rows_out:
            return
    result = {"rows": rows, "cpu_seconds_total": round(cpu_total, 1), "machine": machine_record(),
              "recipe": MODERN_BLOCK_RECIPE}
    if args.write:
        write_asset(MODERN_BLOCK_FILE, result)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
