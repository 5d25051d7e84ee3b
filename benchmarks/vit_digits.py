"""Benchmark: Chapter 12's Vision Transformer on scikit-learn's 8x8 digits, its global-average-pooling
variant, and an MLP with about as many parameters, three seeds each; prints one line per
run and ends with one JSON line.

Usage:
    python benchmarks/vit_digits.py --write         # one thread (the default); rewrites vit_digits.pt
    python benchmarks/vit_digits.py --threads 2     # measure only

With ``--write`` it stores the seed-0 ViT in course_utils/assets/vit_digits.pt with every run's
scores (Chapter 12's tables read them; its exercise 12.3 measures that ViT).

Every model trains with the same recipe (``VIT_RECIPE``: steps, batch, AdamW, warm-up + cosine)
on the same fixed split (1,347 training and 450 test images). The recipe's patch size is chosen
first on a validation split (the last 300 training images held out; ``selection``), never on the
test images. ``cpu_seconds`` is the training's CPU time (``history.cpu_seconds``).
"""

from __future__ import annotations

import argparse
import copy
import json

import torch

from course_utils.exercises.ch12_encoders import position_reference
from course_utils.runs.vit import VIT_RECIPE, run_vit, save_vit, variant
from course_utils.vit import count_params, load_digits_split, multiply_adds, steps_per_epoch

SEEDS = (0, 1, 2)
VAL_SIZE = 300  # training images held out to choose the patch size


def _rounded(scores: dict) -> dict:
    """Scores as stored: counts stay ints, shares and seconds get 4 decimals; the recipe is dropped."""
    return {k: v if isinstance(v, int) else round(float(v), 4) for k, v in scores.items() if k != "recipe"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    parser.add_argument("--write", action="store_true", help="rewrite course_utils/assets/vit_digits.pt")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    recipe = copy.deepcopy(VIT_RECIPE)
    data = load_digits_split(recipe["test_size"], recipe["split_seed"])
    x_train, y_train = data[0], data[1]

    # the patch size, chosen on held-out training images at the recipe's number of epochs
    held = (x_train[:-VAL_SIZE], y_train[:-VAL_SIZE], x_train[-VAL_SIZE:], y_train[-VAL_SIZE:])
    epochs = recipe["train"]["steps"] // steps_per_epoch(len(y_train), recipe["batch_size"])
    selection = []
    for patch in (2, 4):
        r = copy.deepcopy(recipe)
        r["model"]["patch"] = patch
        steps = epochs * steps_per_epoch(len(held[1]), r["batch_size"])
        _, s = run_vit(r, data=held, steps=steps)
        selection.append({"patch": patch, "val_accuracy": round(s["test_accuracy"], 4), "val_images": VAL_SIZE,
                          "epochs": epochs})
        print(f"selection: patch {patch}, validation accuracy {s['test_accuracy']:.4f} on {VAL_SIZE} images",
              flush=True)

    runs: dict[str, list] = {"vit": [], "vit_mean": [], "mlp": []}
    positions = []  # each seed's ViT: plain, positions zeroed, and the non-identity shuffles of its patches
    sizes: dict[str, dict] = {}
    shipped = None
    for seed in SEEDS:
        for name in runs:
            r = variant("mean" if name == "vit_mean" else "cls", seed, recipe)
            model, s = run_vit(r, model="vit" if name.startswith("vit") else name, data=data)
            runs[name].append({"seed": seed, **_rounded(s)})
            sizes[name] = {"params": count_params(model), "multiply_adds": multiply_adds(model)}
            if name == "vit":
                shipped = model if seed == recipe["seed"] else shipped
                p = position_reference(model, data[2], data[3], recipe["model"]["patch"])
                sh = p["shuffled"]
                positions.append({"seed": seed, "plain": round(p["plain"], 4), "zeroed": round(p["zeroed"], 4),
                                  "worst": round(min(sh), 4), "best": round(max(sh), 4),
                                  "mean": round(sum(sh) / len(sh), 4),
                                  "zeroed_drop": round(p["plain"] - p["zeroed"], 4),
                                  "worst_drop": round(p["plain"] - min(sh), 4)})
                print(f"positions seed {seed}: {positions[-1]}", flush=True)
            print(f"{name:8s} seed {seed}: test accuracy {s['test_accuracy']:.4f}, {s['params']} parameters, "
                  f"{s['cpu_seconds']:.1f} CPU s", flush=True)

    result = {**runs["vit"][0], **sizes["vit"], "sizes": sizes, "runs": runs, "positions": positions,
              "selection": selection,
              "threads": args.threads}
    if args.write:
        save_vit(shipped, result, recipe)
    print(json.dumps({**result, "recipe": recipe}))


if __name__ == "__main__":
    main()
