"""Chapter 6's recipe table: train variants of the fast recipe one change at a time, print one JSON line each.

Usage:
    python benchmarks/recipe_ablation.py                     # every variant (several minutes each on 1 core)
    python benchmarks/recipe_ablation.py old kernels fewer   # only these
    python benchmarks/recipe_ablation.py steps               # CPU ms per training step of the four kernel pairs
    python benchmarks/recipe_ablation.py steps 2             # the same with 2 threads (wall ms as well)

Each line holds the variant, train_seconds (wall clock), train_cpu_seconds (this process's CPU
time, which other jobs on a shared machine disturb much less), steps, and exact match by length
3..11 (greedy decoding, 200 fresh strings per length). Runs on one thread so CPU seconds compare.
``steps`` times one training step of the fast recipe's model with each pair of kernels
(from-scratch or fused LayerNorm, explicit or fused attention), in alternating rounds so that a
change in the machine's load hits every pair alike, and prints the median CPU and wall ms of each.
"""

from __future__ import annotations

import copy
import json
import sys
from collections.abc import Callable
from typing import Any

import torch

from course_utils.data import random_batch
from course_utils.evaluation import evaluate_by_length
from course_utils.runs import run as run_recipe
from course_utils.runs.reversal import FAST_RECIPE, build_model, reversal_batch_fn

# the recipe before this table: from-scratch LayerNorm, PyTorch's fused attention, 450 steps at 5e-3
OLD = {"model": {"fused_layer_norm": False, "sdpa_attention": True}, "train": {"steps": 450, "warmup": 45, "lr": 5e-3}}
FAST_KERNELS = {"fused_layer_norm": True, "sdpa_attention": True}

VARIANTS: dict[str, dict[str, Any]] = {
    "old": {},
    "bucketing": {"bucket": True},
    "bucketing_d32": {"bucket": True, "model": {"d_model": 32, "d_ff": 64}},
    "bucketing_1x1": {"bucket": True, "model": {"n_encoder_layers": 1, "n_decoder_layers": 1}},
    "kernels": {"model": FAST_KERNELS},  # only the LayerNorm changes: OLD already had the fused attention
    "fewer": {"model": FAST_KERNELS, "train": {"steps": 350, "warmup": 35, "lr": 6e-3}},
}


def _bucketed(B: int, lo: int, hi: int, gen: torch.Generator) -> Callable[[int], tuple]:
    """Every batch has one length, drawn uniformly: no padding at all."""
    def batch_fn(step: int) -> tuple:
        n = int(torch.randint(lo, hi + 1, (1,), generator=gen))
        return random_batch(B, n, n, gen)
    return batch_fn


def run(name: str) -> dict[str, Any]:
    """Train one variant from scratch and score it."""
    spec = VARIANTS[name]
    recipe = copy.deepcopy(FAST_RECIPE)
    recipe["model"].update(OLD["model"])
    recipe["train"].update(OLD["train"])
    recipe["model"].update(spec.get("model", {}))
    recipe["train"].update(spec.get("train", {}))
    B, lo, hi = recipe["batch_size"], recipe["min_len"], recipe["max_len"]

    def batches(recipe: dict[str, Any], gen: torch.Generator) -> Callable[[int], tuple]:
        return _bucketed(B, lo, hi, gen) if spec.get("bucket") else (lambda step: random_batch(B, lo, hi, gen))

    model, history, _ = run_recipe(recipe, build_model, batches, progress=False)
    cpu = history.cpu_seconds
    exact = {n: round(100 * r["exact_match"], 1) for n, r in evaluate_by_length(model, range(3, 12), 200).items()}
    return {"variant": name, "train_seconds": round(history.seconds, 1), "train_cpu_seconds": round(cpu, 1),
            "steps": len(history.losses), "worst_exact_match_3_10": min(exact[n] for n in range(3, 11)),
            "exact_match": exact}


def step_costs(rounds: int = 7, steps: int = 20) -> dict[str, Any]:
    """Median CPU and wall ms per training step of the fast recipe's model with each pair of kernels."""
    recipe = copy.deepcopy(FAST_RECIPE)
    pairs = {f"{'fused' if ln else 'from-scratch'} LayerNorm, {'fused' if sdpa else 'explicit'} attention":
             {"fused_layer_norm": ln, "sdpa_attention": sdpa} for ln in (False, True) for sdpa in (True, False)}
    times: dict[str, list[float]] = {name: [] for name in pairs}
    walls: dict[str, list[float]] = {name: [] for name in pairs}
    for _ in range(rounds):
        for name, kernels in pairs.items():
            timed = {**recipe, "model": {**recipe["model"], **kernels},
                     "train": {"steps": steps, "lr": 1e-3, "warmup": 0}}
            _, history, _ = run_recipe(timed, build_model, reversal_batch_fn, progress=False)
            times[name].append(1000 * history.cpu_seconds / steps)
            walls[name].append(1000 * history.seconds / steps)
    return {"cpu_ms_per_step": {name: round(sorted(t)[len(t) // 2], 1) for name, t in times.items()},
            "wall_ms_per_step": {name: round(sorted(t)[len(t) // 2], 1) for name, t in walls.items()},
            "rounds": rounds, "steps_per_round": steps, "torch_threads": torch.get_num_threads()}


def main() -> None:
    torch.set_num_threads(1)
    if sys.argv[1:2] == ["steps"]:
        if len(sys.argv) > 2:
            torch.set_num_threads(int(sys.argv[2]))
        print(json.dumps(step_costs()), flush=True)
        return
    names = sys.argv[1:] or list(VARIANTS)
    for name in names:
        if name not in VARIANTS:
            raise SystemExit(f"unknown variant {name!r}; choose from {', '.join(VARIANTS)}")
        print(json.dumps(run(name)), flush=True)


if __name__ == "__main__":
    main()
