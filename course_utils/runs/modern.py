"""Chapter 11's recipes, training runs and shipped results: the modern-block table, the uptraining
of a converted model, and the attention-at-scale measurements. Chapter 11.

``python benchmarks/modern_block.py --write`` re-makes ``modern_block.json`` and
``python benchmarks/attention_at_scale.py --write`` re-makes ``attention_at_scale.json`` and
``gqa_uptraining.json``; each stores its recipe under the key ``recipe`` (the freshness check
compares it with the code's). Every training run goes through ``course_utils.training.train``
(``runs.run`` for a model trained from scratch) with its own seeded batch generator.
"""

from __future__ import annotations

import copy
from dataclasses import replace
from typing import Any

import torch
from torch import Tensor, nn

from ..charlm import CharVocab, charlm_split, lm_batch, lm_loss
from ..gpt import DecoderOnly
from ..modern import ModernLM, ModernLMConfig, bits_per_char, convert_to_gqa
from ..norm import LayerNorm
from ..training import TrainConfig, train
from ..utils import count_params
from ..validate import check_choice, check_int, check_module, check_number, check_positive_int, check_rank
from .charlm import CHARLM_RECIPE, load_charlm
from .core import load_asset, run


def train_lm(model: nn.Module, train_ids: Tensor, steps: int, lr: float, batch_size: int, block_size: int,
             seed: int = 0, warmup: int = 0, min_lr: float | None = None) -> float:
    """Go on training ``model`` on random windows of train_ids with AdamW; returns the CPU seconds taken. Chapter 11.

    The batches come from a generator seeded with ``seed`` (the global generators are not touched);
    ``training.train`` runs the steps (warm-up + cosine from lr to min_lr; constant lr by default).
    """
    check_module("model", model)
    check_rank("train_ids", train_ids, 1, "(N,) token ids")
    steps, batch_size, block_size = (check_positive_int(n, v) for n, v in
                                     (("steps", steps), ("batch_size", batch_size), ("block_size", block_size)))
    lr = check_number("lr", lr, 0.0, low_open=True)
    seed = check_int("seed", seed, low=0)
    min_lr = lr if min_lr is None else check_number("min_lr", min_lr, 0.0)
    generator = torch.Generator().manual_seed(seed)
    config = TrainConfig(steps=steps, lr=lr, warmup=check_int("warmup", warmup, low=0), min_lr=min_lr,
                         optimizer="adamw", clip=1.0, weight_decay=0.01)
    return train(model, lambda step: lm_batch(train_ids, batch_size, block_size, generator), config,
                 loss_fn=lm_loss, progress=False).cpu_seconds  # the loop's CPU seconds, as every run reports them


# Each change alone, then all together, against the 2017 block, at the same task and budget.
MODERN_BLOCK_VARIANTS: dict[str, dict[str, Any]] = {
    "2017 block": {},
    "pre-norm": {"norm_first": True},
    "RMSNorm": {"norm": "rmsnorm"},
    "SwiGLU": {"ffn": "swiglu"},
    "RoPE": {"positional": "rope"},
    "GQA (2 KV heads)": {"n_kv_heads": 2},
    "no biases": {"bias": False},
    "modern (all)": {"norm_first": True, "norm": "rmsnorm", "ffn": "swiglu", "positional": "rope",
                     "n_kv_heads": 2, "bias": False},
    # beyond the six changes: two ways around the T x T matrix, trained that way from the start
    "window 8": {"window": 8},
    "linear attention": {"attention": "linear"},
}

MODERN_BLOCK_FILE = "modern_block.json"

MODERN_BLOCK_RECIPE: dict[str, Any] = {
    "model": {"d_model": 64, "n_heads": 4, "d_ff": 256, "n_layers": 2, "max_len": 64},
    "train": {"steps": 500, "lr": 3e-3, "warmup": 25, "min_lr": 3e-4, "optimizer": "adamw", "clip": 1.0,
              "weight_decay": 0.01},
    "batch_size": 16,
    "block_size": 64,
    "eval_windows": 256,  # consecutive validation blocks scored at the end
    "seed": 0,
    "threads": 1,
    "variants": MODERN_BLOCK_VARIANTS,
    "seeds": [0, 1, 2],  # every row with each seed (initialisation and batches): how much one run varies
    "eval_window": 8,  # the 2017 block is also scored under this window, without retraining
}

