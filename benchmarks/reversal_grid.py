"""Benchmark: does Chapter 8's decoder-only reversal recipe hold on other numerics? Nine runs, one JSON.

Usage:
    python benchmarks/reversal_grid.py             # prints the grid
    python benchmarks/reversal_grid.py --write     # writes course_utils/assets/ch08_reversal_grid.json

Trains ``DECODER_ONLY_RECIPE`` from scratch for seeds 0, 1 and 2 in three numerics settings: one
torch thread, two threads, and one thread with PyTorch's portable CPU kernels
(``ATEN_CPU_CAPABILITY=default``). Each run is ``benchmarks/reversal.py --arch decoder-only`` in
its own process (the kernel setting is read when torch starts) and scores greedy exact match on
200 fresh strings per length. The record keeps every run's exact match at lengths 3-10, the
least over those lengths, the number of strings, its thread count and the CPU kernels torch
used (``DEFAULT``: the portable ones); ``least`` is the least of all nine. No timings: the
one-thread runs go two at a time (``--jobs 2``: one per core, the two-thread runs alone), which
would change their timings, not their results, since a run's arithmetic depends on its thread
count and kernels, not on what else the machine does.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from course_utils.runs import machine_record, write_asset
from course_utils.runs.registry import GRID_FILE, ch08_grid_recipe
from course_utils.runs.reversal import DECODER_ONLY_RECIPE

ROOT = Path(__file__).resolve().parents[1]
SETTINGS = {  # setting -> (torch threads, extra environment)
    "1 thread": (1, {}),
    "2 threads": (2, {"OMP_WAIT_POLICY": "PASSIVE"}),
    "portable kernels": (1, {"ATEN_CPU_CAPABILITY": "default"}),
}


def one_run(seed: int, setting: str) -> dict:
    """One seeded run of the decoder-only recipe in ``setting``, in a fresh process; its grid record."""
    threads, extra = SETTINGS[setting]
    env = {k: v for k, v in os.environ.items() if k != "ATEN_CPU_CAPABILITY"}  # this machine's kernels unless set
    env.update({"OMP_NUM_THREADS": str(threads), **extra})
    grid = ch08_grid_recipe()["grid"]
    command = [sys.executable, str(ROOT / "benchmarks" / "reversal.py"), "--arch", "decoder-only",
               "--threads", str(threads), "--seed", str(seed), "--n-per-length", str(grid["n_per_length"])]
    done = subprocess.run(command, env=env, cwd=ROOT, capture_output=True, text=True, check=False)
    if done.returncode:
        raise RuntimeError(f"seed {seed}, {setting}: benchmarks/reversal.py failed:\n{done.stderr[-2000:]}")
    record = json.loads(done.stdout.strip().splitlines()[-1])
    ran = record["recipe"]["decoder-only"]
    if {**ran, "seed": DECODER_ONLY_RECIPE["seed"]} != json.loads(json.dumps(DECODER_ONLY_RECIPE)):
        raise RuntimeError(f"seed {seed}, {setting}: the run's recipe is not DECODER_ONLY_RECIPE: {ran}")
    if record["recipe"]["benchmark"]["n_per_length"] != grid["n_per_length"]:
        raise RuntimeError(f"seed {seed}, {setting}: scored on {record['recipe']['benchmark']['n_per_length']} "
                           f"strings per length, not {grid['n_per_length']}")
    lo, hi = grid["lengths"]
    exact = {str(n): record["exact_match"][str(n)] for n in range(lo, hi + 1)}
    print(f"seed {seed}, {setting}: least {min(exact.values())} %", file=sys.stderr, flush=True)
    return {"seed": seed, "setting": setting, "exact_match": exact, "least": min(exact.values()),
            "n_per_length": record["recipe"]["benchmark"]["n_per_length"], "torch_threads": record["torch_threads"],
            "cpu_capability": record["cpu_capability"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, choices=[1, 2], default=2,
                        help="one-thread runs at a time (2: one per core of a 2-core machine)")
    parser.add_argument("--write", action="store_true", help=f"write course_utils/assets/{GRID_FILE}")
    args = parser.parse_args()
    recipe = ch08_grid_recipe()
    seeds, settings = recipe["grid"]["seeds"], recipe["grid"]["settings"]
    single = [(s, k) for s in seeds for k in settings if SETTINGS[k][0] == 1]
    multi = [(s, k) for s in seeds for k in settings if SETTINGS[k][0] > 1]
    with ThreadPoolExecutor(args.jobs) as pool:
        runs = list(pool.map(lambda sk: one_run(*sk), single))
    runs += [one_run(*sk) for sk in multi]
    order = {(s, k): i for i, (s, k) in enumerate((s, k) for s in seeds for k in settings)}
    runs.sort(key=lambda r: order[(r["seed"], r["setting"])])
    result = {"runs": runs, "least": min(r["least"] for r in runs), "machine": machine_record(), "recipe": recipe}
    print(json.dumps(result))
    if args.write:
        print(f"wrote {write_asset(GRID_FILE, result)}", file=sys.stderr)


if __name__ == "__main__":
    main()
