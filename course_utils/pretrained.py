"""A reversal model trained with Chapter 6's recipe, shipped as a small checkpoint, so that later
chapters can load it instantly instead of training. Chapter 6.

``load_reversal_model()`` reads ``course_utils/assets/reversal_transformer.pt`` with
``torch.load(weights_only=True)``: the file holds only plain data (the config and recipe as
dicts) and tensors. ``scripts/train_checkpoint.py`` re-creates it from scratch.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

import torch

from .data import VOCAB_SIZE, random_batch
from .model import Transformer, TransformerConfig
from .training import TrainConfig, TrainHistory, train

CHECKPOINT_PATH = Path(__file__).parent / "assets" / "reversal_transformer.pt"

# Chapter 6's fast recipe (what the shipped checkpoint was trained with).
FAST_RECIPE: dict[str, Any] = {
    "model": {"d_model": 64, "n_heads": 4, "d_ff": 128, "n_encoder_layers": 2, "n_decoder_layers": 2,
              "dropout": 0.0, "norm_first": True, "fused_layer_norm": True, "sdpa_attention": False},
    "train": {"steps": 350, "lr": 6e-3, "warmup": 35, "optimizer": "adam", "clip": 1.0},
    "batch_size": 128,
    "min_len": 3,  # training strings have 3..10 letters
    "max_len": 10,
    "seed": 0,
}

# The reference recipe of the course brief: the paper's post-LN block, small and slow to train.
REFERENCE_RECIPE: dict[str, Any] = {
    "model": {"d_model": 96, "n_heads": 4, "d_ff": 192, "n_encoder_layers": 2, "n_decoder_layers": 2,
              "dropout": 0.1, "norm_first": False},
    "train": {"steps": 3500, "lr": 3e-3, "warmup": 0, "optimizer": "adam", "clip": 1.0},
    "batch_size": 64,
    "min_len": 3,
    "max_len": 10,
    "seed": 0,
}


def training_lengths() -> tuple[int, int]:
    """(shortest, longest) string length the shipped model was trained on. Chapter 6."""
    recipe = checkpoint_recipe() if CHECKPOINT_PATH.exists() else FAST_RECIPE
    return int(recipe["min_len"]), int(recipe["max_len"])


def build_model(recipe: dict[str, Any]) -> Transformer:
    """A fresh (untrained) Transformer with the recipe's model settings. Chapter 6."""
    return Transformer(TransformerConfig(src_vocab_size=VOCAB_SIZE, tgt_vocab_size=VOCAB_SIZE, **recipe["model"]))


def reversal_batch_fn(recipe: dict[str, Any], generator: torch.Generator) -> Callable[[int], tuple]:
    """batch_fn(step) for :func:`course_utils.training.train`: random reversal batches. Chapter 6."""
    B, lo, hi = recipe["batch_size"], recipe["min_len"], recipe["max_len"]
    return lambda step: random_batch(B, lo, hi, generator)


def train_reversal_model(
    recipe: dict[str, Any] | None = None, progress: bool = True, steps: int | None = None
) -> tuple[Transformer, TrainHistory]:
    """Train a reversal model from scratch with ``recipe`` (default: the fast one). Chapter 6.

    ``steps`` overrides the recipe's number of steps (for quick smoke runs).
    """
    recipe = copy.deepcopy(recipe or FAST_RECIPE)
    if steps is not None:
        recipe["train"]["steps"] = steps
        recipe["train"]["warmup"] = min(recipe["train"]["warmup"], steps - 1)
    torch.manual_seed(recipe["seed"])  # parameter initialisation
    model = build_model(recipe)
    generator = torch.Generator().manual_seed(recipe["seed"])  # training data
    history = train(model, reversal_batch_fn(recipe, generator), TrainConfig(**recipe["train"]), progress=progress)
    return model, history


def save_checkpoint(model: Transformer, recipe: dict[str, Any], path: Path | str = CHECKPOINT_PATH) -> Path:
    """Write the model's weights, config and recipe (plain data only) to ``path``. Chapter 6."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    state = {k: v.detach().clone() for k, v in model.state_dict().items()}
    torch.save({"config": asdict(model.config), "recipe": recipe, "state_dict": state}, path)
    return path


def _load(path: Path | str) -> dict[str, Any]:
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(
            f"checkpoint not found at {path.name}; create it with `python scripts/train_checkpoint.py`"
        )
    return torch.load(path, map_location="cpu", weights_only=True)


def checkpoint_recipe(path: Path | str = CHECKPOINT_PATH) -> dict[str, Any]:
    """The training recipe stored in the checkpoint. Chapter 6."""
    return _load(path)["recipe"]


def load_reversal_model(path: Path | str = CHECKPOINT_PATH) -> Transformer:
    """The trained reversal Transformer, in eval mode, loaded with weights_only=True. Chapter 6."""
    data = _load(path)
    model = Transformer(TransformerConfig(**data["config"]))
    model.load_state_dict(data["state_dict"])
    return model.eval()
