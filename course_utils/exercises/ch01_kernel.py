"""Checker for Chapter 1's exercise on attention as kernel regression (Exercise 1.6).

The learner writes Gaussian-kernel (Nadaraya-Watson) regression with one matrix product q @ k^T
and the keys' squared norms; the checker compares with the distance form in
:func:`course_utils.attention.nadaraya_watson` and names the usual slips.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor

from ..attention import nadaraya_watson
from .core import CheckFailed, call_student_without, checker, expect_close

__all__ = ["check_kernel_attention"]


def _softmax_form(q: Tensor, k: Tensor, v: Tensor, sigma: float, norm: float = 0.5, power: int = 2,
                  sign: float = 1.0, dim: int = -1) -> Tensor:
    """softmax(sign * (q k^T - norm |k|^2) / sigma^power) v: the right answer and its slips."""
    scores = q @ k.transpose(-2, -1) - norm * k.pow(2).sum(-1).unsqueeze(-2)  # (..., T_q, T_k)
    return torch.softmax(sign * scores / sigma**power, dim=dim) @ v


def _cases() -> list[tuple[Tensor, Tensor, Tensor, float]]:
    g = torch.Generator().manual_seed(16)
    cases = []
    for shape_q, shape_k, d_v, sigma in [((5, 3), (7, 3), 2, 1.3), ((2, 4, 6), (2, 9, 6), 3, 2.0),
                                         ((3, 2), (4, 2), 1, 0.7), ((4, 5), (1, 5), 2, 1.1)]:
        q = torch.randn(*shape_q, generator=g, dtype=torch.float64)
        k = torch.randn(*shape_k, generator=g, dtype=torch.float64)
        k = k * (0.5 + 1.5 * torch.rand(*shape_k[:-1], 1, generator=g, dtype=torch.float64))  # keys of many norms
        v = torch.randn(*shape_k[:-1], d_v, generator=g, dtype=torch.float64)
        cases.append((q, k, v, sigma))
    return cases


@checker("1.6", "Gaussian-kernel regression as attention")
def check_kernel_attention(fn: Callable[[Tensor, Tensor, Tensor, float], Any]) -> str:
    """Check ``fn(q, k, v, sigma)``: Nadaraya-Watson with a Gaussian kernel, written as softmax over q . k."""
    for q, k, v, sigma in _cases():
        got = call_student_without(
            {"cdist"}, "Write it with one product q @ k^T and the keys' squared norms, not pairwise distances.",
            fn, q.clone(), k.clone(), v.clone(), sigma, what="my_kernel_attention")
        if isinstance(got, tuple) and len(got) == 2:
            got = got[0]  # (output, weights) is fine too
        want = nadaraya_watson(q, k, v, sigma)[0]
        what = f"my_kernel_attention on q {tuple(q.shape)}, k {tuple(k.shape)}, sigma={sigma}"
        mistakes = {
            "The keys have different norms, so -|k_j|^2 / (2 sigma^2) is part of each score; only the |q|^2 "
            "term is the same for every key and drops out of the softmax.": _softmax_form(q, k, v, sigma, norm=0.0),
            "Expanding |q - k|^2 gives -2 q.k + |k|^2, and the kernel divides by 2 sigma^2: the key's term is "
            "|k|^2 / 2 next to q.k, not |k|^2.": _softmax_form(q, k, v, sigma, norm=1.0),
            "The Gaussian kernel divides by sigma squared (the variance), not by sigma.":
                _softmax_form(q, k, v, sigma, power=1),
            "The sign is flipped: a close key (small distance, large q.k - |k|^2/2) must get the largest weight.":
                _softmax_form(q, k, v, sigma, sign=-1.0),
            "The softmax runs over the keys (the last axis of the scores), one distribution per query.":
                _softmax_form(q, k, v, sigma, dim=-2) if q.shape[-2] > 1 else _softmax_form(q, k, v, sigma),
            "sigma is an argument: a hard-coded sigma = 1 gives other weights.": _softmax_form(q, k, v, 1.0),
            "This is scaled dot-product attention (divided by sqrt(d)); kernel regression divides by sigma^2 "
            "and keeps the keys' norms.": torch.softmax(q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5, -1) @ v,
        }
        mistakes = {hint: wrong for hint, wrong in mistakes.items() if not torch.allclose(wrong, want)}
        expect_close(got, want, what, mistakes, atol=1e-6)
    if not isinstance(got, Tensor):
        raise CheckFailed("my_kernel_attention should return a tensor (the outputs)")
    return ("Gaussian-kernel regression and softmax over q.k - |k|^2/2, divided by sigma^2, agree: "
            "the |q|^2 term cancels in the softmax.")
