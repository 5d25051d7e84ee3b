"""Checker for Chapter 1's exercise on attention as kernel regression (Exercise 1.6).

The learner writes Gaussian-kernel (Nadaraya-Watson) regression with one bandwidth per feature,
exp(-sum_d (q_d - k_d)^2 / (2 sigma_d^2)), as a softmax over one matrix product and one term per
key: the chapter derives the single-bandwidth case, the learner extends the expansion. The checker
compares with the distance form, refuses pairwise differences (a tensor of shape (..., T_q, T_k, d)),
``torch.cdist`` and the book's :func:`course_utils.attention.nadaraya_watson`, and names the usual slips.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor
from torch.overrides import TorchFunctionMode

from .core import CheckFailed, call_student_without, checker, expect_close, names_used

__all__ = ["check_kernel_attention"]


def _distance_form(q: Tensor, k: Tensor, v: Tensor, sigma: Tensor) -> Tensor:
    """The estimator as usually written, with explicit per-feature squared distances (the reference)."""
    diff = (q.unsqueeze(-2) - k.unsqueeze(-3)) / sigma  # (..., T_q, T_k, d), feature d divided by sigma_d
    return torch.softmax(-diff.pow(2).sum(-1) / 2, dim=-1) @ v


def _softmax_form(q: Tensor, k: Tensor, v: Tensor, w_q: Tensor, w_k: Tensor, norm: float = 0.5, outer: float = 1.0,
                  sign: float = 1.0, dim: int = -1) -> Tensor:
    """softmax(sign * ((q w_q) . k - norm sum_d w_k k_d^2) / outer) v: the right answer (w_q = w_k = 1/sigma^2) and
    its slips."""
    scores = (q * w_q) @ k.transpose(-2, -1) - norm * (k.pow(2) * w_k).sum(-1).unsqueeze(-2)  # (..., T_q, T_k)
    return torch.softmax(sign * scores / outer, dim=dim) @ v


class _LargestTensor(TorchFunctionMode):
    """Records the largest number of elements of any tensor a torch function returns while active."""

    def __init__(self) -> None:
        super().__init__()
        self.largest = 0

    def __torch_function__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
        out = func(*args, **(kwargs or {}))
        for t in out if isinstance(out, (tuple, list)) else (out,):
            if isinstance(t, Tensor):
                self.largest = max(self.largest, t.numel())
        return out


def _cases() -> list[tuple[Tensor, Tensor, Tensor, Tensor]]:
    g = torch.Generator().manual_seed(16)
    cases = []
    for shape_q, shape_k, d_v in [((5, 3), (7, 3), 2), ((2, 4, 6), (2, 9, 6), 3), ((3, 2), (4, 2), 1),
                                  ((4, 5), (1, 5), 2), ((32, 16), (32, 16), 2)]:
        q = torch.randn(*shape_q, generator=g, dtype=torch.float64)
        k = torch.randn(*shape_k, generator=g, dtype=torch.float64)
        k = k * (0.5 + 1.5 * torch.rand(*shape_k[:-1], 1, generator=g, dtype=torch.float64))  # keys of many norms
        v = torch.randn(*shape_k[:-1], d_v, generator=g, dtype=torch.float64)
        sigma = 0.6 + 1.4 * torch.rand(shape_q[-1], generator=g, dtype=torch.float64)  # one bandwidth per feature
        cases.append((q, k, v, sigma))
    return cases


_PAIRWISE = ("my_kernel_attention builds a tensor as large as (..., T_q, T_k, d): that is every pairwise "
             "difference q - k_j. Expand the squared distance feature by feature instead, as the chapter does for "
             "one bandwidth: one product (q / sigma^2) @ k^T and one term per key.")


@checker("1.6", "a Gaussian kernel with one bandwidth per feature")
def check_kernel_attention(fn: Callable[[Tensor, Tensor, Tensor, Tensor], Any]) -> str:
    """Check ``fn(q, k, v, sigma)``, sigma (d,): Nadaraya-Watson with a per-feature Gaussian kernel, as attention."""
    if {"nadaraya_watson"} & names_used(fn):
        raise CheckFailed("my_kernel_attention calls course_utils' nadaraya_watson, which forms every pairwise "
                          "difference: write the softmax over one matrix product yourself.")
    for q, k, v, sigma in _cases():
        probe = _LargestTensor()
        try:
            with probe:
                got = call_student_without(
                    {"cdist"}, "Write it with one product q @ k^T and the keys' squared norms, not pairwise "
                    "distances.", fn, q.clone(), k.clone(), v.clone(), sigma.clone(), what="my_kernel_attention")
        except CheckFailed as failed:
            if "must match the size" in str(failed) or "shapes cannot be multiplied" in str(failed):
                raise CheckFailed(f"{failed}: sigma is a tensor of shape (d,), one bandwidth per feature: it "
                                  "divides the features of q (or k) before the product, not the (T_q, T_k) "
                                  "scores after it.") from None
            raise
        T_q, T_k, d = q.shape[-2], k.shape[-2], q.shape[-1]
        if d > 2 and T_k > 1 and probe.largest >= math.prod(q.shape[:-2]) * T_q * T_k * d:
            raise CheckFailed(_PAIRWISE)
        if isinstance(got, tuple) and len(got) == 2:
            got = got[0]  # (output, weights) is fine too
        want = _distance_form(q, k, v, sigma)
        w = 1 / sigma**2  # (d,)
        one = sigma.mean()
        what = f"my_kernel_attention on q {tuple(q.shape)}, k {tuple(k.shape)}, sigma of shape {tuple(sigma.shape)}"
        mistakes = {
            "The keys have different norms, so -sum_d k_d^2 / (2 sigma_d^2) is part of each score; only the q term "
            "is the same for every key and drops out of the softmax.": _softmax_form(q, k, v, w, w, norm=0.0),
            "Expanding (q_d - k_d)^2 gives -2 q_d k_d + k_d^2, and the kernel divides by 2 sigma_d^2: the key's "
            "term is sum_d k_d^2 / (2 sigma_d^2), not without the 1/2.": _softmax_form(q, k, v, w, w, norm=1.0),
            "The 1/2 of the kernel is already in -|k|^2/2 next to q.k: halve once, not again by dividing the "
            "scores by 2 sigma^2.": _softmax_form(q, k, v, w, w, outer=2.0),
            "Each feature's term is divided by sigma_d squared (its variance), not by sigma_d.":
                _softmax_form(q, k, v, 1 / sigma, 1 / sigma),
            "Divide by sigma_d^2 once: scaling both q and k by 1/sigma_d^2 divides q_d k_d by sigma_d^4. Scale "
            "each by 1/sigma_d, or only one of them by 1/sigma_d^2.": _softmax_form(q, k, v, w * w, w * w),
            "The key's squared norm must be weighted by 1/sigma_d^2 feature by feature, like the product: you "
            "weighted q . k but used the plain |k|^2.": _softmax_form(q, k, v, w, torch.ones_like(w)),
            "Each feature has its own bandwidth: one sigma for all (their mean) is the chapter's kernel, not this "
            "one.": _softmax_form(q, k, v, 1 / one**2 + 0 * w, 1 / one**2 + 0 * w),
            "The key's term is the sum of its squared features, sum_d k_d^2 / (2 sigma_d^2), not of their "
            "absolute values.":
                torch.softmax((q * w) @ k.transpose(-2, -1) - (k.abs() * w).sum(-1).unsqueeze(-2) / 2, -1) @ v,
            "sigma is an argument: a hard-coded sigma = 1 gives other weights.":
                _softmax_form(q, k, v, torch.ones_like(w), torch.ones_like(w)),
            "The sign is flipped: a close key (small distance) must get the largest weight.":
                _softmax_form(q, k, v, w, w, sign=-1.0),
            "The softmax runs over the keys (the last axis of the scores), one distribution per query.":
                _softmax_form(q, k, v, w, w, dim=-2) if q.shape[-2] > 1 else want,
            "This is scaled dot-product attention (divided by sqrt(d)); kernel regression divides each feature "
            "by sigma_d^2 and keeps the keys' norms.": torch.softmax(q @ k.transpose(-2, -1) / d ** 0.5, -1) @ v,
        }
        mistakes = {hint: wrong for hint, wrong in mistakes.items() if not torch.allclose(wrong, want)}
        expect_close(got, want, what, mistakes, atol=1e-6)
    if not isinstance(got, Tensor):
        raise CheckFailed("my_kernel_attention should return a tensor (the outputs)")
    return ("a per-feature Gaussian kernel is a softmax over (q / sigma^2) . k - sum_d k_d^2 / (2 sigma_d^2): "
            "the q term cancels, the key term stays, and no pairwise difference is formed.")
