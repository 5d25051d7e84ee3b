"""Chapter 10's measured runs: the recipe of ``ablations.json`` (baselines and Table 3 in
miniature), one row of Table 3 (:func:`run_row`) and the shipped results. Chapter 10.

``python benchmarks/ablations.py --write`` runs every row and writes ``ablations.json``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch import Tensor, nn

from ..ablations import build_variant, measurements, measuring_callbacks
from ..data import VOCAB_SIZE, random_batch
from ..evaluation import evaluate_by_length
from ..model import TransformerConfig
from ..utils import count_params
from ..validate import check_bool
from .core import Recipe, load_asset, run
from .reversal import FAST_RECIPE

ABLATIONS_FILE = "ablations.json"

# -- Table 3 in miniature --------------------------------------------------------------------
BASE_MODEL = {"d_model": 32, "n_heads": 4, "d_ff": 64, "n_encoder_layers": 2, "n_decoder_layers": 2,
              "dropout": 0.0, "norm_first": False}  # the paper's post-LN block, tiny
BASE_TRAIN = {"steps": 300, "lr": 5e-3, "warmup": 30}
DEPTH_TRAIN = {"steps": 80, "lr": 5e-3, "warmup": 16}  # deep rows are costly: fewer steps
TABLE3_DATA = {"batch_size": 64, "min_len": 3, "max_len": 8, "n_per_length": 30}  # strings of 3-8 letters
QUICK_BUDGET = {"steps": 150, "warmup": 15, "batch_size": 64}  # --quick: a third of the steps, half the batch


def ablations_recipe(quick: bool = False) -> Recipe:
    """The full recipe of ``ablations.json``: the baselines' recipe (Chapter 6's fast one) and Table 3's."""
    check_bool("quick", quick)
    return {"baselines": FAST_RECIPE, "baselines_quick": QUICK_BUDGET if quick else None,
            "table3_base_model": BASE_MODEL, "table3_train": BASE_TRAIN,
            "depth_train": DEPTH_TRAIN, "table3_data": TABLE3_DATA}


def _build_row(recipe: Recipe) -> nn.Module:
    return build_variant(TransformerConfig(**recipe["model"]), **recipe["variant"])


def _row_batches(recipe: Recipe, generator: torch.Generator) -> Callable[[int], Sequence[Tensor]]:
    return lambda step: random_batch(recipe["batch_size"], recipe["min_len"], recipe["max_len"], generator)


def run_row(
    model_kwargs: dict[str, Any],
    train_kwargs: dict[str, Any],
    variant: dict[str, Any] | None = None,
    batch_size: int = 64,
    min_len: int = 3,
    max_len: int = 10,
    n_per_length: int = 50,
    seed: int = 0,
) -> dict[str, Any]:
    """Build a variant, train it on reversal and measure it: one row of Table 3 in miniature. Chapter 10.

    Returns params, seconds (training only), final_loss (mean of the last 20 steps; None if it
    is not finite), exact_match (greedy, %, mean over lengths min_len..max_len), steps_to_99
    and grad_norm_layer1 (see :func:`course_utils.ablations.train_measured`).
    """
    recipe: Recipe = {
        "model": {"src_vocab_size": VOCAB_SIZE, "tgt_vocab_size": VOCAB_SIZE, **model_kwargs},
        "train": dict(train_kwargs), "seed": seed, "variant": dict(variant or {}),
        "batch_size": batch_size, "min_len": min_len, "max_len": max_len,
    }
    accuracy, grads = measuring_callbacks()
    model, history, _ = run(recipe, _build_row, _row_batches, progress=False, callbacks=[accuracy, grads])
    measured = measurements(history, accuracy, grads)
    history = measured["history"]
    final = sum(history.losses[-20:]) / 20
    finite = math.isfinite(final)
    exact = 0.0
    if finite:
        results = evaluate_by_length(model, range(min_len, max_len + 1), n_per_length)
        exact = sum(r["exact_match"] for r in results.values()) / len(results)
    return {
        "params": count_params(model),
        "seconds": round(history.seconds, 2),
        "final_loss": round(final, 4) if finite else None,
        "exact_match": round(100 * exact, 1),
        "steps_to_99": measured["steps_to_99"],
        "grad_norm_layer1": measured["grad_norm_layer1"],
    }


def load_ablations() -> dict[str, Any]:
    """The shipped results of ``benchmarks/ablations.py`` (plain JSON, with its recipe). Chapter 10."""
    return load_asset(ABLATIONS_FILE)
