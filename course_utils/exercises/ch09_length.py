"""Checkers for the exercises of Chapter 9 (length generalisation).

9.1 the copy offsets a long string needs that training never showed, 9.2 where ALiBi's bias pulls
cross-attention, 9.3 randomized positions (Ruoss et al., 2023), 9.4 randomized positions for a
learned table, 9.5 an experiment: random positions at test time. Each checker compares with :mod:`course_utils`'s
reference on seeded inputs and names the likely mistake.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor

from .core import CheckFailed, call_student, checker, describe, expect_tensor, fail_on_mistake
from .experiment import Expected, compare_prediction, judge_range, read_prediction

__all__ = [
    "check_alibi_copy_weight", "check_learned_randomized", "check_random_positions", "check_test_positions",
    "check_unseen_offsets",
]


def _expect_integer(got: Tensor, what: str) -> None:
    if got.dtype.is_floating_point or got.dtype == torch.bool:
        raise CheckFailed(f"{what} should hold integer positions (torch.long), got dtype {got.dtype}")


# ---------------------------------------------------------------- 9.1 copy offsets never trained
def copy_offsets(L: int, from_end: bool) -> list[int]:
    """Key position minus query position of the letter each output step t < L must copy (reversal). Chapter 9.

    Output step t sits at position t; it copies source letter L-1-t, at position L-1-t counted from the
    start (offset L-1-2t) or at position t counted from the end (offset 0).
    """
    return sorted({0 if from_end else L - 1 - 2 * t for t in range(L)})


def unseen_copy_offsets(train_lengths: range | list[int], L: int, from_end: bool) -> list[int]:
    """Reference for 9.1: the copy offsets a string of length L needs that no training length produced."""
    seen = {o for n in train_lengths for o in copy_offsets(n, from_end)}
    return sorted(set(copy_offsets(L, from_end)) - seen)


def _with_eos_step(train_lengths: range | list[int], L: int, from_end: bool) -> list[int]:
    """Mistake for 9.1: the step t = n that emits EOS counted as if it copied letter n-1-t."""
    def offsets(n: int) -> set[int]:
        return {0 if from_end else n - 1 - 2 * t for t in range(n + 1)}

    return sorted(offsets(L) - set().union(*(offsets(n) for n in train_lengths)))


@checker("9.1", "copy offsets that training never showed")
def check_unseen_offsets(fn: Callable[[Any, int, bool], Any]) -> str:
    """my_unseen_copy_offsets(train_lengths, L, from_end) -> sorted list of the offsets (key - query) that the
    letters to copy at length L need and no training length produced."""
    cases = ((range(3, 11), 20, False), (range(3, 11), 20, True), (range(3, 11), 11, False),
             (range(3, 5), 12, False), ([5], 5, False), (range(2, 9), 30, True))
    for lengths, L, from_end in cases:
        got = call_student(fn, lengths, L, from_end, what="my_unseen_copy_offsets")
        try:
            got_list = sorted(int(o) for o in got)
        except (TypeError, ValueError):
            raise CheckFailed(f"return a list of integer offsets, got {type(got).__name__}") from None
        want = unseen_copy_offsets(lengths, L, from_end)
        if got_list == want:
            continue
        seen = sorted({o for n in lengths for o in copy_offsets(n, from_end)})
        mistakes = {
            "Counted from the end, step t and the letter it copies share position t: every offset is 0, so "
            "none is new.": unseen_copy_offsets(lengths, L, False),
            "Those are the offsets training did show; the question is which ones it did not.": seen,
            "Those are all the offsets length L needs; remove the ones the training lengths produced.":
                copy_offsets(L, from_end),
            "Only the output steps that copy a letter count (t < L); the step that emits EOS copies nothing.":
                _with_eos_step(lengths, L, from_end),
        }
        fail_on_mistake(got_list, {hint: wrong for hint, wrong in mistakes.items() if wrong != want})
        raise CheckFailed(f"for lengths {list(lengths)}, L = {L}, from_end={from_end}: expected {want}, "
                          f"got {got_list}.")
    return ("Counted from the start, a 20-letter string needs copy offsets up to +-19 and training showed only "
            "up to +-9: half of its letters must be found at distances the copy head never met, whatever the "
            "scheme encodes. Counted from the end, one offset (0) serves every length.")


# ---------------------------------------------------------------- 9.2 where ALiBi pulls cross-attention
def alibi_copy_weight(slope: float, L: int, t: int, signed: bool = False, sign: float = -1.0,
                      target: int | None = None) -> float:
    """Reference for 9.2: weight on source position L-1-t of softmax_j(-slope |j - t|), j = 0..L-1. Chapter 9."""
    j = torch.arange(L, dtype=torch.float64)
    distance = (j - t) if signed else (j - t).abs()
    weights = torch.softmax(sign * slope * distance, dim=0)
    return float(weights[L - 1 - t if target is None else target])


@checker("9.2", "where ALiBi pulls cross-attention")
def check_alibi_copy_weight(fn: Callable[[float, int, int], Any]) -> str:
    """my_alibi_copy_weight(slope, L, t) -> the weight ALiBi's bias alone gives the letter step t must copy."""
    from .core import as_number

    for slope, L, t in ((0.25, 8, 2), (0.5, 10, 0), (1.0, 5, 4), (0.0625, 20, 3), (0.5, 7, 3), (2.0, 1, 0)):
        got = as_number(call_student(fn, slope, L, t, what="my_alibi_copy_weight"), "my_alibi_copy_weight")
        want = alibi_copy_weight(slope, L, t)
        if abs(got - want) <= 1e-6 + 1e-5 * abs(want):
            continue
        mistakes = {
            "You used the signed offset j - t: ALiBi penalises the distance |j - t| in both directions.":
                alibi_copy_weight(slope, L, t, signed=True),
            "The bias is a penalty: -m |j - t|, so distant keys get less weight, not more.":
                alibi_copy_weight(slope, L, t, sign=1.0),
            "That is the weight on source position t, the one ALiBi favours; reversal must read L-1-t.":
                alibi_copy_weight(slope, L, t, target=t),
            "That is the raw bias -m |L-1-2t|; turn the biases of all L source positions into weights with a "
            "softmax.": -slope * abs(L - 1 - 2 * t),
        }
        fail_on_mistake(got, {hint: wrong for hint, wrong in mistakes.items() if abs(wrong - want) > 1e-9},
                        lambda g, w: abs(g - w) <= 1e-6 + 1e-5 * abs(w))
        raise CheckFailed(f"for slope {slope}, L = {L}, t = {t} expected a weight of {want:.4g}, got {got:.4g}.")
    first = alibi_copy_weight(0.5, 10, 0)
    return (f"For slope 1/2 and a 10-letter string, the bias alone leaves the first output step {first:.1%} of "
            "its weight for the letter it must copy: ALiBi pulls step t towards source position t, and the "
            "content scores must fight that pull at every step, harder the longer the string.")


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
    return ("Every row gets trained, but in eval mode the module adds the consecutive rows 0..T-1, a pattern "
            "that random subsets almost never produce in training: the `randomized` row's failure. Evaluating "
            "with random positions too (Exercise 9.5) removes that mismatch; beyond table_size no row exists.")


