"""Chapter 12's masked-language model on tiny Shakespeare: the shipped checkpoint and its training log. Chapter 12.

``python scripts/train_checkpoint.py --run mlm`` re-trains it with ``course_utils.mlm.MLM_RECIPE``
and rewrites ``mlm_shakespeare.pt`` in the one checkpoint layout ``{"kind": "mlm", "config",
"recipe", "results", "state_dict"}``; ``results`` holds the loss per step and the time the run
took. The freshness check compares its stored recipe with the code's.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from ..mlm import EncoderOnlyLM
from .core import asset_path, load_as, read_checkpoint, save

MLM_FILE = "mlm_shakespeare.pt"


def save_mlm(model: EncoderOnlyLM, log: dict[str, Any], path: Path | str | None = None) -> Path:
    """Write the trained model with ``log`` from ``train_mlm`` (its recipe, loss per step, seconds). Chapter 12."""
    if not isinstance(model, EncoderOnlyLM):
        raise TypeError(f"model must be an EncoderOnlyLM, got {type(model).__name__}")
    missing = [k for k in ("loss_nats", "cpu_seconds", "wall_seconds", "recipe") if not isinstance(log, dict)
               or k not in log]
    if missing:
        raise ValueError(f"log must be the log train_mlm returns, got {type(log).__name__} without {missing}")
    recipe = copy.deepcopy(log["recipe"])
    config = {"vocab_size": model.vocab_size, **recipe["model"]}  # EncoderOnlyLM(**config) rebuilds it
    results = {"loss_nats": [round(float(x), 5) for x in log["loss_nats"]],
               "cpu_seconds": round(float(log["cpu_seconds"]), 1), "wall_seconds": round(float(log["wall_seconds"]), 1)}
    return save(model, recipe, asset_path(MLM_FILE) if path is None else path, results, config=config)


def load_mlm(path: Path | str | None = None) -> tuple[EncoderOnlyLM, dict[str, Any]]:
    """(the shipped masked-language model in eval mode, its log: loss per step, seconds, recipe). Chapter 12."""
    path = asset_path(MLM_FILE) if path is None else path
    data = read_checkpoint(path)
    if data["kind"] != "mlm":
        raise ValueError(f"path must hold a masked-language model, got a {data['kind']!r} checkpoint")
    return load_as(path, EncoderOnlyLM), {**data["results"], "recipe": data["recipe"]}