def shortened_recipe(steps: int) -> dict[str, Any]:
    """``MODERN_BLOCK_RECIPE`` with ``steps`` training steps and its warm-up scaled to match. Chapter 11.

    The notebook's live row uses it: the same model, data and schedule shape as a shipped row, shorter.
    """
    check_positive_int("steps", steps)
    train = MODERN_BLOCK_RECIPE["train"]
    warmup = max(1, train["warmup"] * steps // train["steps"])
    return {**MODERN_BLOCK_RECIPE, "train": {**train, "steps": steps, "warmup": warmup}}


def load_mha_charlm() -> DecoderOnly:
    """The shipped Chapter 8 character LM (multi-head attention), in eval mode. Chapter 11.

    Its LayerNorms run through PyTorch's fused kernel (``fused_layer_norm=True``): the same maths and
    the same weights, and about 40 % less time per uptraining step than the from-scratch formula.
    """
    model = load_charlm()[0].eval()
    model.config = replace(model.config, fused_layer_norm=True)
    for module in model.modules():
        if isinstance(module, LayerNorm):
            module.fused = True
    return model


def run_variant(name: str, recipe: dict[str, Any] | None = None,
                data: tuple[CharVocab, Tensor, Tensor] | None = None, seed: int | None = None) -> dict[str, Any]:
    """Train one row of the modern-block table from scratch: bits/char, parameters, CPU ms/step. Chapter 11.

    ``seed`` replaces the recipe's seed (initialisation and batches). The run goes through
    ``runs.run``. With ``recipe["eval_window"]`` a model without a window is also scored under
    that window, untrained for it (``bits_per_char_window``).
    """
    recipe = copy.deepcopy(recipe or MODERN_BLOCK_RECIPE)
    check_choice("name", name, tuple(recipe["variants"]))
    vocab, train_ids, val_ids = data or charlm_split()
    recipe["seed"] = recipe["seed"] if seed is None else check_int("seed", seed, low=0)
    B, T = recipe["batch_size"], recipe["block_size"]
    config = ModernLMConfig(vocab_size=len(vocab), **recipe["model"], **recipe["variants"][name])
    result = run(recipe, lambda r: ModernLM(config), lambda r, generator: lambda step: lm_batch(train_ids, B, T,
                 generator), progress=False, loss_fn=lm_loss)
    cpu = result.history.cpu_seconds  # CPU seconds of the training loop (TrainHistory's one clock)
    model: ModernLM = result.model  # type: ignore[assignment]  # runs.run returns the built model
    row = {"variant": name, "seed": recipe["seed"],
           "bits_per_char": round(bits_per_char(model, val_ids, T, recipe["eval_windows"]), 4),
           "parameters": count_params(model),
           "cpu_ms_per_step": round(1000 * cpu / recipe["train"]["steps"], 1)}
    if recipe.get("eval_window") and config.window is None and config.attention == "softmax":
        model.config = replace(config, window=recipe["eval_window"])  # the same weights, scored under a window
        row["bits_per_char_window"] = round(bits_per_char(model, val_ids, T, recipe["eval_windows"]), 4)
        model.config = config
    return row


def load_modern_block_result() -> dict[str, Any]:
    """The shipped result of benchmarks/modern_block.py: rows, spread over seeds and the recipe. Chapter 11."""
    return load_asset(MODERN_BLOCK_FILE)


# ---------------------------------------------------------------- uptraining a converted model (GQA, MQA)
# Ainslie et al. (2023) go on training the converted checkpoint with its pre-training recipe. Ours goes on
# at the learning rate Chapter 8's schedule ended with (its min_lr), so that the control, the unconverted
# model trained the same way, does not move much: a jolt of a larger learning rate would cost the
# control as well, and the gap between a converted model and the control is what the pooling costs.
UPTRAIN_RECIPE: dict[str, Any] = {
    # 30 steps of half Chapter 8's batch: about 0.5 % of its 3,200 x 16 training sequences (the paper uptrains
    # on 5 %), short enough for the live cells (about 0.13 CPU s a step); a batch of 16 recovered about as
    # much per step (GQA-2 1.19 against 1.24 bits/char behind the control after 30 steps, one run each)
    "steps": 30,
    "lr": CHARLM_RECIPE["train"]["min_lr"],  # constant: where Chapter 8's cosine schedule ended
    "batch_size": CHARLM_RECIPE["batch_size"] // 2,
    "block_size": CHARLM_RECIPE["block_size"],
    "eval_windows": 64,  # validation blocks of block_size characters scored before and after
    "seed": 0,
}

GQA_UPTRAINING_FILE = "gqa_uptraining.json"

GQA_UPTRAINING_RECIPE: dict[str, Any] = {
    "uptrain": UPTRAIN_RECIPE,
    "kv_heads": {"control (MHA)": 4, "GQA-2": 2, "MQA": 1},
    "seeds": [0, 1, 2, 3, 4, 5],  # seeds of the uptraining batches
    # MQA and the control scored after each of these uptraining lengths (chunks between them, uptrain_more):
    # the reference curve of Exercise 11.4, which lets the learner choose the lengths up to twice the recipe's
    "curve_steps": [0, UPTRAIN_RECIPE["steps"] // 6, UPTRAIN_RECIPE["steps"] // 3, 2 * UPTRAIN_RECIPE["steps"] // 3,
                    UPTRAIN_RECIPE["steps"], 3 * UPTRAIN_RECIPE["steps"] // 2, 2 * UPTRAIN_RECIPE["steps"]],
    "curve_seeds": [0, 1, 2],
    "threads": 1,
    "charlm": CHARLM_RECIPE,  # the shipped model it starts from: a new checkpoint makes the result stale
}


def uptrain(model: nn.Module, train_ids: Tensor, seed: int = 0, recipe: dict[str, Any] | None = None) -> float:
    """Go on training a (converted) character LM with ``UPTRAIN_RECIPE``; returns the CPU seconds. Chapter 11."""
    r = UPTRAIN_RECIPE if recipe is None else recipe
    return train_lm(model.train(), train_ids, r["steps"], r["lr"], r["batch_size"], r["block_size"], seed=seed)


def uptrain_more(model: nn.Module, train_ids: Tensor, steps: int, seed: int = 0, steps_done: int = 0) -> float:
    """Go on uptraining for ``steps`` more steps after ``steps_done``; returns the CPU seconds. Chapter 11.

    The batches are seeded by ``seed`` and ``steps_done``, so two models uptrained in the same chunks
    see the same batches. Each chunk starts a fresh AdamW (at ``UPTRAIN_RECIPE``'s constant rate).
    """
    steps = check_positive_int("steps", steps)
    seed, steps_done = check_int("seed", seed, low=0), check_int("steps_done", steps_done, low=0)
    return uptrain(model, train_ids, seed * 1_000_003 + steps_done, {**UPTRAIN_RECIPE, "steps": steps})


def _converted(n_kv_heads: int, charlm: DecoderOnly | None, data: tuple[CharVocab, Tensor, Tensor] | None
               ) -> tuple[DecoderOnly, DecoderOnly, Tensor, Tensor]:
    """(the character LM, its copy with n_kv_heads K/V heads, training ids, validation ids): what both
    uptraining runs start from. With n_kv_heads = n_heads nothing is pooled (the control)."""
    charlm = load_mha_charlm() if charlm is None else charlm
    if not isinstance(charlm, DecoderOnly):
        raise TypeError(f"charlm must be a DecoderOnly character LM, got {type(charlm).__name__}")
    n_kv = check_int("n_kv_heads", n_kv_heads, low=1, high=charlm.config.n_heads)
    _, train_ids, val_ids = data or charlm_split()
    model = copy.deepcopy(charlm) if n_kv == charlm.config.n_heads else convert_to_gqa(charlm, n_kv)
    return charlm, model, train_ids, val_ids


def uptraining_curve(n_kv_heads: int, steps: list[int], seed: int = 0, charlm: DecoderOnly | None = None,
                     data: tuple[CharVocab, Tensor, Tensor] | None = None) -> list[float]:
    """Bits/char of the converted (or, with n_kv_heads = n_heads, copied) LM after each uptraining length. Chapter 11.

    ``steps`` is increasing from 0; the model is uptrained in chunks between them with ``uptrain_more``.
    """
    check_positive_int("n_kv_heads", n_kv_heads)
    if not isinstance(steps, (list, tuple)) or not steps or any(
            not isinstance(s, int) or isinstance(s, bool) or s < 0 for s in steps) or list(steps) != sorted(
            set(steps)):
        raise ValueError(f"steps must be a non-empty increasing list of ints >= 0, got {steps!r}")
    check_int("seed", seed, low=0)
    charlm, model, train_ids, val_ids = _converted(n_kv_heads, charlm, data)
    out, done = [], 0
    for s in steps:
        if s > done:
            uptrain_more(model, train_ids, s - done, seed, done)
            done = s
        out.append(round(score(model, val_ids), 4))
    return out


def score(model: nn.Module, val_ids: Tensor, recipe: dict[str, Any] | None = None) -> float:
    """Validation bits per character of a character LM with ``UPTRAIN_RECIPE``'s blocks. Chapter 11."""
    r = UPTRAIN_RECIPE if recipe is None else recipe
    return bits_per_char(model, val_ids, r["block_size"], r["eval_windows"])


def run_uptraining(n_kv_heads: int, seed: int = 0, charlm: DecoderOnly | None = None,
                   data: tuple[CharVocab, Tensor, Tensor] | None = None) -> dict[str, float]:
    """Convert the shipped character LM to n_kv_heads K/V heads and uptrain it: bits/char before and after. Chapter 11.

    With n_kv_heads = n_heads nothing is pooled (the control). Returns {"base", "before", "after"}.
    """
    check_positive_int("n_kv_heads", n_kv_heads)  # before anything is loaded or trained
    check_int("seed", seed, low=0)
    charlm, model, train_ids, val_ids = _converted(n_kv_heads, charlm, data)
    base, before = score(charlm, val_ids), score(model, val_ids)
    uptrain(model, train_ids, seed)
    return {"base": round(base, 4), "before": round(before, 4), "after": round(score(model, val_ids), 4)}


def load_gqa_uptraining() -> dict[str, Any]:
    """The shipped uptraining runs over seeds: rows of (variant, seed, before, after) and the recipe. Chapter 11."""
    return load_asset(GQA_UPTRAINING_FILE)


# ---------------------------------------------------------------- attention at scale: time and memory
ATTENTION_AT_SCALE_FILE = "attention_at_scale.json"

ATTENTION_AT_SCALE_RECIPE: dict[str, Any] = {
    "lengths": [256, 512, 1024, 2048, 4096, 8192],
    "heads": 1,
    "d_k": 64,
    "dtype": "float32",
    "block": 256,  # tiled attention's tile side
    "linear_chunk": 64,  # causal linear attention's chunk
    "repeats": 5,  # timed rounds, functions interleaved A, B, C, D, A, B, ... after one warm-up
    "clock": "process_time",  # CPU seconds of the process, one thread: what a busy machine steals is not counted
    "threads": 1,
    "seed": 0,
    "functions": ["plain", "tiled", "sdpa", "linear"],
    # gradient checkpointing: one training step (forward + backward) of a deeper ModernLM, with and without
    "checkpointing": {"model": {"d_model": 64, "n_heads": 4, "d_ff": 256, "n_layers": 8, "max_len": 256},
                      "batch_size": 16, "block_size": 256, "repeats": 5},
}


def load_attention_at_scale() -> dict[str, Any]:
    """The shipped time and memory of plain, tiled, SDPA and linear attention as T grows. Chapter 11."""
    return load_asset(ATTENTION_AT_SCALE_FILE)
