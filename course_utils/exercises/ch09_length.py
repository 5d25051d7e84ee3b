"""Checkers for the exercises of Chapter 9 (length generalisation).

9.1 source positions counted from the end, 9.2 ALiBi's bias at arbitrary positions, 9.3
randomized positions (Ruoss et al., 2023), 9.4 an experiment: randomized positions for a learned
table, and what happens beyond the table. Each checker compares with :mod:`course_utils`'s
reference on seeded inputs and names the likely mistake.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor

from ..positional import alibi_bias_at, alibi_slopes
from .core import CheckFailed, call_student, checker, expect_close, expect_tensor

__all__ = ["check_alibi_bias", "check_end_positions", "check_learned_randomized", "check_random_positions"]


def end_positions(lengths: Tensor, T: int) -> Tensor:
    """Reference for 9.1: (B, T) with L-1-j for real tokens j < L and 0 for padding."""
    j = torch.arange(T).unsqueeze(0)  # (1, T)
    return (lengths.unsqueeze(1) - 1 - j).clamp(min=0)  # (B, T)


def _expect_integer(got: Tensor, what: str) -> None:
    if got.dtype.is_floating_point or got.dtype == torch.bool:
        raise CheckFailed(f"{what} should hold integer positions (torch.long), got dtype {got.dtype}")


# ---------------------------------------------------------------- 9.1 positions from the end
@checker("9.1", "source positions counted from the end")
def check_end_positions(fn: Callable[[Tensor, int], Tensor]) -> str:
    """my_end_positions(lengths (B,), T) -> (B, T) positions: L-1-j for j < L, 0 on padding."""
    for lengths, T in (([5, 3, 1], 5), ([4], 4), ([2, 6], 8), ([1], 1)):
        lengths_t = torch.tensor(lengths)
        got = call_student(fn, lengths_t.clone(), T, what="my_end_positions")
        got = expect_tensor(got, "my_end_positions(lengths, T)", (len(lengths), T))
        _expect_integer(got, "my_end_positions(lengths, T)")
        j = torch.arange(T).unsqueeze(0)
        L = lengths_t.unsqueeze(1)
        mistakes = {
            "The positions count from the end of the padded row (T-1-j); count from the last real "
            "letter L-1 instead, so padding does not shift them.": (T - 1 - j).expand(len(lengths), T).clamp(min=0),
            "Off by one: the last real letter should be at position 0, not 1 (use L-1-j).": (L - j).clamp(min=0),
            "Padding positions are negative; clamp them to 0 (they are masked, but tables have no row -1).": L - 1 - j,
            "These are positions from the start (j); reversal needs them from the end.": j.expand(len(lengths), T),
        }
        expect_close(got.double(), end_positions(lengths_t, T).double(), "my_end_positions(lengths, T)",
                     {k: v.double() for k, v in mistakes.items()})
    return "Output step t and the letter it copies now share position t, for every length."


# ---------------------------------------------------------------- 9.2 ALiBi at positions
@checker("9.2", "ALiBi bias at arbitrary positions")
def check_alibi_bias(fn: Callable[[Tensor, Tensor, Tensor], Tensor]) -> str:
    """my_alibi_bias(slopes (h,), q_pos (B, T_q), k_pos (B, T_k)) -> (B, h, T_q, T_k)."""
    g = torch.Generator().manual_seed(90)
    for h, B, T_q, T_k in ((4, 2, 3, 5), (8, 1, 6, 6), (2, 3, 1, 4)):
        slopes = alibi_slopes(h)
        q_pos = torch.randint(0, 30, (B, T_q), generator=g).sort(-1).values
        k_pos = torch.randint(0, 30, (B, T_k), generator=g).sort(-1).values
        got = call_student(fn, slopes.clone(), q_pos.clone(), k_pos.clone(), what="my_alibi_bias")
        want = alibi_bias_at(slopes, q_pos, k_pos)
        signed = (k_pos.unsqueeze(1) - q_pos.unsqueeze(2)).float().unsqueeze(1)  # (B, 1, T_q, T_k)
        mistakes = {
            "The sign is wrong: ALiBi subtracts m_h * distance, so far keys get a lower score.": -want,
            "Take the absolute distance |k - q|; a signed offset rewards keys on one side.":
                -slopes.view(1, -1, 1, 1) * signed,
            "Each head needs its own slope m_h: did you use one slope for all heads?":
                -slopes[0] * signed.abs().expand(B, h, T_q, T_k),
        }
        if T_q == T_k:
            mistakes["Queries are rows and keys are columns: the result looks transposed."] = want.transpose(-2, -1)
        expect_close(got, want, "my_alibi_bias(slopes, q_pos, k_pos)", mistakes)
    return "Only the distance between positions enters, never a position itself."


# ---------------------------------------------------------------- 9.3 randomized positions
@checker("9.3", "randomized positions")
def check_random_positions(fn: Callable[..., Tensor]) -> str:
    """my_random_positions(batch_size, n, max_position, generator) -> (batch_size, n) sorted distinct positions."""
    g = torch.Generator().manual_seed(91)
    got = call_student(fn, 4000, 6, 20, generator=g, what="my_random_positions")
    got = expect_tensor(got, "my_random_positions(4000, 6, 20, generator)", (4000, 6))
    _expect_integer(got, "my_random_positions(...)")
    if got.min() < 0 or got.max() >= 20:
        raise CheckFailed(f"positions must lie in 0..max_position-1 = 0..19, got {int(got.min())}..{int(got.max())}")
    gaps = got[:, 1:] - got[:, :-1]
    if (gaps < 0).any():
        raise CheckFailed("the positions of a row are not in order: sort them, so token order is kept.")
    if (gaps == 0).any():
        raise CheckFailed("a row repeats a position: draw n distinct positions (a subset), not n independent ones.")
    if (gaps == 1).all():
        raise CheckFailed("every row is a run of consecutive positions (a random shift); draw a random "
                          "subset instead, so the gaps vary as well.")
    counts = torch.bincount(got.flatten(), minlength=20).double()  # each position appears n/max = 30 % of rows
    share = counts / got.shape[0]
    if (share - 6 / 20).abs().max() > 0.04:
        worst = int((share - 0.3).abs().argmax())
        raise CheckFailed(
            f"position {worst} is used in {100 * share[worst]:.0f} % of rows; a uniform random subset uses "
            "every position in n/max_position = 30 % of them. Are some positions never drawn?"
        )
    again = [call_student(fn, 50, 6, 20, generator=torch.Generator().manual_seed(5), what="my_random_positions")
             for _ in range(2)]
    if not torch.equal(torch.as_tensor(again[0]), torch.as_tensor(again[1])):
        raise CheckFailed("two calls with generators seeded alike gave different positions: draw with the "
                          "generator argument (torch.rand(..., generator=generator) or torch.randperm(..., "
                          "generator=generator)), not the global random state.")
    one = call_student(fn, 1, 20, 20, generator=g, what="my_random_positions")
    if not torch.equal(expect_tensor(one, "my_random_positions(1, 20, 20, generator)", (1, 20))[0], torch.arange(20)):
        raise CheckFailed("with n == max_position every position must be used once, in order.")
    return "Every position up to max_position gets trained, in every order-preserving pattern."


# ---------------------------------------------------------------- 9.4 learned table, randomized
def _one_hot_table(module: Any, size: int) -> None:
    """Make the learner's table row p the one-hot vector e_p, so x + table[pos] reveals pos."""
    weights = [p for p in module.parameters() if p.dim() == 2]
    if len(weights) != 1 or tuple(weights[0].shape) != (size, size):
        raise CheckFailed(f"the module should hold one (table_size, d_model) = ({size}, {size}) table, "
                          f"got parameters {[tuple(p.shape) for p in module.parameters()]}")
    with torch.no_grad():
        weights[0].copy_(torch.eye(size))


