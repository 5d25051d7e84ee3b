"""Scaling laws in miniature: the character LM of Chapter 8 at several sizes and training
lengths, the power-law fit of validation loss against size or compute, and the
compute-optimal arithmetic of Kaplan et al. (2020) and Hoffmann et al. (2022). Chapter 12.

``benchmarks/scaling.py`` trains every run of :data:`SCALING_RECIPE` and writes
a shipped result (``course_utils.runs.scaling``) with the recipe stored under the key ``recipe``; the
chapter reads the asset (:func:`load_scaling`) and fits it live (:func:`fit_power_law`).
"""

from __future__ import annotations

import copy
import math
import time
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor, nn

from .charlm import CharVocab, lm_batch, load_corpus, model_bits_per_char, train_val_ids
from .gpt import DecoderOnly, DecoderOnlyConfig
from .training import TrainConfig, train
from .validate import check_finite, check_int, check_module, check_number, check_positive_int

# Every run of the benchmark. Sizes: one training length, six widths/depths (d_ff = 4 d_model,
# d_k = 16 or less). Lengths: the "base" size trained for several numbers of steps. Budgeted
# to about five minutes of one CPU thread in all. Parameters are counted without the
# embedding and output tables (as Kaplan et al. 2020 count N).
SCALING_RECIPE: dict[str, Any] = {
    "sizes": [
        {"d_model": 16, "n_layers": 1, "n_heads": 2},
        {"d_model": 24, "n_layers": 2, "n_heads": 2},
        {"d_model": 32, "n_layers": 2, "n_heads": 2},
        {"d_model": 48, "n_layers": 2, "n_heads": 4},
        {"d_model": 64, "n_layers": 3, "n_heads": 4},
        {"d_model": 96, "n_layers": 3, "n_heads": 6},
    ],
    "size_steps": 1000,
    "base": {"d_model": 32, "n_layers": 2, "n_heads": 2},
    "length_steps": [125, 250, 500, 1000, 2000],
    "model": {"ff_mult": 4, "dropout": 0.0, "norm_first": True, "positional": "sinusoidal",
              "tie_embeddings": True},
    "train": {"lr": 3e-3, "warmup": 50, "min_lr": 3e-4, "optimizer": "adamw", "clip": 1.0,
              "weight_decay": 0.01},
    "batch_size": 32,
    "block_size": 64,
    "eval_windows": 256,  # validation bits/char on the first 256 consecutive windows of 64 characters
    "seed": 0,
}


def build_sized_lm(vocab_size: int, size: dict[str, int], recipe: dict[str, Any] | None = None) -> DecoderOnly:
    """A fresh character LM of one size ({"d_model", "n_layers", "n_heads"}) of the recipe. Chapter 12."""
    check_positive_int("vocab_size", vocab_size)
    if not isinstance(size, dict) or {"d_model", "n_layers", "n_heads"} - set(size):
        raise ValueError(f"size must be a dict with the keys ['d_model', 'n_heads', 'n_layers'], got {size!r:.60}")
    recipe = recipe or SCALING_RECIPE
    m = recipe["model"]
    config = DecoderOnlyConfig(
        vocab_size=vocab_size, d_model=size["d_model"], n_heads=size["n_heads"],
        d_ff=m["ff_mult"] * size["d_model"], n_layers=size["n_layers"], dropout=m["dropout"],
        max_len=recipe["block_size"], positional=m["positional"], norm_first=m["norm_first"],
        tie_embeddings=m["tie_embeddings"])
    return DecoderOnly(config)


def non_embedding_params(model: nn.Module) -> int:
    """Parameters outside the token embedding, position table and output projection (Kaplan's N). Chapter 12."""
    check_module("model", model)
    skip = ("embedding.", "positional_scheme.", "output_projection.")  # DecoderOnly's parameter names
    return sum(p.numel() for name, p in model.named_parameters() if not name.startswith(skip))


def training_flops(params: int, tokens: int) -> float:
    """Training compute C = 6 N D floating-point operations (Kaplan et al. 2020, section 2.1). Chapter 12."""
    check_int("params", params, low=1)
    check_int("tokens", tokens, low=1)
    return 6.0 * params * tokens


