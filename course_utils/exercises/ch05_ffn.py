"""Checker for Chapter 5's exercise on the FFN as a key-value memory (Exercise 5.6).

The learner splits a ``PositionwiseFeedForward``'s output along a direction e (a character's output
embedding, say) into one vote per hidden unit: m_i (v_i . e), how strongly unit i's key matched
the input times how far its value points along e (Geva et al., 2021), so that the votes plus
b_2 . e give FFN(x) . e. The checker compares with the book's decomposition
(:func:`course_utils.ffn.ffn_as_memory`), refuses that function, and names the usual slips.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor

from ..ffn import ffn_as_memory
from ..model import PositionwiseFeedForward
from .core import CheckFailed, call_student, checker, expect_close, expect_tensor, names_used

__all__ = ["check_ffn_as_memory"]

_BOOK = {"ffn_as_memory", "ffn_memory_coefficients", "value_logits"}


@checker("5.6", "each FFN unit's vote for a direction")
def check_ffn_as_memory(fn: Callable[[PositionwiseFeedForward, Tensor, Tensor], Any]) -> str:
    """Check ``fn(ffn, x, e) -> votes`` (..., d_ff): m_i (v_i . e), adding up with b_2 . e to ffn(x) . e."""
    if fn is ffn_as_memory or names_used(fn) & _BOOK:
        raise CheckFailed("my_unit_votes calls course_utils' FFN-as-memory helpers (ffn_as_memory, "
                          "ffn_memory_coefficients or value_logits): split the FFN yourself, from ffn.linear1 and "
                          "ffn.linear2.")
    g = torch.Generator().manual_seed(5)
    # (d_model, d_ff, batch shape); the first case has d_model = d_ff, so a transposed W_2 gives no shape error
    for d_model, d_ff, shape in [(12, 12, (3,)), (8, 32, (2, 5)), (6, 10, (7,)), (4, 24, (1, 1))]:
        torch.manual_seed(d_ff + d_model)
        ffn = PositionwiseFeedForward(d_model, d_ff).eval()
        with torch.no_grad():
            ffn.linear1.bias.normal_(0.0, 0.5, generator=g)  # biases large enough to matter
            ffn.linear2.bias.normal_(0.0, 0.5, generator=g)
        x = torch.randn(*shape, d_model, generator=g)
        e = torch.randn(d_model, generator=g)
        got = call_student(fn, ffn, x.clone(), e.clone(), what="my_unit_votes")
        got = expect_tensor(got, "votes")
        m, values = (t.detach() for t in ffn_as_memory(ffn, x))  # (..., d_ff), (d_ff, d_model)
        want = m * (values @ e)  # (..., d_ff)
        out = (ffn(x) @ e).detach()  # (...,): what the votes add up to, with b_2 . e
        if tuple(got.shape) != tuple(want.shape):
            if tuple(got.shape) == (d_ff,):
                raise CheckFailed(f"votes has shape {tuple(got.shape)}: one number per unit, the same at every "
                                  "position. That is v_i . e alone; weight it by m_i, how strongly unit i fired "
                                  "at each position, shape (..., d_ff).")
            if tuple(got.shape) == tuple(shape):
                raise CheckFailed(f"votes has shape {tuple(got.shape)}: one number per position. Return one vote "
                                  "per unit, shape (..., d_ff), without summing over the units.")
            raise CheckFailed(f"votes should have shape (..., d_ff) = {tuple(want.shape)}, got {tuple(got.shape)}")
        W1, b1, W2 = ffn.linear1.weight.detach(), ffn.linear1.bias.detach(), ffn.linear2.weight.detach()
        pre = x @ W1.T + b1  # (..., d_ff)
        mistakes = {
            "m must be the hidden activations after the ReLU: a unit whose key does not match adds nothing, never "
            "a negative amount.": pre * (values @ e),
            "Each unit has its own bias: m_i = max(0, x . k_i + b_1[i]); you left b_1 out.":
                torch.relu(x @ W1.T) * (values @ e),
            "Those are the keys k_i (rows of linear1.weight): a unit's value v_i, what it writes, is column i of "
            "linear2.weight.": m * (W1 @ e),
            "Unit i's value vector is column i of linear2.weight (nn.Linear stores (out, in)), not row i: "
            "project e on the columns, e @ linear2.weight.": m * (W2 @ e) if d_model == d_ff else want,
            "The paper's FFN uses ReLU; this m is GELU's.": torch.nn.functional.gelu(pre) * (values @ e),
            "The votes leave b_2 out: b_2 . e is added once to their sum, it is no unit's vote.":
                m * (values @ e) + (ffn.linear2.bias.detach() @ e) / d_ff,
        }
        mistakes = {h: w for h, w in mistakes.items() if not torch.allclose(w, want, atol=1e-5)}
        expect_close(got, want, f"my_unit_votes on x of shape {tuple(x.shape)}", mistakes, atol=1e-5)
        if not torch.allclose(got.sum(-1) + ffn.linear2.bias.detach() @ e, out, atol=1e-4):
            raise CheckFailed("the votes plus b_2 . e do not add up to ffn(x) . e.")
    return ("FFN(x) . e = sum_i m_i (v_i . e) + b_2 . e: each unit votes for a direction with its value, "
            "weighted by how strongly its key fired.")