@checker("9.4", "randomized positions for a learned table")
def check_learned_randomized(cls: Callable[..., Any]) -> str:
    """RandomizedLearnedPositions(table_size, d_model): adds table rows at sorted random positions in training."""
    size = 12
    module = call_student(cls, size, size, what="RandomizedLearnedPositions(table_size, d_model)")
    _one_hot_table(module, size)
    x = torch.zeros(500, 5, size)
    module.train()
    torch.manual_seed(92)
    out = expect_tensor(call_student(module, x, what="your module in training mode"),
                        "the output in training mode", x.shape)
    if not torch.equal(out.sum(-1), torch.ones(500, 5)) or not torch.equal(out.max(-1).values, torch.ones(500, 5)):
        raise CheckFailed("in training mode each token should get exactly one table row added to it.")
    pos = out.argmax(-1)  # (500, 5): which row each token got
    gaps = pos[:, 1:] - pos[:, :-1]
    if (gaps <= 0).any():
        raise CheckFailed("in training mode the rows must be distinct and in increasing order (token order is kept).")
    if (gaps == 1).all():
        raise CheckFailed("in training mode you add consecutive rows; sample a random ordered subset of the table.")
    if pos.max() < size - 1 or pos.min() > 0:
        raise CheckFailed("in training mode the positions should range over the whole table, 0..table_size-1.")
    module.eval()
    out = call_student(module, x[:2], what="your module in eval mode")
    out = expect_tensor(out, "the output in eval mode", (2, 5, size))
    if not torch.equal(out.argmax(-1), torch.arange(5).expand(2, 5)):
        raise CheckFailed("in eval mode add rows 0, 1, ..., T-1, like an ordinary learned table.")
    try:
        module(torch.zeros(1, size + 1, size))
    except ValueError:
        pass
    except NotImplementedError:
        raise
    except Exception as error:
        raise CheckFailed(
            f"a sequence longer than the table should raise ValueError, got {type(error).__name__}"
        ) from None
    else:
        raise CheckFailed(f"a sequence of {size + 1} tokens has no table row for its last position: raise ValueError.")
    return "Every row is trained, yet no row exists beyond table_size: that is where it must fail."
