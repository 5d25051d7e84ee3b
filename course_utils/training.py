"""One training loop for every chapter that trains: masked cross-entropy, Adam(W), clipping,
warm-up + cosine schedule, optional label smoothing, a text progress line and the loss history. Chapter 6.

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

from .data import PAD_ID
from .progress import TextProgress
from .schedules import inverse_sqrt_lr, warmup_cosine_lr
from .validate import (
    check_bool,
    check_callable,
    check_choice,
    check_finite,
    check_float_tensor,
    check_int,
    check_module,
    check_number,
    check_positive_int,
    check_rank,
)


def masked_cross_entropy(
    logits: Tensor, targets: Tensor, pad_id: int = PAD_ID, label_smoothing: float = 0.0
) -> Tensor:
    """Mean cross-entropy over the non-PAD target positions, optionally label-smoothed. Chapter 6.

    logits: (B, T, V), targets: (B, T). PAD positions count neither in the sum nor in the mean.
    A batch whose targets are all PAD has no token to average over: that raises ValueError
    (rather than returning the NaN of 0/0).
    """
    check_float_tensor("logits", logits, 3, "(B, T, V)")
    check_rank("targets", targets, 2, "(B, T)")
    if targets.dtype.is_floating_point or targets.dtype.is_complex or targets.dtype == torch.bool:
        raise TypeError(f"targets must hold integer token ids, got dtype {targets.dtype}")
    pad_id = check_int("pad_id", pad_id)
    label_smoothing = check_number("label_smoothing", label_smoothing, 0.0, 1.0, high_open=True)
    check_finite("logits", logits, "a NaN or infinite logit makes the loss NaN: look upstream for an overflow, "
                 "a division by zero or a fully masked row")
    if logits.shape[:2] != targets.shape:
        raise ValueError(
            f"logits (B, T, V) and targets (B, T) must agree on B and T, got logits {tuple(logits.shape)} "
            f"and targets {tuple(targets.shape)}"
        )
    V = logits.shape[-1]
    real = targets != pad_id
    if not bool(real.any()):
        raise ValueError(
            f"targets must hold at least one non-PAD token (pad_id={pad_id}), got only PAD: "
            "the mean over zero tokens is undefined"
        )
    bad = real & ((targets < 0) | (targets >= V))
    if bool(bad.any()):
        wrong = targets[bad]
        raise ValueError(
            f"targets must hold token ids in [0, V={V}) (or pad_id={pad_id}), got values from "
            f"{int(wrong.min())} to {int(wrong.max())}"
        )
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
    schedule: str = "cosine"  # "cosine": warm-up + cosine; "inverse_sqrt": warm-up, then 1/sqrt(step) (paper, Ch 13)

    def __post_init__(self) -> None:
        self.steps = check_positive_int("steps", self.steps)
        check_number("lr", self.lr, low=0.0, low_open=True)
        self.warmup = check_int("warmup", self.warmup, low=0, high=self.steps - 1)
        check_number("min_lr", self.min_lr, low=0.0, high=self.lr)
        check_choice("optimizer", self.optimizer, ("adam", "adamw"))
        if not isinstance(self.betas, (tuple, list)) or len(self.betas) != 2:
            raise TypeError(f"betas must be a pair (beta1, beta2), got {type(self.betas).__name__} {self.betas!r}")
        for i, beta in enumerate(self.betas):
            check_number(f"betas[{i}]", beta, 0.0, 1.0, high_open=True)
        check_number("weight_decay", self.weight_decay, low=0.0)
        if self.clip is not None:
            check_number("clip", self.clip, low=0.0, low_open=True)
        check_number("label_smoothing", self.label_smoothing, 0.0, 1.0, high_open=True)
        check_int("pad_id", self.pad_id, low=0)
        check_choice("schedule", self.schedule, ("cosine", "inverse_sqrt"))
        if self.schedule == "inverse_sqrt" and self.warmup < 1:
            raise ValueError(f"warmup must be >= 1 with schedule='inverse_sqrt' (the peak is at step warmup), "
                             f"got {self.warmup}")


@dataclass
class TrainHistory:
    """What :func:`train` records: loss and learning rate per step, and the time taken. Chapter 6."""

    losses: list[float] = field(default_factory=list)
    lrs: list[float] = field(default_factory=list)
    seconds: float = 0.0  # training time, without the time spent in callbacks
    callback_seconds: float = 0.0  # time spent in callbacks (evaluations, measurements during training)
    cpu_seconds: float = 0.0  # CPU time of this process over the training, without the callbacks' CPU time

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


class Callback:
    """Something :func:`train` calls during training; override any of its methods. Chapter 6.

    ``on_train_begin(model)`` runs once before the first step: a callback that reads the model
    (its gradients, its weights) gets it here, so whoever builds the model need not pass it in.
    ``after_backward(step, logits, batch)`` runs after the backward pass and before clipping, so
    it can read the raw gradients and score the batch (``logits`` detached).
    ``after_step(step, model, history)`` runs after the optimiser step (for example an
    evaluation every few steps; it may switch the model to eval mode, training mode is restored
    after it); returning True stops training early. The time spent in either is never counted
    as training time (``history.callback_seconds`` holds it).
    """

    def on_train_begin(self, model: nn.Module) -> None:
        """Called once with the model about to be trained, before the first step."""

    def after_backward(self, step: int, logits: Tensor, batch: Sequence[Tensor]) -> None:
        """Called after ``loss.backward()``, before clipping."""

    def after_step(self, step: int, model: nn.Module, history: TrainHistory) -> bool | None:
        """Called after the optimiser step; return True to stop training."""
        return None


class StepsTo(Callback):
    """Records ``reached``: the first step at which ``score() >= target``, checked every ``every`` steps. Chapter 6.

    "Steps to 99 %" in this book always means this: the first *checked* step at which a named
    score reaches the target. The score is given by a subclass (:class:`HeldOutExactMatch` in
    ``course_utils.runs.reversal``, :class:`course_utils.ablations.TrainBatchAccuracy`), whose
    name says what it measures.
    """

    def __init__(self, target: float, every: int = 1):
        check_number("target", target, 0.0, 1.0)
        check_positive_int("every", every)
        self.target, self.every = target, every
        self.reached: int | None = None

    def score(self, step: int, model: nn.Module) -> float | None:  # pragma: no cover - overridden
        """The measured score at ``step`` (None: not measured at this step)."""
        raise NotImplementedError

    def record(self, step: int, value: float | None) -> None:
        """Keep ``step`` as ``reached`` if it is the first one whose score reaches the target."""
        if self.reached is None and value is not None and value >= self.target:
            self.reached = step

    def after_step(self, step: int, model: nn.Module, history: TrainHistory) -> bool | None:
        if self.reached is None and step % self.every == 0:
            self.record(step, self.score(step, model))
        return None


def make_optimizer(model: nn.Module, config: TrainConfig) -> torch.optim.Optimizer:
    """Adam or AdamW over the model's parameters, as ``config`` says. Chapter 6."""
    check_module("model", model)
    if not isinstance(config, TrainConfig):
        raise TypeError(f"config must be a TrainConfig, got {type(config).__name__}")
    params = [p for p in model.parameters() if p.requires_grad]
    # foreach=True: each update operation runs once over all parameters instead of once per parameter
    # (PyTorch's default on a GPU, not on a CPU); the same numbers, a few per cent less time per step
    if config.optimizer == "adam":
        return torch.optim.Adam(params, lr=config.lr, betas=config.betas, foreach=True)
    if config.optimizer == "adamw":
        return torch.optim.AdamW(params, lr=config.lr, betas=config.betas, weight_decay=config.weight_decay,
                                 foreach=True)
    raise ValueError(f"config.optimizer must be 'adam' or 'adamw', got {config.optimizer!r}")


