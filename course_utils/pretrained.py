"""A reversal model trained with Chapter 6's recipe, shipped as a small checkpoint, so that later
chapters can load it instantly instead of training. Chapter 6.

``load_reversal_model()`` reads ``course_utils/assets/reversal_transformer.pt`` with
``torch.load(weights_only=True)``: the file holds only plain data (the config and recipe as
dicts) and tensors. ``scripts/train_checkpoint.py`` re-creates it from scratch.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

import torch

from .data import VOCAB_SIZE, random_batch
from .model import Transformer, TransformerConfig
from .training import TrainHistory, train_recipe

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


_RECIPE_KEYS = ("model", "train", "batch_size", "min_len", "max_len", "seed")


def _check_recipe(recipe: object, name: str = "recipe") -> dict[str, Any]:
    """Raise unless ``recipe`` is a dict with every key of FAST_RECIPE, model and train being dicts."""
    if not isinstance(recipe, dict):
        raise TypeError(f"{name} must be a dict like FAST_RECIPE, got {type(recipe).__name__}")
    missing = [k for k in _RECIPE_KEYS if k not in recipe]
    if missing:
        raise ValueError(f"{name} must have the keys {list(_RECIPE_KEYS)}, got none for {missing}")
    for key in ("model", "train"):
        if not isinstance(recipe[key], dict):
            raise TypeError(f"{name}[{key!r}] must be a dict, got {type(recipe[key]).__name__}")
    return recipe


def _config_from_dict(config: object, name: str) -> TransformerConfig:
    """TransformerConfig(**config) with a clear error for a missing or unknown key."""
    if not isinstance(config, dict):
        raise TypeError(f"{name} must be a dict of TransformerConfig fields, got {type(config).__name__}")
    fields = {f.name for f in dataclasses.fields(TransformerConfig)}
    required = {f.name for f in dataclasses.fields(TransformerConfig)
                if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING}
    unknown = sorted(set(config) - fields)
    missing = sorted(required - set(config))
    if unknown or missing:
        raise ValueError(
            f"{name} must hold TransformerConfig fields, got "
            + "; ".join(p for p in (f"missing {missing}" if missing else "",
                                    f"unknown {unknown}" if unknown else "") if p)
        )
    return TransformerConfig(**config)


def build_model(recipe: dict[str, Any]) -> Transformer:
    """A fresh (untrained) Transformer with the recipe's model settings. Chapter 6."""
    recipe = _check_recipe(recipe)
    fields = {f.name for f in dataclasses.fields(TransformerConfig)} - {"src_vocab_size", "tgt_vocab_size"}
    unknown = sorted(set(recipe["model"]) - fields)
    if unknown:
        raise ValueError(f"recipe['model'] must hold TransformerConfig fields, got unknown {unknown}")
    return Transformer(TransformerConfig(src_vocab_size=VOCAB_SIZE, tgt_vocab_size=VOCAB_SIZE, **recipe["model"]))


def reversal_batch_fn(recipe: dict[str, Any], generator: torch.Generator) -> Callable[[int], tuple]:
    """batch_fn(step) for :func:`course_utils.training.train`: random reversal batches. Chapter 6."""
    recipe = _check_recipe(recipe)
    if not isinstance(generator, torch.Generator):
        raise TypeError(f"generator must be a torch.Generator, got {type(generator).__name__}")
    B, lo, hi = recipe["batch_size"], recipe["min_len"], recipe["max_len"]
    return lambda step: random_batch(B, lo, hi, generator)


def train_reversal_model(
    recipe: dict[str, Any] | None = None,
    progress: bool = True,
    steps: int | None = None,
    on_step: Callable[..., bool | None] | None = None,
) -> tuple[Transformer, TrainHistory]:
    """Train a reversal model from scratch with ``recipe`` (default: the fast one). Chapter 6.

    ``steps`` overrides the recipe's number of steps (for quick smoke runs); ``on_step`` is
    passed to :func:`course_utils.training.train` (e.g. evaluations during training).
    """
    recipe = _check_recipe(FAST_RECIPE if recipe is None else recipe)
    return train_recipe(recipe, build_model, reversal_batch_fn, progress, steps, on_step)


def save_checkpoint(model: Transformer, recipe: dict[str, Any], path: Path | str = CHECKPOINT_PATH) -> Path:
    """Write the model's weights, config and recipe (plain data only) to ``path``. Chapter 6."""
    if not isinstance(model, Transformer):
        raise TypeError(f"model must be a course_utils.model.Transformer, got {type(model).__name__}")
    _check_recipe(recipe)
    path = _check_path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    state = {k: v.detach().clone() for k, v in model.state_dict().items()}
    torch.save({"config": asdict(model.config), "recipe": recipe, "state_dict": state}, path)
    return path


def _check_path(path: object) -> Path:
    if not isinstance(path, (str, Path)):
        raise TypeError(f"path must be a str or pathlib.Path, got {type(path).__name__}")
    return Path(path)


def _load(path: Path | str) -> dict[str, Any]:
    path = _check_path(path)
    if not path.exists():
        raise FileNotFoundError(
            f"checkpoint not found at {path.name}; create it with `python scripts/train_checkpoint.py`"
        )
    if not path.is_file():
        raise ValueError(f"path must be a checkpoint file, got the directory {path.name}")
    try:
        data = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as error:  # empty, truncated, foreign or unsafe file: all unreadable here
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise ValueError(
            f"path must be a checkpoint written by save_checkpoint, got a file torch.load cannot read "
            f"({path.name}: {first[:120]})"
        ) from None
    missing = [k for k in ("config", "recipe", "state_dict") if not isinstance(data, dict) or k not in data]
    if missing:
        raise ValueError(
            f"path must be a checkpoint written by save_checkpoint (a dict with 'config', 'recipe' and "
            f"'state_dict'), got {type(data).__name__} without {missing} in {path.name}"
        )
    return data


def checkpoint_recipe(path: Path | str = CHECKPOINT_PATH) -> dict[str, Any]:
    """The training recipe stored in the checkpoint. Chapter 6."""
    return _load(path)["recipe"]


def load_reversal_model(path: Path | str = CHECKPOINT_PATH) -> Transformer:
    """The trained reversal Transformer, in eval mode, loaded with weights_only=True. Chapter 6."""
    data = _load(path)
    model = Transformer(_config_from_dict(data["config"], "the checkpoint's config"))
    try:
        model.load_state_dict(data["state_dict"])
    except (RuntimeError, TypeError, AttributeError) as error:
        first = str(error).strip().splitlines()[0]
        raise ValueError(
            f"path must be a checkpoint whose weights fit its config, got a mismatch in {Path(path).name}: "
            f"{first[:160]}"
        ) from None
    return model.eval()
