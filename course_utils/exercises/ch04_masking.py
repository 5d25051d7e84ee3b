"""Checkers for the exercises of Chapter 4 (masking).

Convention checked everywhere: boolean keep-mask, True = attend, False = masked.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor

from ..masks import causal_mask, combine_masks, padding_mask
from .core import CheckFailed, call_student, checker, expect_close, expect_tensor, fail_on_mistake
from .experiment import Expected, compare_prediction, judge_range, measure, read_prediction, require_own_run

_CONVENTION = "The course's convention is a boolean keep-mask: True = attend, False = masked."


def _expect_bool(got: Any, what: str) -> Tensor:
    got = expect_tensor(got, what)
    if got.dtype != torch.bool:
        raise CheckFailed(
            f"{what} has dtype {got.dtype}, not torch.bool. Did you build a float 0/1 matrix? "
            f"Use dtype=torch.bool (or compare, e.g. tokens != pad_id). {_CONVENTION}"
        )
    return got


def _expect_equal_mask(got: Tensor, want: Tensor, what: str, mistakes: dict[str, Tensor]) -> None:
    """Compare two boolean masks of the same shape; name a known mistake when one matches."""
    if torch.equal(got, want):
        return
    fail_on_mistake(got, mistakes, lambda g, w: w.shape == g.shape and torch.equal(g, w), f"{what} is not right. ")
    where = tuple(int(i) for i in torch.nonzero(got != want)[0])
    raise CheckFailed(
        f"{what} differs from the reference at index {where} (got {bool(got[where])}, "
        f"expected {bool(want[where])}). {_CONVENTION}"
    )


def _window_reference(T: int, w: int) -> Tensor:
    """Keep-mask (1, 1, T, T): query i sees keys i-w+1 .. i (its w most recent positions, itself included)."""
    i = torch.arange(T).view(T, 1)  # (T, 1) query positions
    j = torch.arange(T).view(1, T)  # (1, T) key positions
    return ((j <= i) & (j > i - w)).view(1, 1, T, T)  # (T, T) -> (1, 1, T, T)


@checker("4.1", "sliding-window causal mask")
def check_window_mask(fn: Callable[[int, int], Tensor]) -> str:
    """Check ``fn(T, w)`` returns the (1, 1, T, T) boolean keep-mask of causal attention over a window of w keys."""
    # larger T and a window narrower than T first: at w >= T the window is the plain causal mask
    for T, w in ((8, 3), (6, 2), (7, 1), (5, 5), (4, 9), (1, 1)):
        what = f"window_mask({T}, {w})"
        got = expect_tensor(call_student(fn, T, w, what="your window_mask"), what)
        if tuple(got.shape) != (1, 1, T, T):
            hint = ""
            if tuple(got.shape) == (T, T):
                hint = " Add batch and head dimensions with .view(1, 1, T, T) so it broadcasts against (B, h, T, T)."
            raise CheckFailed(f"{what} should have shape (1, 1, {T}, {T}), got {tuple(got.shape)}.{hint}")
        got = _expect_bool(got, what)
        want = _window_reference(T, w)
        full = torch.ones(T, T, dtype=torch.bool)

        def band(low: int, high: int, full: Tensor = full) -> Tensor:  # keys i+low .. i+high, (1, 1, T, T)
            return (full.tril(high) & ~full.tril(low - 1)).unsqueeze(0).unsqueeze(0)

        _expect_equal_mask(got, want, what, {
            "It keeps every past key: this is the plain causal mask. Also drop the keys more than w - 1 "
            "positions back (a second triangle, e.g. tril() & ~tril(-w)).": causal_mask(T),
            "Each query sees w + 1 keys: the window holds w keys, the query's own position included "
            "(keys i - w + 1 .. i), so cut at tril(-w), not tril(-w - 1).": band(-w, 0),
            "Each query sees only w - 1 keys: the window holds w keys, the query's own position included "
            "(keys i - w + 1 .. i), so cut at tril(-w), not tril(-w + 1).": band(-w + 2, 0),
            "The window looks into the future: query i may see keys i - w + 1 .. i, never a key after i.":
                band(0, w - 1),
            "The window is centred on the query and so sees the future: a causal window ends at the query "
            "(keys i - w + 1 .. i).": band(-(w // 2), w // 2),
            f"It is inverted: True marks the keys outside the window here. {_CONVENTION}": ~want,
            "The diagonal is masked: a position may attend to itself, and it is one of its w keys.":
                band(-w, -1),
        })
    return "Each query sees itself and the w - 1 keys before it, never the future; shape (1, 1, T, T)."


@checker("4.2", "padding mask from sequence lengths")
def check_length_mask(fn: Callable[[Tensor, int], Tensor]) -> str:
    """Check ``fn(lengths, T)`` returns the (B, 1, 1, T) boolean key-padding keep-mask of sequences of these lengths."""
    cases = [(torch.tensor([5, 3, 1]), 5), (torch.tensor([2, 4]), 7), (torch.tensor([4, 4, 4, 4]), 4),
             (torch.tensor([1]), 1), (torch.tensor([3, 6, 2]), 6)]
    for lengths, T in cases:
        B = lengths.shape[0]
        what = f"length_mask for lengths {lengths.tolist()} and T = {T}"
        try:
            raw = call_student(fn, lengths.clone(), T, what="your length_mask")
        except CheckFailed as failure:
            if "must match the size" in str(failure):
                raise CheckFailed(f"{failure} Compare torch.arange(T) with lengths[:, None] (shape (B, 1)) so that "
                                  "they broadcast to a (B, T) table.") from None
            raise
        got = expect_tensor(raw, what)
        positions = torch.arange(T)  # (T,)
        want = (positions < lengths.view(B, 1)).view(B, 1, 1, T)  # (B, T) -> (B, 1, 1, T)
        if tuple(got.shape) != (B, 1, 1, T):
            hint = ""
            if tuple(got.shape) == (B, T):
                hint = " Reshape with .view(B, 1, 1, T): one slot for heads and one for queries, keys last."
            elif tuple(got.shape) == (B, 1, T, 1):
                hint = " The padding is on the keys, the last axis: use (B, 1, 1, T), not (B, 1, T, 1)."
            elif len(got.shape) == 4 and got.shape[-1] == int(lengths.max()) and got.shape[0] == B:
                hint = (" Use the T argument for the last axis, not lengths.max(): the batch may be padded beyond "
                        "its longest sequence.")
            raise CheckFailed(f"{what} should have shape ({B}, 1, 1, {T}), got {tuple(got.shape)}.{hint}")
        got = _expect_bool(got, what)
        _expect_equal_mask(got, want, what, {
            "It keeps one position too many: sequence b has real tokens at positions 0 .. lengths[b] - 1, so "
            "compare positions < lengths, not <=.": (positions <= lengths.view(B, 1)).view(B, 1, 1, T),
            "It keeps one position too few: sequence b has real tokens at positions 0 .. lengths[b] - 1, so "
            "compare positions < lengths, not positions < lengths - 1.":
                (positions < lengths.view(B, 1) - 1).view(B, 1, 1, T),
            f"It is inverted: True marks the padding. {_CONVENTION}": ~want,
            "The real tokens are at the start of each row (right padding): keep positions 0 .. lengths[b] - 1, "
            "not the last lengths[b].": (positions >= T - lengths.view(B, 1)).view(B, 1, 1, T),
            "Compare each sequence's positions with its own length: lengths.view(B, 1) against "
            "torch.arange(T) gives a (B, T) table.": (positions < lengths.max()).expand(B, T).reshape(B, 1, 1, T),
        })
    return "Shape (B, 1, 1, T), True on the first lengths[b] positions of row b."


def _additive_softmax(z: Tensor, dim: int = -1) -> Tensor:
    """Softmax of z over ``dim`` with all-zero rows where every entry of z is -inf."""
    empty = torch.isneginf(z).all(dim=dim, keepdim=True)  # rows with nothing to attend to
    return torch.softmax(z.masked_fill(empty, 0.0), dim=dim).masked_fill(empty, 0.0)


def _additive_cases() -> list[tuple[Tensor, Tensor]]:
    g = torch.Generator().manual_seed(44)
    B, h, T = 2, 2, 4
    scores = torch.randn(B, h, T, T, generator=g) * 3
    tokens = torch.tensor([[4, 5, 6, 0], [0, 7, 8, 0]])  # second sequence starts with padding
    keep = combine_masks(padding_mask(tokens, 0), causal_mask(T))  # (B, 1, T, T)
    assert keep is not None
    distance = (torch.arange(T).view(T, 1) - torch.arange(T).view(1, T)).abs().float()  # (T, T)
    # a penalty on the kept keys (a distance bias, like ALiBi) and -inf on the masked ones
    bias = (-0.5 * distance).masked_fill(~keep, float("-inf"))  # (B, 1, T, T) broadcasts over heads
    only_penalty = -torch.rand(1, 1, 3, 3, generator=g) * 4  # finite everywhere: no key is hidden
    return [
        (scores, bias),
        (scores[:, :, :3, :3], only_penalty),
        (scores[:1, :1, :1, :1], torch.full((1, 1, 1, 1), float("-inf"))),  # one query, no key at all
    ]


@checker("4.4", "softmax with an additive mask")
def check_additive_softmax(fn: Callable[[Tensor, Tensor], Tensor]) -> str:
    """Check ``fn(scores, bias)``: softmax of scores + bias over the keys, all-zero rows where every key is -inf."""
    for s, b in _additive_cases():
        got = call_student(fn, s.clone(), b.clone(), what="your additive_softmax")
        got = expect_tensor(got, "additive_softmax", s.shape)
        z = s + b
        want = _additive_softmax(z)
        empty = torch.isneginf(z).all(dim=-1, keepdim=True).expand_as(want)
        if torch.isnan(got).any():
            raise CheckFailed(
                "additive_softmax returns NaN. A row whose scores + bias are all -inf is softmax of all -inf: "
                "0/0. Find such rows (torch.isneginf(z).all(-1)) and give them zeros, before or after the softmax."
            )
        kept = torch.isfinite(b)
        n = s.shape[-1]
        expect_close(got, want, f"additive_softmax for scores of shape {tuple(s.shape)}", mistakes={
            "Rows where every key is -inf should be all zeros, not uniform: did you clamp the -inf to a large "
            "negative number (e.g. -1e9) and stop there? Zero those rows.":
                torch.where(empty, torch.full_like(want, 1.0 / n), want),
            "Add the bias to the scores: a finite negative entry lowers a key's weight without hiding it. "
            "Here the bias was only used to decide which keys are hidden.":
                _additive_softmax(s.masked_fill(~kept, float("-inf"))),
            "The bias is not a keep-mask: an entry other than 0 lowers a key's weight (softmax of scores + "
            "bias); only -inf hides the key.": _additive_softmax(s.masked_fill(b != 0, float("-inf"))),
            "The bias was ignored: softmax(scores + bias), not softmax(scores).": torch.softmax(s, dim=-1),
            "The weights were multiplied by exp(bias) after a plain softmax but not renormalised: add the "
            "bias to the scores before the softmax (or divide each row by its new sum).":
                torch.softmax(s, dim=-1) * b.exp(),
            "The softmax runs over the wrong dimension: normalise over the keys (dim=-1), not the queries.":
                _additive_softmax(z, dim=-2),
            "Divide by each row's sum (dim=-1, keepdim=True), not by the sum over the whole tensor: every "
            "row with a finite entry must sum to 1.": (lambda e: e / e.sum())(z.exp()),
        })
    return "softmax(scores + bias) over the keys; rows with only -inf are zeros, like course_utils.attention."


# ----- 4.5 which queries see nothing? (transfer: left padding) --------------------------------------

def _left_pad(rows: list[list[int]], pad_id: int) -> Tensor:
    T = max(len(r) for r in rows)
    return torch.tensor([[pad_id] * (T - len(r)) + r for r in rows])


def _right_pad(rows: list[list[int]], pad_id: int) -> Tensor:
    T = max(len(r) for r in rows)
    return torch.tensor([r + [pad_id] * (T - len(r)) for r in rows])


@checker("4.5", "queries with no key to attend to")
def check_fully_masked_rows(fn: Callable[[Tensor, int], Tensor]) -> str:
    """Check ``fn(tokens (B, T), pad_id)`` returns the (B, T) query rows of the decoder mask that keep no key.

    The decoder mask is padding AND causal. Batches are padded on the right (as in this course) and
    on the left (as some decoder-only models batch prompts).
    """
    rows = [[5, 6, 7, 8], [9, 4], [3, 3, 3]]
    for pad_id in (0, 1):
        for side, tokens in (("right", _right_pad(rows, pad_id)), ("left", _left_pad(rows, pad_id))):
            got = call_student(fn, tokens.clone(), pad_id, what="your fully_masked_rows")
            got = _expect_bool(got, f"fully_masked_rows(tokens, {pad_id}) for {side} padding")
            both = combine_masks(padding_mask(tokens, pad_id), causal_mask(tokens.shape[1]))
            assert both is not None
            want = ~both.any(dim=-1)
            want = want.reshape(tokens.shape)  # (B, 1, T) -> (B, T)
            if tuple(got.shape) != tuple(tokens.shape):
                raise CheckFailed(
                    f"the result should have shape (B, T) = {tuple(tokens.shape)}, got {tuple(got.shape)}."
                )
            if torch.equal(got, want):
                continue
            is_pad = tokens == pad_id
            if torch.equal(got, is_pad):
                raise CheckFailed(
                    f"with {side} padding you marked every PAD query. "
                    + ("A PAD query after the real tokens still sees them through the causal mask, so its row "
                       "is not empty." if side == "right" else "Check which PAD queries have a real token at or "
                       "before their own position.")
                )
            if not got.any():
                raise CheckFailed(
                    f"you found no empty row for {side} padding. With left padding a leading PAD query may look "
                    "only at itself and earlier positions, and those are all PAD."
                )
            raise CheckFailed(f"for {side} padding (pad_id={pad_id}) the empty rows are {want.int().tolist()}, "
                              f"got {got.int().tolist()}.")
    return "Right padding leaves no empty row; left padding empties the leading PAD queries."


# ----- 4.3 train a next-token model without the causal mask (experiment) ---------------------------
MASK_OPTIONS = {
    "lower": "without the mask the training loss ends lower",
    "same": "the mask makes no difference to the training loss",
    "higher": "without the mask the training loss ends higher",
}
_MASK_WHY = {
    "same": "Without the mask, query t may attend to key t + 1, which holds exactly the token it must predict.",
    "higher": "Removing the mask gives every query more keys, including the answer: the loss can only go down.",
}
_LN8 = math.log(8)
CAUSAL_RUN = Expected(
    "training loss with the causal mask", _LN8 - 0.1, _LN8 + 0.15,
    "the tokens are uniformly random, so no model can beat ln 8 (about 2.08 nats) at predicting the next one: "
    "the masked model learned all there is to learn.",
    below="Below ln 8 on random tokens means the model sees the answer: are the targets the inputs shifted by "
          "one (seq[:, 1:] for the inputs seq[:, :-1]), and is the mask causal (True on and below the diagonal)?",
    above="Did you return the loss of the last steps (not the first), and call opt.zero_grad() every step?",
)
OPEN_RUN = Expected(
    "training loss without the mask", 0.15, 0.6,
    "the unmasked model copies each answer from the next position; only the last position, whose next token is "
    "not in the input, still pays ln 8, so the mean is near ln(8) / 8 = 0.26. A training loss this good is a "
    "leak, not learning: at generation time the future tokens do not exist.",
    below="Below ln(8) / 8: did the last position also see its target (inputs and targets of the same length "
          "T + 1)?",
    above="Did you really drop the mask (mask=None) in this run, and train for 200 steps at lr = 0.01?",
)


@checker("4.3", "training without the causal mask")
def check_mask_experiment(prediction: Any, fn: Callable[[bool, int], float]) -> str:
    """Run the learner's ``fn(causal, seed)`` (a one-block next-token model on random tokens, mean loss of the
    last 20 of 200 steps) with and without the causal mask and judge both losses."""
    guess = read_prediction(prediction, MASK_OPTIONS)
    masked = measure(fn, "train_next_token", True, 0)
    open_ = measure(fn, "train_next_token", False, 0)
    if masked == open_:
        raise CheckFailed("your two runs give the same loss: does `causal` decide the mask you pass to the block?")
    require_own_run(fn, "train_next_token", (False, 0), open_)
    masked_line = judge_range(masked, CAUSAL_RUN, what="your masked run", show=True)
    open_line = judge_range(open_, OPEN_RUN, what="your unmasked run", show=True)
    return f"{masked_line} {open_line} {compare_prediction(guess, 'lower', _MASK_WHY)}"