# ---------------------------------------------------------------- 9.5 random positions at test time
@torch.no_grad()
def exact_match_with_positions(model: Any, strings: list[str], table: Callable[[int, int], Tensor]) -> float:
    """Share of ``strings`` that greedy decoding reverses exactly when the plain positions 0, 1, 2, ... are mapped
    through ``table(B, n)`` (B, n) at test time, the same map for source and target (Ruoss et al.). Chapter 9."""
    from ..data import EOS_ID, ITOS, PAD_ID, make_batch
    from ..decoding import greedy_decode

    src, _, _ = make_batch(strings)
    B, T = src.shape
    keep = src != PAD_ID  # (B, T)
    L = keep.long().sum(1, keepdim=True)  # (B, 1)
    steps = int(L.max()) + 1
    n = max(T, steps + 1)
    positions = table(B, n)
    if not isinstance(positions, Tensor) or tuple(positions.shape) != (B, n):
        raise CheckFailed(f"my_test_positions(batch_size, n, generator) should return a ({B}, {n}) tensor, got "
                          f"{describe(positions)}")
    positions = positions.long()
    model.eval()  # the model's plain positions (0, 1, 2, ... or counted from the end), as greedy_random_positions
    plain, _ = model.positions(keep, n)  # (B, T)
    src_pos = positions.gather(1, plain)  # (B, T)
    # the whole prefix every step (no cache): one position map for all of it
    ids = greedy_decode(model, src, steps, use_cache=False, positions=(src_pos, positions))
    right = 0
    for row, s in zip(ids.tolist(), strings, strict=True):
        out = "".join(ITOS[i] for i in row[: row.index(EOS_ID)]) if EOS_ID in row else None
        right += out == s[::-1]
    return right / len(strings)


