"""Stretching RoPE's context without (and with little) retraining: Chapter 9's RoPE model, trained on
strings of 3-10 letters, scored at 20 and 40 after position interpolation (Chen et al., 2023) or an
NTK-aware base, as it is and after a short fine-tune. Chapter 9.

``python benchmarks/rope_stretch.py --write`` re-makes ``rope_stretch.json``, which stores
``rope_stretch_recipe()`` under the key ``recipe`` (the freshness check compares the two).
"""

from __future__ import annotations

import copy
from typing import Any

import torch
from torch import nn

from ..data import random_batch
from ..positional import stretch_rope
from ..training import TrainConfig, TrainHistory, train
from ..validate import check_choice, check_module
from .core import Recipe, load_asset
from .length import WINNER, scheme_recipe, shipped_recipe

ROPE_STRETCH_FILE = "rope_stretch.json"

ROPE_STRETCH: dict[str, Any] = {
    "factor": 4,  # trained on <= 10 letters, stretched to a window of 40
    "methods": ["none", "interpolation", "ntk"],
    "eval_lengths": [10, 20, 40],
    "n_per_length": 200,  # test strings per length (seeded, the same for every row)
    "eval_seed": 1234,
    # a quarter of the base budget, on strings as long as the stretched window
    "fine_tune": {"steps": 100, "lr": 1e-3, "warmup": 10, "min_len": 3, "max_len": 40, "batch_size": 128,
                  "seed": 1},
}


def rope_stretch_recipe() -> Recipe:
    """The full recipe of ``rope_stretch.json``: the base model's, the stretch, the fine-tune and the winner's."""
    return {"base": scheme_recipe("rope"), **copy.deepcopy(ROPE_STRETCH), "winner": shipped_recipe(WINNER)}


def fine_tune(model: nn.Module, method: str, recipe: Recipe | None = None) -> tuple[nn.Module, TrainHistory]:
    """A stretched copy of ``model`` (``method`` at the recipe's factor) fine-tuned on long strings. Chapter 9.

    The copy keeps its stretched tables while it trains, as Chen et al. fine-tune an interpolated
    model; ``model`` itself is left as it was.
    """
    check_module("model", model)
    recipe = rope_stretch_recipe() if recipe is None else recipe
    check_choice("method", method, tuple(recipe["methods"]))
    ft = recipe["fine_tune"]
    tuned = stretch_rope(model, method, recipe["factor"])
    generator = torch.Generator().manual_seed(ft["seed"])
    torch.manual_seed(ft["seed"])
    history = train(tuned, lambda step: random_batch(ft["batch_size"], ft["min_len"], ft["max_len"], generator),
                    TrainConfig(steps=ft["steps"], lr=ft["lr"], warmup=ft["warmup"]), progress=False)
    return tuned.eval(), history


def load_rope_stretch_result() -> dict[str, Any]:
    """The shipped result of ``benchmarks/rope_stretch.py``: counts per row and length, and the recipe. Chapter 9."""
    return load_asset(ROPE_STRETCH_FILE)
