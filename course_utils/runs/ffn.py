"""Chapter 5's FFN activations measured on the character LM: ReLU, GELU, SwiGLU and GeGLU at equal
parameters, the same data, budget and seeds. Chapter 5.

``python benchmarks/ffn_activations.py --write`` re-makes ``ffn_activations.json``, which stores
``FFN_ACTIVATIONS_RECIPE`` under the key ``recipe`` (the freshness check compares the two).
"""

from __future__ import annotations

from typing import Any

from torch import Tensor

from ..charlm import CharVocab, charlm_split
from ..ffn import swap_ffn_activation
from ..modern import ModernLM, ModernLMConfig, bits_per_char
from ..utils import count_params
from ..validate import check_choice, check_int
from .core import load_asset, seeded
from .modern import MODERN_BLOCK_RECIPE, train_lm

FFN_ACTIVATIONS_FILE = "ffn_activations.json"

# Chapter 11's modern-block table's 2017 block (d_model 64, 2 layers, d_ff 256, 500 steps); the
# gated FFNs get a hidden width of 2/3 d_ff so that every row has the same number of parameters.
FFN_ACTIVATIONS_RECIPE: dict[str, Any] = {
    **{k: v for k, v in MODERN_BLOCK_RECIPE.items()
       if k not in ("variants", "spread_seeds", "spread_variants", "seeds", "eval_window")},
    "activations": {"ReLU": "relu", "GELU": "gelu", "SwiGLU": "swiglu", "GeGLU": "geglu"},
    "seeds": [0, 1, 2],
}


def run_activation(name: str, seed: int, recipe: dict[str, Any] | None = None,
                   data: tuple[CharVocab, Tensor, Tensor] | None = None) -> dict[str, Any]:
    """Train one row (activation ``name``, ``seed``) from scratch: bits/char, parameters, CPU ms/step. Chapter 5."""
    recipe = recipe or FFN_ACTIVATIONS_RECIPE
    check_choice("name", name, tuple(recipe["activations"]))
    seed = check_int("seed", seed, low=0)
    vocab, train_ids, val_ids = data or charlm_split()
    activation = recipe["activations"][name]
    seeded(seed)
    gated = activation in ("swiglu", "geglu")
    model = ModernLM(ModernLMConfig(vocab_size=len(vocab), **recipe["model"], ffn="swiglu" if gated else "relu"))
    swap_ffn_activation(model, activation)  # same initial weights as its partner, another non-linearity
    t = recipe["train"]
    cpu = train_lm(model, train_ids, t["steps"], t["lr"], recipe["batch_size"], recipe["block_size"],
                   seed=seed, warmup=t["warmup"], min_lr=t["min_lr"])
    bpc = bits_per_char(model, val_ids, recipe["block_size"], recipe["eval_windows"])
    return {"activation": name, "seed": seed, "bits_per_char": round(bpc, 4), "parameters": count_params(model),
            "cpu_ms_per_step": round(1000 * cpu / t["steps"], 1)}


def load_ffn_activations_result() -> dict[str, Any]:
    """The shipped result of ``benchmarks/ffn_activations.py``: one row per activation and seed. Chapter 5."""
    return load_asset(FFN_ACTIVATIONS_FILE)
