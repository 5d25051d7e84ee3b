"""Chapter 8's character LM against the clock: train for a budget of seconds, score the whole validation split.

Usage: python benchmarks/charlm.py --threads 1 --seconds 150 [--seed K] [--steps N] [--set KEY=VALUE ...]

Trains ``BENCHMARK_RECIPE`` (``course_utils.runs.charlm``) on tiny Shakespeare for ``--seconds`` of
wall time: the time per step is measured on the first steps and the number of steps planned so
that the warm-up + cosine schedule ends with the budget (revised every tenth of it). Then it
scores the last 10 % of the text, every character predicted once in consecutive windows of the
model's context, and prints the share of this CPU's fp32 matrix-multiply peak (a 2048 x 2048
product on the same threads) that training achieved. The last line is one JSON record:
``{"val_nats", "val_bits_per_char", "train_seconds", "steps", "params", "tokens_seen",
"gflops_per_s", ...}``.

What each change bought (seed 0 unless said, 150 s on one thread of a 2-core machine; "CPU" rows
count this process's CPU seconds on a machine shared with other jobs, which gives about 8 % fewer
steps than an idle run; differences below about 0.01 nats are within the noise of one seed). The
SwiGLU FFN (``DecoderOnlyConfig(ffn="swiglu")``, hidden width 256 for d_ff 384, no biases) costs about
13 % more time per step (1,729 against 1,961 steps in 150 CPU s, seed 1) and still wins at equal
seconds:

| recipe                                                            | clock     | val nats |
|-------------------------------------------------------------------|-----------|---------:|
| Chapter 12's scaling recipe (sinusoidal, from-scratch LN, batch 32) | CPU       | 1.809 |
| + rotary positions + fused LayerNorm                              | CPU       | 1.692 |
| + batch 16                                                        | CPU       | 1.675 |
|   the same, on an idle machine                                    | wall      | 1.665 |
| + peak lr 5e-3 decaying to 1e-4                                    | CPU       | 1.662 |
| + SwiGLU FFN at the same weight count (``BENCHMARK_RECIPE``)        | CPU       | 1.639 |
|   seed 1, the ReLU FFN against SwiGLU                              | CPU       | 1.687 / 1.660 |
|   seeds 0 / 1 / 2, ReLU FFN (``--set model.ffn=relu``), idle       | wall      | 1.673 / 1.657 / 1.649 |
|   seeds 0 / 1 / 2, SwiGLU (``BENCHMARK_RECIPE``), idle, same day    | wall      | 1.625 / 1.630 / 1.614 |
| rejected: context 128 (at lr 3e-3 / 5e-3)                          | CPU       | 1.701 / 1.669 |
| rejected: lr 8e-3 with 100 warm-up steps                           | CPU       | 1.675 |
| rejected: batch 24 at lr 6e-3                                      | CPU       | 1.676 |
| rejected: width 128, 2 blocks                                      | CPU       | 1.719 |

``--steps N`` trains exactly N steps instead (tuning by steps on a busy machine);
``--set train.lr=0.006`` (repeatable) changes one field of the recipe for an ablation.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

from course_utils.runs.charlm import BENCHMARK_RECIPE, matmul_peak_gflops, train_budgeted  # noqa: E402


def with_setting(recipe: dict, setting: str) -> dict:
    """A copy of recipe with one dotted field set from ``KEY=VALUE`` (VALUE read as JSON, else as a string)."""
    if "=" not in setting:
        raise ValueError(f"--set must look like train.lr=0.006, got {setting!r}")
    key, value = setting.split("=", 1)
    try:
        parsed = json.loads(value)
    except json.JSONDecodeError:
        parsed = value
    recipe = copy.deepcopy(recipe)
    *path, last = key.split(".")
    node = recipe
    for part in path:
        if not isinstance(node.get(part), dict):
            raise ValueError(f"--set {key}: the recipe has no section {part!r}")
        node = node[part]
    if last not in node and path != ["model"]:
        raise ValueError(f"--set {key}: the recipe has no field {last!r} (it has {sorted(node)})")
    node[last] = parsed
    return recipe


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    parser.add_argument("--seconds", type=float, default=None, help="wall-time budget for training")
    parser.add_argument("--cpu", action="store_true",
                        help="count --seconds as this process's CPU seconds (a machine shared with other jobs)")
    parser.add_argument("--steps", type=int, default=None, help="train exactly this many steps instead")
    parser.add_argument("--seed", type=int, default=0, help="seed of weights and batches (default 0)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="change one recipe field, e.g. train.lr=0.006 or model.d_model=128")
    parser.add_argument("--no-peak", action="store_true", help="skip the matrix-multiply peak measurement")
    args = parser.parse_args(argv)
    if args.threads < 1:
        parser.error(f"--threads must be >= 1, got {args.threads}")
    if (args.seconds is None) == (args.steps is None):
        parser.error("give exactly one of --seconds and --steps")
    if args.seconds is not None and not args.seconds > 0:
        parser.error(f"--seconds must be > 0, got {args.seconds}")
    if args.steps is not None and args.steps < 1:
        parser.error(f"--steps must be >= 1, got {args.steps}")
    torch.set_num_threads(args.threads)
    recipe = BENCHMARK_RECIPE
    for setting in args.set:
        try:
            recipe = with_setting(recipe, setting)
        except ValueError as error:
            parser.error(str(error))
    _, record = train_budgeted(recipe, seconds=args.seconds, steps=args.steps, seed=args.seed, progress=True,
                               clock="cpu" if args.cpu else "wall")
    record["threads"] = args.threads
    record["seed"] = args.seed
    record["load_average_1min"] = round(os.getloadavg()[0], 2)
    record["settings"] = args.set
    if not args.no_peak:
        peak = matmul_peak_gflops()
        record["matmul_peak_gflops"] = round(peak, 1)
        record["share_of_peak"] = round(record["gflops_per_s"] / peak, 3)
        print(f"training: {record['gflops_per_s']:.1f} GFLOP/s = {record['share_of_peak']:.0%} of this CPU's "
              f"fp32 matmul peak ({peak:.1f} GFLOP/s on {args.threads} thread(s))")
    print(f"validation: {record['val_nats']:.4f} nats = {record['val_bits_per_char']:.4f} bits per character "
          f"after {record['steps']} steps ({record['train_seconds']:.1f} s)")
    print(json.dumps(record))
    return record


if __name__ == "__main__":
    main()
