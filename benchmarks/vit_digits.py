"""Benchmark: Chapter 12's Vision Transformer on scikit-learn's 8x8 digits against an MLP with about
as many parameters; prints one line per model and ends with one JSON line.

Usage:
    python benchmarks/vit_digits.py                 # one thread (the default); prints only
    python benchmarks/vit_digits.py --threads 1 --write   # and writes course_utils/assets/vit_digits.pt

Writes the trained ViT to course_utils/assets/vit_digits.pt with both models' scores (Chapter 12's
table reads them; its exercise 12.3 measures the ViT).

Both models train with the same recipe (``VIT_RECIPE``: epochs, batch, AdamW, warm-up +
cosine) on the same fixed split (1,347 training and 450 test images). ``train_seconds`` is
the ViT's CPU time (``time.process_time``); its wall time depends on whatever else runs.
"""

from __future__ import annotations

import argparse
import copy
import json

import torch

from course_utils.runs.vit import save_vit
from course_utils.vit import VIT_RECIPE, build_vit, count_params, matched_mlp, train_classifier


def _rounded(scores: dict) -> dict:
    """Scores as stored: counts stay ints, shares and seconds get 4 decimals."""
    return {k: v if isinstance(v, int) else round(float(v), 4) for k, v in scores.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    parser.add_argument("--write", action="store_true", help="write the shipped result (default: print only)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    recipe = copy.deepcopy(VIT_RECIPE)
    vit = build_vit(recipe)
    result = train_classifier(vit, recipe)
    print(f"ViT: test accuracy {result['test_accuracy']:.4f}, {result['params']} parameters, "
          f"{result['cpu_seconds']:.1f} CPU s ({result['wall_seconds']:.1f} s wall)", flush=True)
    torch.manual_seed(recipe["seed"])
    mlp = matched_mlp(count_params(vit))
    base = train_classifier(mlp, recipe)
    print(f"MLP: test accuracy {base['test_accuracy']:.4f}, {base['params']} parameters, "
          f"{base['cpu_seconds']:.1f} CPU s", flush=True)
    if args.write:
        save_vit(vit, {**_rounded(result), "baseline": {"model": "MLP, 2 hidden layers", **_rounded(base)}}, recipe)
    print(json.dumps({
        "test_accuracy": round(result["test_accuracy"], 4),
        "train_seconds": round(result["cpu_seconds"], 1),
        "wall_seconds": round(result["wall_seconds"], 1),
        "params": result["params"],
        "threads": args.threads,
        "baseline": {"model": "MLP, 2 hidden layers", "test_accuracy": round(base["test_accuracy"], 4),
                     "params": base["params"], "train_seconds": round(base["cpu_seconds"], 1)},
        "recipe": recipe,
    }))


if __name__ == "__main__":
    main()
