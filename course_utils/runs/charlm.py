"""Chapter 8's character language model on tiny Shakespeare: recipe, seeded run with a
validation callback, and the shipped checkpoint with its training log. Chapter 8.

``python scripts/train_checkpoint.py --run charlm`` re-creates ``charlm_shakespeare.pt``.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor, nn

from ..charlm import CharVocab, lm_batch, load_corpus, model_bits_per_char, train_val_ids
from ..gpt import DecoderOnly, DecoderOnlyConfig
from ..training import Callback, TrainHistory
from ..validate import check_positive_int, check_rank
from .core import Recipe, Run, asset_path, check_recipe, load_as, read_checkpoint, run

CHARLM_CHECKPOINT = "charlm_shakespeare.pt"

# About a minute of training on a quiet 2-core laptop CPU. Sinusoidal positions: a first run with
# a learned table at Chapter 2's init scale (std 0.02, 2 % of the scaled embeddings) sat near the
# bigram baseline for ~300 steps and reached only 3.10 bits/char in 800.
CHARLM_RECIPE: Recipe = {
    "model": {"d_model": 64, "n_heads": 4, "d_ff": 256, "n_layers": 3, "dropout": 0.0, "norm_first": True,
              "positional": "sinusoidal", "max_len": 128, "tie_embeddings": True},
    "train": {"steps": 800, "lr": 5e-3, "warmup": 50, "min_lr": 5e-4, "optimizer": "adamw", "clip": 1.0,
              "weight_decay": 0.01},
    "batch_size": 16,
    "block_size": 128,  # characters per training sequence (= max_len, the context window)
    "eval_every": 50,  # validation bits/char every 50 steps, on 128 windows
    "seed": 0,
}
_KEYS = ("model", "train", "batch_size", "block_size", "eval_every", "seed")


def _plain_cross_entropy(logits: Tensor, targets: Tensor) -> Tensor:
    """Mean cross-entropy over every position: language-model batches have no padding."""
    return torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))


def build_charlm(vocab_size: int, recipe: Recipe | None = None) -> DecoderOnly:
    """A fresh character LM with the recipe's model settings. Chapter 8."""
    recipe = check_recipe(CHARLM_RECIPE if recipe is None else recipe, _KEYS)
    return DecoderOnly(DecoderOnlyConfig(vocab_size=vocab_size, **recipe["model"]))


class ValidationBitsPerChar(Callback):
    """Validation bits per character every ``every`` steps and at the last one (on 128 windows). Chapter 8."""

    def __init__(self, val_ids: Tensor, block_size: int, every: int, last: int):
        check_rank("val_ids", val_ids, 1, "(N,) token ids")
        if val_ids.dtype.is_floating_point or val_ids.dtype == torch.bool:
            raise TypeError(f"val_ids must hold integer token ids, got dtype {val_ids.dtype}")
        block_size, every, last = (
            check_positive_int(n, v) for n, v in (("block_size", block_size), ("every", every), ("last", last))
        )
        if val_ids.numel() < block_size + 1:
            raise ValueError(
                f"val_ids must hold at least block_size + 1 = {block_size + 1} tokens, got {val_ids.numel()}"
            )
        self.val_ids, self.block_size, self.every, self.last = val_ids, block_size, every, last
        self.steps: list[int] = []
        self.bits: list[float] = []

    def after_step(self, step: int, model: nn.Module, history: TrainHistory) -> None:
        if step % self.every == 0 or step == self.last:
            self.steps.append(step)
            self.bits.append(model_bits_per_char(model, self.val_ids, self.block_size, max_windows=128))


def run_charlm(recipe: Recipe | None = None, progress: bool = True, steps: int | None = None) -> tuple[Run, dict]:
    """Train the character LM from scratch: (Run(model, history, recipe), results). Chapter 8.

    results = {"val_steps", "val_bits_per_char", "train_loss_nats", "train_seconds"}.
    """
    recipe = check_recipe(CHARLM_RECIPE if recipe is None else recipe, _KEYS)
    text = load_corpus()
    vocab = CharVocab(text)
    train_ids, val_ids = train_val_ids(text, vocab)
    last = recipe["train"]["steps"] if steps is None else steps
    val = ValidationBitsPerChar(val_ids, recipe["block_size"], recipe["eval_every"], last)
    B, T = recipe["batch_size"], recipe["block_size"]
    result = run(recipe, lambda r: build_charlm(len(vocab), r),
                 lambda r, generator: lambda step: lm_batch(train_ids, B, T, generator),
                 progress, steps, [val], loss_fn=_plain_cross_entropy)
    results = {"val_steps": val.steps, "val_bits_per_char": [round(x, 4) for x in val.bits],
               "train_loss_nats": [round(x, 4) for x in result.history.losses],
               "train_seconds": round(result.history.seconds, 1)}
    return result, results


def load_charlm(path: Any = None) -> tuple[DecoderOnly, dict[str, Any]]:
    """(the shipped character LM in eval mode, its training log with its recipe). Chapter 8."""
    path = asset_path(CHARLM_CHECKPOINT) if path is None else path
    data = read_checkpoint(path)
    if data["kind"] != "decoder_only":
        raise ValueError(f"path must hold a DecoderOnly character LM, got a {data['kind']!r} checkpoint")
    return load_as(path, DecoderOnly), {**data["results"], "recipe": data["recipe"]}