TEST_POSITION_OPTIONS = {
    "about the same": "random test positions change little for either model",
    "winner same, loser collapses": "only the model that met random positions in training copes with them",
    "both collapse": "no model copes with positions it was not evaluated with before",
    "both improve": "random test positions help both models",
}
WINNER_RANDOM = Expected(
    "lowest exact match of the winning recipe with random test positions, over lengths 3, 10, 20 and 40",
    0.9, 1.0,
    "the winner does not care which order-preserving map its positions go through: source and target share one "
    "map, so the letter to copy stays at offset 0 from the output step, and RoPE sees only offsets.",
    below="Draw a sorted subset of distinct positions from 0..max_position-1 for every row, as in Exercise 9.3.",
)
LOSER_RANDOM = Expected(
    "highest exact match of the paper's sinusoidal model with random test positions, over lengths 3 and 10",
    0.0, 0.2,
    "a model trained only on the positions 0, 1, 2, ... meets positions it never saw, and fails inside the "
    "training lengths too.",
    above="Are your positions really random? Plain positions 0, 1, 2, ... leave the sinusoidal model intact.",
)


@checker("9.5", "random positions at test time")
def check_test_positions(fn: Callable[..., Tensor], prediction: Any) -> str:
    """Record the prediction, then evaluate the shipped winner and loser with ``fn(batch_size, n, generator)`` as
    the test-time position map, and judge the exact matches against the reference ranges."""
    from ..data import random_strings
    from ..runs.length import LOSER, WINNER, load_scheme_model

    guess = read_prediction(prediction, TEST_POSITION_OPTIONS)
    g = torch.Generator().manual_seed(0)
    probe = call_student(fn, 200, 5, g, what="my_test_positions")
    probe = expect_tensor(probe, "my_test_positions(200, 5, generator)", (200, 5))
    _expect_integer(probe, "my_test_positions(200, 5, generator)")
    if (probe[:, 1:] <= probe[:, :-1]).any():
        raise CheckFailed("the positions of each row must be distinct and increasing: the order of the letters "
                          "is what the model reads.")
    if bool((probe == torch.arange(5)).all()):
        raise CheckFailed("those are the plain positions 0, 1, 2, ...: draw a random sorted subset of "
                          "0..max_position-1 instead (the models use max_position = 64).")
    if int(probe.max()) < 40 or int(probe.min()) < 0 or int(probe.max()) > 63:
        raise CheckFailed("draw the positions from the whole range 0..63 (max_position = 64, the size the "
                          "winner was trained with).")
    winner, loser = load_scheme_model(WINNER), load_scheme_model(LOSER)

    def table(batch_size: int, n: int) -> Tensor:
        return call_student(fn, batch_size, n, g, what="my_test_positions")

    def strings(L: int) -> list[str]:
        return random_strings(40, L, L, torch.Generator().manual_seed(900 + L))

    win = min(exact_match_with_positions(winner, strings(L), table) for L in (3, 10, 20, 40))
    lose = max(exact_match_with_positions(loser, strings(L), table) for L in (3, 10))
    verdict_win = judge_range(win, WINNER_RANDOM, what="the winner's exact match", show=True)
    verdict_lose = judge_range(lose, LOSER_RANDOM, what="the sinusoidal model's exact match", show=True)
    return f"{verdict_win} {verdict_lose} {compare_prediction(guess, 'winner same, loser collapses')}"
