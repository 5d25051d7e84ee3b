"""One training loop for every chapter that trains: masked cross-entropy, Adam(W), clipping,
warm-up + cosine schedule, optional label smoothing, a progress bar and the loss history. Chapter 6.

The loop is model-agnostic: ``batch_fn(step)`` returns a tuple whose last element is the
target ids and whose other elements are the model's inputs, so ``logits = model(*batch[:-1])``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from tqdm.auto import tqdm

from .data import PAD_ID
from .schedules import warmup_cosine_lr
from .validate import check_positive_int, check_rank


def masked_cross_entropy(
    logits: Tensor, targets: Tensor, pad_id: int = PAD_ID, label_smoothing: float = 0.0
) -> Tensor:
    """Mean cross-entropy over the non-PAD target positions, optionally label-smoothed. Chapter 6.

    logits: (B, T, V), targets: (B, T). PAD positions count neither in the sum nor in the mean.
    """
    check_rank("logits", logits, 3, "(B, T, V)")
    check_rank("targets", targets, 2, "(B, T)")
    if logits.shape[:2] != targets.shape:
        raise ValueError(
            f"logits (B, T, V) and targets (B, T) must agree on B and T, got logits {tuple(logits.shape)} "
            f"and targets {tuple(targets.shape)}"
        )
    if not 0.0 <= label_smoothing < 1.0:
        raise ValueError(f"label_smoothing must be in [0, 1), got {label_smoothing}")
    V = logits.shape[-1]
    return F.cross_entropy(
        logits.reshape(-1, V),  # (B*T, V)
        targets.reshape(-1),  # (B*T,)
        ignore_index=pad_id,
        label_smoothing=label_smoothing,
    )


def warmup_cosine_scheduler(
    optimizer: torch.optim.Optimizer, warmup: int, total: int, min_ratio: float = 0.0
) -> torch.optim.lr_scheduler.LambdaLR:
    """A LambdaLR scheduler: step s of ``total`` uses the optimiser's lr x warm-up + cosine factor. Chapter 6.

    Right after construction the learning rate is the one of step 1; call ``scheduler.step()``
    after every ``optimizer.step()`` to move to the next step's rate (as :func:`train` does).
    """
    if not isinstance(optimizer, torch.optim.Optimizer):
        raise TypeError(f"optimizer must be a torch.optim.Optimizer, got {type(optimizer).__name__}")
    check_positive_int("total", total)
    if not 0.0 <= min_ratio <= 1.0:
        raise ValueError(f"min_ratio must be in [0, 1], got {min_ratio}")
    warmup_cosine_lr(1, 1.0, warmup, total, min_ratio)  # validates warmup against total
    # LambdaLR counts from 0; our schedule counts steps from 1
    return torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: warmup_cosine_lr(s + 1, 1.0, warmup, total, min_ratio)
    )


@dataclass
class TrainConfig:
    """Hyper-parameters of :func:`train`. Chapter 6."""

    steps: int = 1000  # optimiser steps
    lr: float = 3e-3  # peak learning rate
    warmup: int = 100  # linear warm-up steps (0 = none)
    min_lr: float = 0.0  # learning rate at the end of the cosine decay
    optimizer: str = "adam"  # "adam" or "adamw"
    betas: tuple[float, float] = (0.9, 0.98)  # Adam betas (the paper's)
    weight_decay: float = 0.0  # only used by AdamW
    clip: float | None = 1.0  # max gradient norm (None = no clipping)
    label_smoothing: float = 0.0  # 0.1 in the paper
    pad_id: int = PAD_ID  # target positions to ignore


@dataclass
class TrainHistory:
    """What :func:`train` records: loss and learning rate per step, and the time taken. Chapter 6."""

    losses: list[float] = field(default_factory=list)
    lrs: list[float] = field(default_factory=list)
    seconds: float = 0.0

    def smoothed(self, window: int = 50) -> list[float]:
        """Running mean of the loss over the last ``window`` steps (for plots)."""
        check_positive_int("window", window)
        out, total = [], 0.0
        for i, loss in enumerate(self.losses):
            total += loss
            if i >= window:
                total -= self.losses[i - window]
            out.append(total / min(i + 1, window))
        return out


def make_optimizer(model: nn.Module, config: TrainConfig) -> torch.optim.Optimizer:
    """Adam or AdamW over the model's parameters, as ``config`` says. Chapter 6."""
    params = [p for p in model.parameters() if p.requires_grad]
    if config.optimizer == "adam":
        return torch.optim.Adam(params, lr=config.lr, betas=config.betas)
    if config.optimizer == "adamw":
        return torch.optim.AdamW(params, lr=config.lr, betas=config.betas, weight_decay=config.weight_decay)
    raise ValueError(f"config.optimizer must be 'adam' or 'adamw', got {config.optimizer!r}")


def train(
    model: nn.Module,
    batch_fn: Callable[[int], Sequence[Tensor]],
    config: TrainConfig | None = None,
    loss_fn: Callable[..., Tensor] | None = None,
    progress: bool = True,
    desc: str = "training",
) -> TrainHistory:
    """Train ``model`` for ``config.steps`` steps on batches from ``batch_fn(step)``; return the history. Chapter 6.

    Each step: forward, masked cross-entropy, backward, clip the gradient norm, set the
    warm-up + cosine learning rate, optimiser step. ``loss_fn(logits, targets)`` replaces
    the default masked cross-entropy when given.
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    if not callable(batch_fn):
        raise TypeError(f"batch_fn must be a function step -> batch tuple, got {type(batch_fn).__name__}")
    config = config or TrainConfig()
    check_positive_int("config.steps", config.steps)
    if config.lr <= 0:
        raise ValueError(f"config.lr must be positive, got {config.lr}")
    if loss_fn is None:
        def loss_fn(logits: Tensor, targets: Tensor) -> Tensor:
            return masked_cross_entropy(logits, targets, config.pad_id, config.label_smoothing)

    optimizer = make_optimizer(model, config)
    history = TrainHistory()
    model.train()
    start = time.perf_counter()
    bar = tqdm(range(1, config.steps + 1), desc=desc, disable=not progress, mininterval=0.5)
    for step in bar:
        batch = batch_fn(step)
        if not isinstance(batch, (tuple, list)) or len(batch) < 2:
            raise TypeError("batch_fn must return a tuple (*model_inputs, targets) with at least two tensors")
        lr = warmup_cosine_lr(step, config.lr, config.warmup, config.steps, config.min_lr)
        for group in optimizer.param_groups:
            group["lr"] = lr
        logits = model(*batch[:-1])
        loss = loss_fn(logits, batch[-1])
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        if config.clip is not None:
            nn.utils.clip_grad_norm_(model.parameters(), config.clip)
        optimizer.step()
        history.losses.append(loss.item())
        history.lrs.append(lr)
        if step % 50 == 0 or step == config.steps:
            bar.set_postfix(loss=f"{history.losses[-1]:.3f}", refresh=False)
    history.seconds = time.perf_counter() - start
    model.eval()
    return history
