"""Chapter 12's scaling laws in miniature: the recipe of every run, one seeded run per size and
length, and the shipped table. Chapter 12.

``python benchmarks/scaling.py --threads 1 --write`` re-trains every size and length with
:data:`SCALING_RECIPE` and rewrites ``scaling.json``, which stores that recipe under the key
``recipe`` (the freshness check compares it with the code's).
"""

from __future__ import annotations

import copy
from typing import Any

from ..charlm import charlm_split, lm_batch, lm_loss, model_bits_per_char
from ..gpt import DecoderOnly, DecoderOnlyConfig
from ..scaling import non_embedding_params, training_flops
from ..utils import count_params
from ..validate import check_bool, check_int
from .core import Recipe, check_recipe, load_asset, run

SCALING_FILE = "scaling.json"

# Every run of the benchmark. Sizes: one training length, six widths/depths (d_ff = 4 d_model,
# d_k = 16 or less). Lengths: the "base" size trained for several numbers of steps. Budgeted
# to about five minutes of one CPU thread in all. Parameters are counted without the
# embedding and output tables (as Kaplan et al. 2020 count N). A run shorter than
# ``size_steps`` follows ``runs.with_steps``: the same schedule, its warm-up capped below its length.
SCALING_RECIPE: Recipe = {
    "sizes": [
        {"d_model": 16, "n_layers": 1, "n_heads": 2},
        {"d_model": 24, "n_layers": 2, "n_heads": 2},
        {"d_model": 32, "n_layers": 2, "n_heads": 2},
        {"d_model": 48, "n_layers": 2, "n_heads": 4},
        {"d_model": 64, "n_layers": 3, "n_heads": 4},
        {"d_model": 96, "n_layers": 3, "n_heads": 6},
    ],
    "size_steps": 1000,
    "base": {"d_model": 32, "n_layers": 2, "n_heads": 2},
    "length_steps": [125, 250, 500, 1000, 2000],
    "model": {"ff_mult": 4, "dropout": 0.0, "norm_first": True, "positional": "sinusoidal",
              "tie_embeddings": True},
    "train": {"steps": 1000, "lr": 3e-3, "warmup": 50, "min_lr": 3e-4, "optimizer": "adamw", "clip": 1.0,
              "weight_decay": 0.01},
    "batch_size": 32,
    "block_size": 64,
    "eval_windows": 256,  # validation bits/char on the first 256 consecutive windows of 64 characters
    "seed": 0,
}
_KEYS = tuple(SCALING_RECIPE)


def size_recipe(size: dict[str, int], recipe: Recipe | None = None) -> Recipe:
    """One run's recipe: the model of ``size`` ({"d_model", "n_layers", "n_heads"}), the shared rest. Chapter 12."""
    recipe = check_recipe(SCALING_RECIPE if recipe is None else recipe, _KEYS)
    if not isinstance(size, dict) or {"d_model", "n_layers", "n_heads"} - set(size):
        raise ValueError(f"size must be a dict with the keys ['d_model', 'n_heads', 'n_layers'], got {size!r:.60}")
    d_model, n_layers, n_heads = (check_int(f"size[{k!r}]", size[k], low=1)
                                  for k in ("d_model", "n_layers", "n_heads"))
    m = recipe["model"]
    return {"model": {"d_model": d_model, "n_heads": n_heads, "d_ff": m["ff_mult"] * d_model, "n_layers": n_layers,
                      "dropout": m["dropout"], "max_len": recipe["block_size"], "positional": m["positional"],
                      "norm_first": m["norm_first"], "tie_embeddings": m["tie_embeddings"]},
            "train": copy.deepcopy(recipe["train"]), "batch_size": recipe["batch_size"],
            "block_size": recipe["block_size"], "eval_windows": recipe["eval_windows"], "seed": recipe["seed"]}


def run_size(size: dict[str, int], steps: int, recipe: Recipe | None = None, progress: bool = False) -> dict[str, Any]:
    """Train one run of the recipe; return params, tokens, compute, val bits/char and CPU seconds. Chapter 12."""
    one = size_recipe(size, recipe)
    check_int("steps", steps, low=1)
    check_bool("progress", progress)
    vocab, train_ids, val_ids = charlm_split()
    B, T = one["batch_size"], one["block_size"]
    result = run(one, lambda r: DecoderOnly(DecoderOnlyConfig(vocab_size=len(vocab), **r["model"])),
                 lambda r, generator: lambda step: lm_batch(train_ids, B, T, generator),
                 progress=progress, steps=steps, loss_fn=lm_loss)
    bits = model_bits_per_char(result.model, val_ids, T, max_windows=one["eval_windows"])
    N, D = non_embedding_params(result.model), steps * B * T
    return {**size, "params": N, "all_params": count_params(result.model), "steps": steps,
            "tokens": D, "compute": training_flops(N, D), "val_bits_per_char": round(bits, 4),
            "cpu_seconds": round(result.history.cpu_seconds, 1)}


def load_scaling() -> dict[str, Any]:
    """The shipped scaling benchmark (sizes, lengths, fits, recipe). Chapter 12."""
    return load_asset(SCALING_FILE)