def train_sized_lm(size: dict[str, int], steps: int, recipe: dict[str, Any] | None = None,
                   progress: bool = False) -> dict[str, Any]:
    """Train one run of the recipe; return params, tokens, compute, val bits/char and CPU seconds. Chapter 12."""
    recipe = copy.deepcopy(recipe or SCALING_RECIPE)
    check_positive_int("steps", steps)
    text = load_corpus()
    vocab = CharVocab(text)
    train_ids, val_ids = train_val_ids(text, vocab)
    torch.manual_seed(recipe["seed"])
    model = build_sized_lm(len(vocab), size, recipe)
    generator = torch.Generator().manual_seed(recipe["seed"])
    B, T = recipe["batch_size"], recipe["block_size"]
    config = TrainConfig(steps=steps, **{**recipe["train"], "warmup": min(recipe["train"]["warmup"], steps // 4)})

    def loss_fn(logits: Tensor, targets: Tensor) -> Tensor:
        return nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))

    cpu = time.process_time()
    train(model, lambda step: lm_batch(train_ids, B, T, generator), config, loss_fn=loss_fn, progress=progress)
    cpu = time.process_time() - cpu
    bits = model_bits_per_char(model, val_ids, T, max_windows=recipe["eval_windows"])
    N, D = non_embedding_params(model), steps * B * T
    return {**size, "params": N, "all_params": sum(p.numel() for p in model.parameters()), "steps": steps,
            "tokens": D, "compute": training_flops(N, D), "val_bits_per_char": round(bits, 4),
            "cpu_seconds": round(cpu, 1)}


@dataclass(frozen=True)
class PowerLawFit:
    """y = coefficient * x ** (-exponent), fitted by least squares on log y against log x. Chapter 12."""

    exponent: float
    exponent_se: float  # standard error of the exponent (from the residuals of the log-log line)
    coefficient: float
    n_points: int

    def predict(self, x: float | Tensor) -> float | Tensor:
        """The fitted y at x."""
        return self.coefficient * x ** (-self.exponent)


def fit_power_law(x: Any, y: Any) -> PowerLawFit:
    """Least-squares line through (log x, log y); the exponent is minus its slope, with its standard error. Chapter 12.

    With n points the standard error of the slope is sqrt(sum r^2 / (n - 2) / sum (u - mean u)^2),
    r the residuals, u = log x (the textbook formula for simple linear regression).
    """
    xs = torch.as_tensor(x, dtype=torch.float64).flatten()
    ys = torch.as_tensor(y, dtype=torch.float64).flatten()
    if xs.shape != ys.shape:
        raise ValueError(f"x and y must have the same length, got {xs.numel()} and {ys.numel()}")
    check_finite("x", xs, "a power law is fitted to measured, finite values")
    check_finite("y", ys, "a power law is fitted to measured, finite values")
    if xs.numel() < 3:
        raise ValueError(f"x must hold at least 3 points to fit a line with an uncertainty, got {xs.numel()}")
    if bool((xs <= 0).any()) or bool((ys <= 0).any()):
        raise ValueError("x and y must be positive (a power law is a line on log-log axes), got a value <= 0")
    u, v = xs.log(), ys.log()
    du = u - u.mean()
    if float((du**2).sum()) == 0.0:
        raise ValueError("x must hold at least two different values, got all equal")
    slope = float((du * (v - v.mean())).sum() / (du**2).sum())
    intercept = float(v.mean() - slope * u.mean())
    residuals = v - (intercept + slope * u)
    n = xs.numel()
    se = math.sqrt(float((residuals**2).sum()) / (n - 2) / float((du**2).sum()))
    return PowerLawFit(exponent=-slope, exponent_se=se, coefficient=math.exp(intercept), n_points=n)


def compute_optimal(compute: float, tokens_per_param: float = 20.0) -> tuple[float, float]:
    """(N, D) that spend ``compute`` = 6 N D with D = tokens_per_param * N (Hoffmann et al. 2022). Chapter 12."""
    check_number("compute", compute, low=0.0, low_open=True)
    check_number("tokens_per_param", tokens_per_param, low=0.0, low_open=True)
    n = math.sqrt(compute / (6.0 * tokens_per_param))
    return n, tokens_per_param * n
