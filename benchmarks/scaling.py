"""Benchmark: Chapter 12's scaling laws in miniature; prints one line per run and ends with one JSON line.

Usage:
    python benchmarks/scaling.py --threads 1 --write    # every run; --write rewrites course_utils/assets/scaling.json
    python benchmarks/scaling.py --quick                # 60 steps per run: a smoke test (never written)

Trains the character LM of Chapter 8 at every size of ``SCALING_RECIPE`` for the same number
of steps, and its base size for several numbers of steps; fits validation loss against
parameters and against training tokens with a power law. The JSON record holds the runs, the fits
and the recipe (key ``recipe``, compared with the code's by the freshness check).
Timings are CPU seconds of the process (``time.process_time``).
"""

from __future__ import annotations

import argparse
import copy
import json
import time
from pathlib import Path

import torch

from course_utils.runs import asset_path, machine_record, write_asset
from course_utils.runs.scaling import SCALING_FILE, SCALING_RECIPE, run_size
from course_utils.scaling import fit_power_law


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    parser.add_argument("--quick", action="store_true", help="60 steps per run, for a smoke test")
    parser.add_argument("--write", action="store_true", help="write the asset (course_utils/assets/scaling.json)")
    parser.add_argument("--out", type=Path, default=asset_path(SCALING_FILE))
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    recipe = copy.deepcopy(SCALING_RECIPE)
    quick = args.quick
    start_cpu, start_wall = time.process_time(), time.perf_counter()

    sizes = []
    for size in recipe["sizes"]:
        run = run_size(size, 60 if quick else recipe["size_steps"], recipe)
        sizes.append(run)
        print(f"size d_model={run['d_model']:3d} N={run['n_layers']} params={run['params']:7d} "
              f"bits/char={run['val_bits_per_char']:.3f} cpu={run['cpu_seconds']:.0f}s", flush=True)
    lengths = []
    for steps in recipe["length_steps"]:
        if steps == recipe["size_steps"] and recipe["base"] in recipe["sizes"] and not quick:
            run = sizes[recipe["sizes"].index(recipe["base"])]  # the same run, already trained
        else:
            run = run_size(recipe["base"], 60 + steps // 100 if quick else steps, recipe)
        lengths.append(run)
        print(f"length steps={run['steps']:5d} tokens={run['tokens']:8d} "
              f"bits/char={run['val_bits_per_char']:.3f} cpu={run['cpu_seconds']:.0f}s", flush=True)

    by_params = fit_power_law([r["params"] for r in sizes], [r["val_bits_per_char"] for r in sizes])
    by_tokens = fit_power_law([r["tokens"] for r in lengths], [r["val_bits_per_char"] for r in lengths])
    record = {
        "sizes": sizes,
        "lengths": lengths,
        "exponent": round(by_params.exponent, 4),
        "exponent_se": round(by_params.exponent_se, 4),
        "coefficient": round(by_params.coefficient, 4),
        "tokens_exponent": round(by_tokens.exponent, 4),  # loss against training tokens, one model size
        "tokens_exponent_se": round(by_tokens.exponent_se, 4),
        "cpu_seconds": round(time.process_time() - start_cpu, 1),
        "wall_seconds": round(time.perf_counter() - start_wall, 1),
        "threads": args.threads,
        "machine": machine_record(),
        "recipe": recipe,
    }
    if args.write and not quick:
        write_asset(args.out, record)
    print(json.dumps(record))


if __name__ == "__main__":
    main()
