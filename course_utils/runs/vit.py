"""Chapter 12's Vision Transformer on the 8x8 digits: the shipped checkpoint and its recipe. Chapter 12.

``python benchmarks/vit_digits.py`` re-trains it with ``course_utils.vit.VIT_RECIPE`` and rewrites
``vit_digits.pt`` in the one checkpoint layout ``{"kind": "vit", "config", "recipe", "results",
"state_dict"}``; the freshness check compares its stored recipe with the code's.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from ..vit import VIT_RECIPE, VisionTransformer
from .core import asset_path, load_as, read_checkpoint, save

VIT_FILE = "vit_digits.pt"


def save_vit(model: VisionTransformer, result: dict[str, Any], recipe: dict[str, Any] | None = None,
             path: Path | str | None = None) -> Path:
    """Write the trained ViT: its weights, the recipe that made it and its scores. Chapter 12."""
    if not isinstance(model, VisionTransformer):
        raise TypeError(f"model must be a VisionTransformer, got {type(model).__name__}")
    if not isinstance(result, dict):
        raise TypeError(f"result must be a dict, got {type(result).__name__}")
    recipe = copy.deepcopy(recipe or VIT_RECIPE)
    return save(model, recipe, asset_path(VIT_FILE) if path is None else path, result, config=recipe["model"])


def load_vit(path: Path | str | None = None) -> tuple[VisionTransformer, dict[str, Any]]:
    """(the shipped ViT in eval mode, {"recipe", "result"}). Chapter 12."""
    path = asset_path(VIT_FILE) if path is None else path
    data = read_checkpoint(path)
    if data["kind"] != "vit":
        raise ValueError(f"path must hold a Vision Transformer, got a {data['kind']!r} checkpoint")
    return load_as(path, VisionTransformer), {"recipe": data["recipe"], "result": data["results"]}