def train(
    model: nn.Module,
    batch_fn: Callable[[int], Sequence[Tensor]],
    config: TrainConfig | None = None,
    loss_fn: Callable[..., Tensor] | None = None,
    progress: bool = True,
    desc: str = "training",
    callbacks: Sequence[Callback] = (),
) -> TrainHistory:
    """Train ``model`` for ``config.steps`` steps on batches from ``batch_fn(step)``; return the history. Chapter 6.

    Each step: forward, masked cross-entropy, backward, clip the gradient norm, set the
    warm-up + cosine learning rate, optimiser step. ``loss_fn(logits, targets)`` replaces
    the default masked cross-entropy when given. ``callbacks`` (each a :class:`Callback`) run
    after the backward pass and after every optimiser step; their time is never counted in
    ``history.seconds`` (wall clock) nor ``history.cpu_seconds`` (CPU time of this process).
    """
    check_module("model", model)
    check_callable("batch_fn", batch_fn, "a function step -> batch tuple")
    if isinstance(callbacks, Callback) or not isinstance(callbacks, (list, tuple)) or not all(
            isinstance(c, Callback) for c in callbacks):
        raise TypeError(f"callbacks must be a list of course_utils.training.Callback, got {callbacks!r:.80}")
    config = TrainConfig() if config is None else config
    if not isinstance(config, TrainConfig):
        raise TypeError(f"config must be a TrainConfig, got {type(config).__name__}")
    config.__post_init__()  # fields may have been changed after construction
    if loss_fn is not None:
        check_callable("loss_fn", loss_fn, "a function (logits, targets) -> loss")
    check_bool("progress", progress)
    if not any(p.requires_grad for p in model.parameters()):
        raise ValueError("model must have at least one trainable parameter, got none")
    if loss_fn is None:
        def loss_fn(logits: Tensor, targets: Tensor) -> Tensor:
            return masked_cross_entropy(logits, targets, config.pad_id, config.label_smoothing)

    optimizer = make_optimizer(model, config)
    clipped = [p for group in optimizer.param_groups for p in group["params"]]  # listed once, not every step
    history = TrainHistory()
    model.train()
    start, cpu_start, cpu_in_callbacks = time.perf_counter(), time.process_time(), 0.0
    for callback in callbacks:
        callback.on_train_begin(model)
    bar = TextProgress(config.steps, desc=desc, enabled=progress)
    for step in range(1, config.steps + 1):
        batch = batch_fn(step)
        if not isinstance(batch, (tuple, list)) or len(batch) < 2:
            raise TypeError(
                "batch_fn must return a tuple (*model_inputs, targets) with at least two tensors, "
                f"got {type(batch).__name__}" + (f" of length {len(batch)}" if isinstance(batch, (tuple, list)) else "")
            )
        if config.schedule == "inverse_sqrt":
            lr = inverse_sqrt_lr(step, config.lr, config.warmup)
        else:
            lr = warmup_cosine_lr(step, config.lr, config.warmup, config.steps, config.min_lr)
        for group in optimizer.param_groups:
            group["lr"] = lr
        logits = model(*batch[:-1])
        loss = loss_fn(logits, batch[-1])
        if not isinstance(loss, Tensor) or loss.dim() != 0:
            raise TypeError(f"loss_fn must return a 0-d tensor, got {type(loss).__name__}"
                            + (f" of shape {tuple(loss.shape)}" if isinstance(loss, Tensor) else ""))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        if callbacks:
            wall, cpu = time.perf_counter(), time.process_time()
            for callback in callbacks:
                callback.after_backward(step, logits.detach(), batch)
            history.callback_seconds += time.perf_counter() - wall
            cpu_in_callbacks += time.process_time() - cpu
        if config.clip is not None:
            nn.utils.clip_grad_norm_(clipped, config.clip)
        optimizer.step()
        history.losses.append(loss.item())
        history.lrs.append(lr)
        bar.update(step, loss=f"{history.losses[-1]:.3f}")
        if callbacks:
            wall, cpu = time.perf_counter(), time.process_time()
            stop = [callback.after_step(step, model, history) for callback in callbacks]
            model.train()
            history.callback_seconds += time.perf_counter() - wall
            cpu_in_callbacks += time.process_time() - cpu
            if any(stop):
                break
    bar.close()
    history.seconds = time.perf_counter() - start - history.callback_seconds
    history.cpu_seconds = time.process_time() - cpu_start - cpu_in_callbacks
    model.eval()
    return history
