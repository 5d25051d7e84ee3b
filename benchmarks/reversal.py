"""Benchmark: train Chapter 6's reversal recipe from scratch and print one JSON line.

Usage:
    python benchmarks/reversal.py               # the chapter's fast recipe
    python benchmarks/reversal.py --reference   # also the reference recipe, in the same run, and the speed ratio
    python benchmarks/reversal.py --arch decoder-only    # Chapter 8's decoder-only recipe, same JSON
    python benchmarks/reversal.py --arch both --eval-every 25 --threads 1 --write  # writes the asset
                                                # both architectures in one run (Chapter 8's table)

The JSON holds train_seconds (optimisation only, no evaluation, wall clock), train_cpu_seconds
(the process's CPU time over the same span, which other jobs on a shared machine disturb less), steps, params and
exact_match / token_accuracy by length 3..15 (greedy decoding, fresh seeded test strings).
With --eval-every N it also holds steps_to_99_5: the first step, checked every N steps, at
which exact match over lengths 3-10 (50 strings each, their own seed) reaches 99.5 % (null if
never); those evaluations are not counted in train_seconds.
Timings depend on the machine and on whatever else runs on it.
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
from pathlib import Path

import torch

from course_utils.evaluation import evaluate_by_length
from course_utils.runs import asset_path
from course_utils.runs.registry import BENCHMARK_FILE
from course_utils.runs.reversal import (
    DECODER_ONLY_RECIPE,
    FAST_RECIPE,
    REFERENCE_RECIPE,
    HeldOutExactMatch,
    run_reversal,
)
from course_utils.utils import count_params

LENGTHS = range(3, 16)
TARGET = 0.995  # exact match over the training lengths for steps_to_99_5


def with_settings(recipe: dict, settings: list[str], seed: int | None) -> dict:
    """A copy of ``recipe`` with each ``KEY=VALUE`` setting (VALUE read as JSON) and the seed replaced."""
    recipe = copy.deepcopy(recipe)
    for setting in settings:
        key, sep, value = setting.partition("=")
        *path, last = key.split(".")
        node = recipe
        for part in path:
            node = node.get(part) if isinstance(node, dict) else None
        if not sep or not isinstance(node, dict) or last not in node:
            raise ValueError(f"--set must name a field of the recipe as section.field=value, got {setting!r}")
        node[last] = json.loads(value)
    if seed is not None:
        recipe["seed"] = seed
    return recipe


def run(recipe: dict, n_per_length: int, eval_every: int = 0) -> dict:
    """Train ``recipe`` from scratch (either model family), evaluate by length, return the benchmark record."""
    lengths = range(recipe["min_len"], recipe["max_len"] + 1)
    tracker = [HeldOutExactMatch(TARGET, eval_every, lengths, n=50, seed=99)] if eval_every else []
    model, history, ran = run_reversal(recipe, progress=False, callbacks=tracker)
    results = evaluate_by_length(model, LENGTHS, n_per_length)
    record = {
        "train_seconds": round(history.seconds, 1),
        "train_cpu_seconds": round(history.cpu_seconds, 1),  # CPU time of this process: less sensitive to load
        "steps": len(history.losses),
        "params": count_params(model),
        "final_loss": round(sum(history.losses[-50:]) / 50, 4),
        "exact_match": {str(n): round(100 * r["exact_match"], 1) for n, r in results.items()},
        "token_accuracy": {str(n): round(100 * r["token_accuracy"], 1) for n, r in results.items()},
        "recipe": ran,
    }
    if eval_every:
        record["steps_to_99_5"] = tracker[0].reached
        record["eval_every"] = eval_every
    return record


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reference", action="store_true", help="also train the reference recipe")
    parser.add_argument("--n-per-length", type=int, default=200, help="test strings per length")
    parser.add_argument("--arch", choices=["encoder-decoder", "decoder-only", "both"], default="encoder-decoder",
                        help="which model to train (Chapter 6's encoder-decoder or Chapter 8's decoder-only)")
    parser.add_argument("--eval-every", type=int, default=0, help="also measure steps to 99.5 %% exact match")
    parser.add_argument("--write", action="store_true",
                        help="write the shipped result course_utils/assets/ch08_reversal_benchmark.json (--arch both)")
    parser.add_argument("--out", type=Path, default=None, help="also write the JSON to this file")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: PyTorch's choice)")
    parser.add_argument("--seed", type=int, default=None, help="replace the recipes' seed (robustness runs)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="change one field of the decoder-only recipe, e.g. train.lr=0.004 (trials)")
    args = parser.parse_args()
    if args.threads is not None:
        if args.threads < 1:
            parser.error(f"--threads must be >= 1, got {args.threads}")
        torch.set_num_threads(args.threads)
    if args.seed is not None and args.seed < 0:
        parser.error(f"--seed must be >= 0, got {args.seed}")
    try:
        decoder_only = with_settings(DECODER_ONLY_RECIPE, args.set, args.seed)
    except ValueError as error:
        parser.error(str(error))
    fast_recipe = FAST_RECIPE if args.seed is None else {**FAST_RECIPE, "seed": args.seed}
    if args.arch != "encoder-decoder" or args.eval_every:
        out = {}
        for arch in (["encoder-decoder", "decoder-only"] if args.arch == "both" else [args.arch]):
            recipe = decoder_only if arch == "decoder-only" else fast_recipe
            out[arch] = run(recipe, args.n_per_length, args.eval_every)
            out[arch]["torch_threads"] = torch.get_num_threads()
            out[arch]["cpu_capability"] = torch.backends.cpu.get_cpu_capability()  # DEFAULT: the portable kernels
        result = out if args.arch == "both" else out[args.arch]
        # the full recipe of this result, compared with the code by `python -m course_utils.runs check`
        result["recipe"] = {**({arch: out[arch].pop("recipe") for arch in list(out)} if args.arch == "both"
                               else {args.arch: result.pop("recipe")}),
                            "benchmark": {"n_per_length": args.n_per_length, "eval_every": args.eval_every,
                                          "lengths": [LENGTHS.start, LENGTHS.stop - 1],
                                          "torch_threads": torch.get_num_threads()}}
        text = json.dumps(result)
        print(text)
        if args.write and args.arch != "both":
            sys.exit("--write: the shipped result holds both architectures; run with --arch both")
        for path in [asset_path(BENCHMARK_FILE)] * args.write + [args.out] * (args.out is not None):
            path.write_text(text + "\n")
        return
    fast = run(fast_recipe, args.n_per_length)
    fast.pop("recipe")
    fast["torch_threads"] = torch.get_num_threads()
    print(json.dumps({"fast": fast}), file=sys.stderr, flush=True)  # progress: the reference takes minutes
    if not args.reference:
        print(json.dumps(fast))
        return
    reference = run(REFERENCE_RECIPE, args.n_per_length)
    reference.pop("recipe")
    speedup = reference["train_seconds"] / fast["train_seconds"]
    cpu_speedup = reference["train_cpu_seconds"] / fast["train_cpu_seconds"]
    print(json.dumps({"fast": fast, "reference": reference, "speedup": round(speedup, 2),
                      "cpu_speedup": round(cpu_speedup, 2)}))


if __name__ == "__main__":
    main()
