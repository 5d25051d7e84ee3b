"""Chapter 8's character language model on tiny Shakespeare: recipe, seeded run with a
validation callback, and the shipped checkpoint with its training log. Chapter 8.

``python scripts/train_checkpoint.py --run charlm`` re-creates ``charlm_shakespeare.pt``.
"""

from __future__ import annotations

import math
import sys
import time
from typing import Any

import torch
from torch import Tensor, nn

from ..charlm import CharVocab, charlm_split, lm_batch, lm_loss, model_bits_per_char
from ..gpt import DecoderOnly, DecoderOnlyConfig
from ..schedules import warmup_cosine_lr
from ..training import Callback, TrainConfig, TrainHistory, make_optimizer
from ..utils import count_params
from ..validate import check_bool, check_choice, check_int, check_module, check_number, check_positive_int, check_rank
from .core import Recipe, Run, asset_path, check_recipe, load_as, read_checkpoint, run, seeded

CHARLM_CHECKPOINT = "charlm_shakespeare.pt"

# About nine minutes of training on 2 threads of a quiet 2-core CPU (3,200 steps of 16 x 128 characters, 6.6 M
# characters, about 6 passes over the training text): the width, depth, heads and context of nanoGPT's
# CPU quick-start model (0.80 M parameters), with rotary positions (Chapter 9), the fused LayerNorm kernel
# (Chapter 6) and warm-up + cosine decay (Chapter 3). The first shipped model (width 64, 3 blocks,
# sinusoidal, 800 steps, 154 k parameters) reached only 2.94 bits per character.
CHARLM_RECIPE: Recipe = {
    "model": {"d_model": 128, "n_heads": 4, "d_ff": 512, "n_layers": 4, "dropout": 0.0, "norm_first": True,
              "positional": "rope", "max_len": 128, "tie_embeddings": True, "fused_layer_norm": True},
    "train": {"steps": 3200, "lr": 4e-3, "warmup": 100, "min_lr": 1e-4, "optimizer": "adamw", "clip": 1.0,
              "weight_decay": 0.01},
    "batch_size": 16,
    "block_size": 128,  # characters per training sequence (= max_len, the context window)
    "eval_every": 100,  # validation bits/char every 100 steps, on 128 windows
    "seed": 0,
}
_KEYS = ("model", "train", "batch_size", "block_size", "eval_every", "seed")


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
        if val_ids.numel() and int(val_ids.min()) < 0:
            raise ValueError(f"val_ids must hold token ids >= 0, got min {int(val_ids.min())}")
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

    results = {"val_steps", "val_bits_per_char" (on 128 windows), "train_loss_nats", "train_seconds",
    "train_cpu_seconds", "threads", "val_nats_full" (the whole validation split)}.
    """
    recipe = check_recipe(CHARLM_RECIPE if recipe is None else recipe, _KEYS)
    check_bool("progress", progress)
    if steps is not None:
        check_positive_int("steps", steps)  # before the corpus is read
    vocab, train_ids, val_ids = charlm_split()
    last = recipe["train"]["steps"] if steps is None else steps
    val = ValidationBitsPerChar(val_ids, recipe["block_size"], recipe["eval_every"], last)
    B, T = recipe["batch_size"], recipe["block_size"]
    result = run(recipe, lambda r: build_charlm(len(vocab), r),
                 lambda r, generator: lambda step: lm_batch(train_ids, B, T, generator),
                 progress, steps, [val], loss_fn=lm_loss)
    results = {"val_steps": val.steps, "val_bits_per_char": [round(x, 4) for x in val.bits],
               "train_loss_nats": [round(x, 4) for x in result.history.losses],
               "train_seconds": round(result.history.seconds, 1),
               "train_cpu_seconds": round(result.history.cpu_seconds, 1),
               "threads": torch.get_num_threads(),
               # the whole validation split, every character predicted once (issue 35's measure)
               "val_nats_full": round(validation_nats(result.model, val_ids, T), 4)}
    return result, results


def load_charlm(path: Any = None) -> tuple[DecoderOnly, dict[str, Any]]:
    """(the shipped character LM in eval mode, its training log with its recipe). Chapter 8."""
    path = asset_path(CHARLM_CHECKPOINT) if path is None else path
    data = read_checkpoint(path)
    if data["kind"] != "decoder_only":
        raise ValueError(f"path must hold a DecoderOnly character LM, got a {data['kind']!r} checkpoint")
    return load_as(path, DecoderOnly), {**data["results"], "recipe": data["recipe"]}


# ---------------------------------------------------------------- the time-budgeted benchmark (issue 35)
# The recipe of ``benchmarks/charlm.py``: trained for a budget of seconds, not steps (the number of
# steps is planned from the measured time per step so that the cosine decay ends with the budget).
# Chapter 12's largest scaling model (width 96, 3 pre-LN blocks, context 64, AdamW 3e-3 with warm-up and
# cosine decay to a tenth) with rotary positions (Chapter 9), the fused LayerNorm kernel (Chapter 6),
# batches of 16 windows instead of 32, a peak learning rate of 5e-3 decaying to 1e-4, and Chapter 11's
# SwiGLU FFN at the ReLU FFN's weight count (hidden width 256 for d_ff 384). Each change
# was kept only if it lowered the validation loss at 150 CPU seconds on one thread (seed 0); the table
# is in ``benchmarks/charlm.py``'s docstring.
BENCHMARK_RECIPE: Recipe = {
    "model": {"d_model": 96, "n_heads": 6, "d_ff": 384, "n_layers": 3, "dropout": 0.0, "norm_first": True,
              "positional": "rope", "max_len": 64, "tie_embeddings": True, "fused_layer_norm": True,
              "ffn": "swiglu"},
    "train": {"lr": 5e-3, "warmup": 50, "min_lr": 1e-4, "optimizer": "adamw", "clip": 1.0, "weight_decay": 0.01},
    "batch_size": 16,
    "block_size": 64,
    "seed": 0,
}
_BENCH_KEYS = ("model", "train", "batch_size", "block_size", "seed")


def validation_nats(model: nn.Module, val_ids: Tensor, block_size: int) -> float:
    """Mean next-character loss in nats over the whole validation split, each character predicted once. Chapter 8.

    Consecutive windows of ``block_size`` characters (the model's context), the last one shorter.
    """
    return model_bits_per_char(model, val_ids, block_size) * math.log(2)


def matmul_flops_per_token(model: nn.Module, block_size: int) -> float:
    """Training FLOPs per token of a decoder-only model: 6 x (weights of its matrix products) + 12 L d T. Chapter 8.

    The first term counts every linear layer, the tied output projection included, forward
    (2 per weight) and backward (4 per weight); the second the attention scores and weighted sums
    of L layers of width d over a context of T = ``block_size`` (Kaplan et al. 2020, table 1).
    """
    check_module("model", model)
    check_positive_int("block_size", block_size)
    weights = sum(m.weight.numel() for m in model.modules() if isinstance(m, nn.Linear))
    config = getattr(model, "config", None)
    if config is None or not all(hasattr(config, k) for k in ("n_layers", "d_model")):
        raise TypeError(f"model must have a config with n_layers and d_model (a DecoderOnly), got "
                        f"{type(model).__name__}")
    return 6.0 * weights + 12.0 * config.n_layers * config.d_model * block_size


def matmul_peak_gflops(size: int = 2048, repeats: int = 5) -> float:
    """This CPU's fp32 matrix-product speed in GFLOP/s on the current torch threads, best of ``repeats``. Chapter 8."""
    n, repeats = check_positive_int("size", size), check_positive_int("repeats", repeats)
    generator = torch.Generator().manual_seed(0)
    a, b = torch.randn(n, n, generator=generator), torch.randn(n, n, generator=generator)
    a @ b  # warm-up: allocations and thread start
    best = math.inf
    for _ in range(repeats):
        start = time.perf_counter()
        a @ b
        best = min(best, time.perf_counter() - start)
    return 2.0 * n**3 / best / 1e9


def train_budgeted(recipe: Recipe | None = None, seconds: float | None = None, steps: int | None = None,
                   seed: int | None = None, progress: bool = True, probe_steps: int = 10,
                   data: tuple[CharVocab, Tensor, Tensor] | None = None, clock: str = "wall"
                   ) -> tuple[nn.Module, dict[str, Any]]:
    """Train the character LM for ``seconds`` of wall time, or for exactly ``steps``; (model, record). Chapter 8.

    With a time budget the number of steps is planned: after ``probe_steps`` steps the time per
    step is measured and the total set so that the warm-up + cosine schedule ends with the
    budget; the plan is revised every tenth of the budget (the machine may speed up or slow
    down). Training stops at the planned step or when the budget is spent, whichever comes first.
    ``clock="cpu"`` counts this process's CPU seconds instead of wall seconds: on a machine shared
    with other jobs that is close to the wall time the run would take alone.
    The record holds val_nats (whole validation split), val_bits_per_char, train_seconds,
    train_cpu_seconds, steps, params, tokens_seen and gflops_per_s.
    """
    recipe = check_recipe(BENCHMARK_RECIPE if recipe is None else recipe, _BENCH_KEYS)
    if (seconds is None) == (steps is None):
        raise ValueError(f"give exactly one of seconds and steps, got seconds={seconds!r} and steps={steps!r}")
    if seconds is not None:
        seconds = check_number("seconds", seconds, low=0.0, low_open=True)
    if steps is not None:
        steps = check_positive_int("steps", steps)
    seed = recipe["seed"] if seed is None else check_int("seed", seed, low=0)
    probe_steps = check_positive_int("probe_steps", probe_steps)
    check_bool("progress", progress)
    clock = check_choice("clock", clock, ("wall", "cpu"))
    now = time.perf_counter if clock == "wall" else time.process_time
    if data is not None and not (isinstance(data, tuple) and len(data) == 3 and isinstance(data[0], CharVocab)):
        raise TypeError(f"data must be (vocab, train_ids, val_ids) as charlm_split() returns, got "
                        f"{type(data).__name__}")
    vocab, train_ids, val_ids = charlm_split() if data is None else data
    generator = seeded(seed)
    model = DecoderOnly(DecoderOnlyConfig(vocab_size=len(vocab), **recipe["model"]))
    t = recipe["train"]
    config = TrainConfig(steps=max(2, t["warmup"] + 1), **{k: v for k, v in t.items() if k != "steps"})
    optimizer = make_optimizer(model, config)
    params = [p for group in optimizer.param_groups for p in group["params"]]
    B, T = recipe["batch_size"], recipe["block_size"]
    total = steps  # None until planned
    model.train()
    start, wall_start, cpu_start = now(), time.perf_counter(), time.process_time()
    mark_step, mark_time, next_replan = 0, 0.0, None
    step, elapsed, loss_value, last_print = 0, 0.0, float("nan"), 0.0
    while True:
        step += 1
        x, y = lm_batch(train_ids, B, T, generator)
        planned = total if total is not None else max(step + 1, t["warmup"] + 1)
        lr = warmup_cosine_lr(step, t["lr"], min(t["warmup"], planned - 1), planned, t["min_lr"])
        for group in optimizer.param_groups:
            group["lr"] = lr
        loss = lm_loss(model(x), y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        if t.get("clip") is not None:
            nn.utils.clip_grad_norm_(params, t["clip"])
        optimizer.step()
        loss_value = loss.item()
        elapsed = now() - start
        if seconds is not None:
            if step == 2:  # the first step pays one-time costs; time from here
                mark_step, mark_time = step, elapsed
            if (step == probe_steps + 2 or (next_replan is not None and elapsed >= next_replan)) and step > mark_step:
                per_step = (elapsed - mark_time) / (step - mark_step)
                total = max(step + 1, step + int((seconds - elapsed) / per_step))
                next_replan = elapsed + seconds / 10
                mark_step, mark_time = step, elapsed
        if progress and (elapsed - last_print >= 1.0 or step == total):
            last_print = elapsed
            print(f"\rstep {step}/{total if total is not None else '?'}  loss {loss_value:.3f}  "
                  f"{elapsed:.0f}/{seconds if seconds is not None else '-'} s", end="", file=sys.stderr, flush=True)
        if (total is not None and step >= total) or (seconds is not None and elapsed >= seconds):
            break
    cpu, wall = time.process_time() - cpu_start, time.perf_counter() - wall_start
    if progress:
        print(file=sys.stderr)
    model.eval()
    nats = validation_nats(model, val_ids, T)
    tokens = step * B * T
    record = {"val_nats": round(nats, 4), "val_bits_per_char": round(nats / math.log(2), 4),
              "train_seconds": round(wall, 1), "train_cpu_seconds": round(cpu, 1), "steps": step,
              "planned_steps": total, "params": count_params(model),
              "tokens_seen": tokens, "last_loss": round(loss_value, 4),
              "gflops_per_s": round(matmul_flops_per_token(model, T) * tokens / wall / 1e9, 2),
              "gflops_per_cpu_s": round(matmul_flops_per_token(model, T) * tokens / cpu / 1e9, 3), "clock": clock}
    return model, record
