"""Checker for Chapter 5's exercise on the FFN as a key-value memory (Exercise 5.6).

The learner splits a trained-or-random ``PositionwiseFeedForward`` into memory coefficients m (how
strongly each hidden unit's key matches the input) and value vectors (what each unit adds), so that
m @ values + b_2 = FFN(x) (Geva et al., 2021); the checker compares with
:func:`course_utils.ffn.ffn_as_memory` and names the usual slips.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor

from ..ffn import ffn_as_memory
from ..model import PositionwiseFeedForward
from .core import CheckFailed, call_student, checker, close, expect_close, expect_tensor, names_used

__all__ = ["check_ffn_as_memory"]


@checker("5.6", "the FFN as a key-value memory")
def check_ffn_as_memory(fn: Callable[[PositionwiseFeedForward, Tensor], Any]) -> str:
    """Check ``fn(ffn, x) -> (m, values)``: m (..., d_ff) >= 0, values (d_ff, d_model), m @ values + b_2 = ffn(x)."""
    if fn is ffn_as_memory or names_used(fn) & {"ffn_as_memory", "ffn_memory_coefficients"}:
        raise CheckFailed("my_ffn_as_memory calls course_utils' ffn_as_memory (or ffn_memory_coefficients): "
                          "split the FFN yourself, from ffn.linear1 and ffn.linear2.")
    g = torch.Generator().manual_seed(5)
    for d_model, d_ff, shape in [(8, 32, (2, 5)), (6, 10, (7,)), (4, 24, (1, 1))]:
        torch.manual_seed(d_ff)
        ffn = PositionwiseFeedForward(d_model, d_ff).eval()
        x = torch.randn(*shape, d_model, generator=g)
        got = call_student(fn, ffn, x.clone(), what="my_ffn_as_memory")
        if not isinstance(got, tuple) or len(got) != 2:
            raise CheckFailed(f"my_ffn_as_memory should return a pair (m, values), got {type(got).__name__}")
        m, values = got
        m = expect_tensor(m, "m", (*shape, d_ff))
        values = expect_tensor(values, "values")
        W1, b1 = ffn.linear1.weight.detach(), ffn.linear1.bias.detach()
        if tuple(values.shape) != (d_ff, d_model):
            if tuple(values.shape) == (d_model, d_ff):
                raise CheckFailed(f"values has shape {tuple(values.shape)}: that is linear2.weight as stored. "
                                  "Unit i's value vector v_i is column i of linear2.weight; return them as rows, "
                                  "shape (d_ff, d_model).")
            raise CheckFailed(f"values should have shape (d_ff, d_model) = {(d_ff, d_model)}, "
                              f"got {tuple(values.shape)}")
        want_m, want_values = ffn_as_memory(ffn, x)
        if close(values, W1) and not close(values, want_values):
            raise CheckFailed("values holds the rows of linear1.weight: those are the keys k_i (what a unit "
                              "responds to). The values are what a unit writes: the columns of linear2.weight.")
        expect_close(values, want_values.detach(), "values", {}, atol=1e-6)
        pre = x @ W1.T + b1  # (..., d_ff)
        expect_close(m, want_m.detach(), "m", {
            "m must be the hidden activations after the ReLU: a unit whose key does not match contributes 0, "
            "never a negative amount.": pre,
            "Each unit has its own bias: m_i = max(0, x . k_i + b_1[i]); you left b_1 out.": torch.relu(x @ W1.T),
            "The paper's FFN uses ReLU; this m is GELU's.": torch.nn.functional.gelu(pre),
        }, atol=1e-5)
        rebuilt = m.detach() @ values.detach() + ffn.linear2.bias.detach()
        if not close(rebuilt, ffn(x).detach(), atol=1e-5):
            raise CheckFailed("m @ values + linear2.bias does not give ffn(x) back.")
    return ("FFN(x) = sum_i m_i v_i + b_2: each hidden unit is a key (row of W_1) and a value (column of W_2), "
            "and m_i says how much of v_i is added.")
