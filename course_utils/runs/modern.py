"""Chapter 11's modern-block table: its recipe, one seeded row, and the shipped result. Chapter 11.

``python benchmarks/modern_block.py`` re-makes ``modern_block.json``, which stores
``MODERN_BLOCK_RECIPE`` under the key ``recipe`` (the freshness check compares the two).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from torch import Tensor

from ..charlm import CharVocab
from ..gpt import DecoderOnly
from ..modern import ModernLM, ModernLMConfig, bits_per_char, charlm_data, count_parameters, train_lm
from ..norm import LayerNorm
from ..validate import check_choice, check_int, check_positive_int
from .charlm import load_charlm
from .core import load_asset, seeded

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
    "spread_seeds": [1, 2],  # the first and last rows again with these seeds: how much one run varies
    "spread_variants": ["2017 block", "modern (all)"],
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

    ``seed`` replaces the recipe's seed (initialisation and batches).
    """
    recipe = recipe or MODERN_BLOCK_RECIPE
    check_choice("name", name, tuple(recipe["variants"]))
    vocab, train_ids, val_ids = data or charlm_data()
    seed = recipe["seed"] if seed is None else check_int("seed", seed, low=0)
    seeded(seed)
    model = ModernLM(ModernLMConfig(vocab_size=len(vocab), **recipe["model"], **recipe["variants"][name]))
    t = recipe["train"]
    cpu = train_lm(model, train_ids, t["steps"], t["lr"], recipe["batch_size"], recipe["block_size"],
                   seed=seed, warmup=t["warmup"], min_lr=t["min_lr"])
    bpc = bits_per_char(model, val_ids, recipe["block_size"], recipe["eval_windows"])
    return {"variant": name, "seed": seed, "bits_per_char": round(bpc, 4), "parameters": count_parameters(model),
            "cpu_ms_per_step": round(1000 * cpu / t["steps"], 1)}


def load_modern_block_result() -> dict[str, Any]:
    """The shipped result of benchmarks/modern_block.py: rows, spread over seeds and the recipe. Chapter 11."""
    return load_asset(MODERN_BLOCK_FILE)
