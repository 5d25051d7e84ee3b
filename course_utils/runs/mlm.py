"""Chapter 12's masked-language model on tiny Shakespeare: its recipe, the seeded run, and the
shipped checkpoint with its training log. Chapter 12.

``python scripts/train_checkpoint.py --run mlm`` re-trains it with :data:`MLM_RECIPE` and rewrites
``mlm_shakespeare.pt`` in the one checkpoint layout ``{"kind": "mlm", "config", "recipe",
"results", "state_dict"}``; ``results`` holds the loss per step and the time the run took. The
freshness check compares its stored recipe with the code's.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from torch import Tensor, nn

from ..charlm import charlm_split, lm_batch
from ..mlm import EncoderOnlyLM, bert_mask, masked_loss
from ..training import Callback, TrainHistory
from ..validate import check_bool, check_int
from .core import Recipe, Run, asset_path, check_recipe, load_as, read_checkpoint, run, save

MLM_FILE = "mlm_shakespeare.pt"

# About 30 CPU s of training on one thread; the model is Chapter 8's char LM without its causal mask. The
# chapter reads the run made with this recipe and retraces its first steps live.
MLM_RECIPE: Recipe = {
    "model": {"d_model": 64, "n_heads": 4, "d_ff": 256, "n_layers": 3, "max_len": 64},
    "train": {"steps": 600, "lr": 3e-3, "warmup": 50, "min_lr": 3e-4, "optimizer": "adamw", "weight_decay": 0.01,
              "clip": 1.0},
    "batch_size": 32,
    "block_size": 64,
    "mask_rate": 0.15,  # BERT: 15 % of positions are chosen; of those 80 % [MASK], 10 % random, 10 % kept
    "seed": 0,
}
_KEYS = tuple(MLM_RECIPE)


class StopAfter(Callback):
    """Ends training after ``steps`` steps of a longer schedule (a run that retraces the first steps). Chapter 12."""

    def __init__(self, steps: int):
        self.steps = check_int("steps", steps, low=1)

    def after_step(self, step: int, model: nn.Module, history: TrainHistory) -> bool:
        return step >= self.steps


def run_mlm(recipe: Recipe | None = None, steps: int | None = None, progress: bool = True,
            stop_after: int | None = None) -> tuple[EncoderOnlyLM, dict[str, Any]]:
    """Train the masked-language model from scratch; return (model, log with the loss per step). Chapter 12.

    ``steps`` shortens the whole run (``runs.with_steps``: its warm-up and cosine decay shrink
    with it); ``stop_after`` keeps the recipe's schedule and stops after that many steps, so a
    short run retraces the first steps of the full one (same seed, batches and learning rates).
    """
    recipe = check_recipe(copy.deepcopy(MLM_RECIPE if recipe is None else recipe), _KEYS)
    check_bool("progress", progress)
    total = recipe["train"]["steps"] if steps is None else check_int("steps", steps, low=1)
    callbacks = [] if stop_after is None else [StopAfter(check_int("stop_after", stop_after, low=1, high=total))]
    vocab, train_ids, _ = charlm_split()
    V = len(vocab)

    def make_batch_fn(r: Recipe, generator: Any) -> Any:
        def batch(step: int) -> tuple[Tensor, Tensor]:
            windows, _ = lm_batch(train_ids, r["batch_size"], r["block_size"], generator)  # (B, T)
            return bert_mask(windows, V, V, r["mask_rate"], generator)  # [MASK] = V, one past the characters

        return batch

    result: Run = run(recipe, lambda r: EncoderOnlyLM(V, **r["model"]), make_batch_fn, progress=progress, steps=steps,
                      callbacks=callbacks, loss_fn=masked_loss)
    model = result.model
    if not isinstance(model, EncoderOnlyLM):  # run() returns what the build function made
        raise TypeError(f"the MLM recipe must build an EncoderOnlyLM, got {type(model).__name__}")
    return model, {"loss_nats": result.history.losses, "cpu_seconds": result.history.cpu_seconds,
                          "wall_seconds": result.history.seconds, "recipe": result.recipe}


def save_mlm(model: EncoderOnlyLM, log: dict[str, Any], path: Path | str | None = None) -> Path:
    """Write the trained model with ``log`` from ``run_mlm`` (its recipe, loss per step, seconds). Chapter 12."""
    if not isinstance(model, EncoderOnlyLM):
        raise TypeError(f"model must be an EncoderOnlyLM, got {type(model).__name__}")
    missing = [k for k in ("loss_nats", "cpu_seconds", "wall_seconds", "recipe") if not isinstance(log, dict)
               or k not in log]
    if missing:
        raise ValueError(f"log must be the log run_mlm returns, got {type(log).__name__} without {missing}")
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
