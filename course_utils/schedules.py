"""Learning-rate schedules: the paper's warm-up schedule and warm-up + cosine. Chapter 3 (used in Chapter 6)."""

from __future__ import annotations

import math

from .validate import check_int, check_number, check_positive_int


def vaswani_lr(step: int, d_model: int, warmup: int = 4000) -> float:
    """lr = d_model^-0.5 * min(step^-0.5, step * warmup^-1.5), step counted from 1. Chapter 3."""
    check_positive_int("step", step)
    check_positive_int("d_model", d_model)
    check_positive_int("warmup", warmup)
    return d_model**-0.5 * min(step**-0.5, step * warmup**-1.5)


def inverse_sqrt_lr(step: int, peak_lr: float, warmup: int) -> float:
    """The paper's schedule with its peak named: peak_lr * min(step / warmup, sqrt(warmup / step)). Chapter 13.

    Linear warm-up to ``peak_lr`` at step ``warmup``, then decay as 1/sqrt(step); with
    peak_lr = d_model^-0.5 * warmup^-0.5 it equals :func:`vaswani_lr` (section 5.3).
    """
    check_positive_int("step", step)
    peak_lr = check_number("peak_lr", peak_lr, low=0.0, low_open=True)
    check_positive_int("warmup", warmup)
    return peak_lr * min(step / warmup, math.sqrt(warmup / step))


def warmup_cosine_lr(step: int, peak_lr: float, warmup: int, total: int, min_lr: float = 0.0) -> float:
    """Linear warm-up to peak_lr over ``warmup`` steps, then cosine decay to min_lr at ``total``. Chapter 3."""
    check_positive_int("step", step)
    check_positive_int("total", total)
    peak_lr = check_number("peak_lr", peak_lr, low=0.0, low_open=True)
    min_lr = check_number("min_lr", min_lr, low=0.0, high=peak_lr)
    warmup = check_int("warmup", warmup)  # NumPy ints count
    if not 0 <= warmup < total:
        raise ValueError(f"warmup must be an int in [0, total={total}), got {warmup!r}")
    if step <= warmup:
        return peak_lr * step / warmup
    progress = min(1.0, (step - warmup) / max(1, total - warmup))
    return min_lr + 0.5 * (peak_lr - min_lr) * (1.0 + math.cos(math.pi * progress))
