"""Checkers for the exercises of Chapter 7 (reading attention heatmaps).

Each checker runs the learner's function on seeded synthetic attention weights (rows that sum
to 1, some exact zeros where keys are padding), compares with :mod:`course_utils.analysis`,
and names the likely mistake when the answer matches what a typical wrong version returns.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from torch import Tensor

from ..analysis import alignment_score, attention_entropy, copy_targets, reversal_targets
from .core import CheckFailed, as_int, call_student, checker, expect_close, expect_tensor, fail_on_mistake
from .experiment import Expected, compare_prediction, judge_range, read_prediction

__all__ = [
    "check_alignment_score", "check_copy_targets", "check_entropy", "check_knockout", "check_strongest_head",
    "zero_head",
]


def _cross_weights(lengths: list[int], h: int, T_q: int, T_k: int, seed: int) -> Tensor:
    """Random cross-attention weights (B, h, T_q, T_k) that ignore padded keys (exact zeros there)."""
    g = torch.Generator().manual_seed(seed)
    scores = torch.randn(len(lengths), h, T_q, T_k, generator=g) * 2
    keep = torch.arange(T_k).unsqueeze(0) < torch.tensor(lengths).unsqueeze(1)  # (B, T_k)
    scores = scores.masked_fill(~keep[:, None, None, :], float("-inf"))
    return torch.softmax(scores, dim=-1)


def _cases() -> list[tuple[Tensor, Tensor]]:
    """(weights, src_lengths) pairs: mixed lengths, equal lengths, one example, length 1."""
    out = []
    for seed, (lengths, h) in enumerate([([4, 7, 2, 5], 3), ([6, 6], 2), ([5], 4), ([1, 3], 2)]):
        T_k = max(lengths) + 1  # room for an EOS / padding column
        T_q = max(lengths) + 1  # one output step per character, plus EOS
        out.append((_cross_weights(lengths, h, T_q, T_k, seed + 70), torch.tensor(lengths)))
    return out


def _mass_at(weights: Tensor, target: Tensor) -> Tensor:
    """Mean over counting (b, t) of weights[b, :, t, target[b, t]], target -1 = skip; no validation."""
    rows = weights.permute(0, 2, 1, 3)[target >= 0]  # (N, h, T_k)
    idx = target[target >= 0].view(-1, 1, 1).expand(-1, rows.shape[1], 1)
    return rows.gather(-1, idx).squeeze(-1).mean(0)


# ---------------------------------------------------------------- 7.1 alignment score
def _alignment_mistakes(weights: Tensor, lengths: Tensor) -> dict[str, Tensor]:
    B, _, T_q, T_k = weights.shape
    t = torch.arange(T_q).unsqueeze(0).expand(B, T_q)  # (B, T_q)
    L = lengths.unsqueeze(1)  # (B, 1)
    real = t < L
    padded = torch.where(real & (T_k - 1 - t >= 0), T_k - 1 - t, -1)
    off_by_one = torch.where(real & (L - t < T_k), L - t, -1)
    with_eos = torch.where(t <= L, (L - 1 - t) % T_k, -1)  # t = L gives index -1: Python picks the last key
    ref = reversal_targets(lengths, T_q)
    per_example = torch.stack([_mass_at(weights[b:b + 1], ref[b:b + 1]) for b in range(B)]).mean(0)
    return {
        "Output step t copies source position L-1-t (the anti-diagonal), not t: you measured the main diagonal.":
            _mass_at(weights, copy_targets(lengths, T_q)),
        "Use each example's real length L, not the padded width T_k: the target is L-1-t.":
            _mass_at(weights, padded),
        "Off by one: output step t copies source position L-1-t, not L-t.":
            _mass_at(weights, off_by_one),
        "Leave out the EOS step (t = L) and the padding steps: they copy no source character "
        "(and index L-1-t = -1 silently picks the last key).":
            _mass_at(weights, with_eos),
        "Average over all (example, step) pairs together, not per example first: longer strings "
        "have more steps and should weigh more.":
            per_example,
        "Divide the summed mass by the number of counted steps (the sum of the lengths), not by B * T_q: "
        "padding steps are not counted.":
            _mass_at(weights, ref) * lengths.sum() / (B * T_q),
        "Divide the summed mass by the number of counted steps (the sum of the lengths), not by the batch "
        "size B.": _mass_at(weights, ref) * lengths.sum() / B,
        "Average the mass over the counted steps (mean), do not sum it.": _mass_at(weights, ref) * lengths.sum(),
    }


@checker("7.1", "anti-diagonal alignment score")
def check_alignment_score(fn: Callable[[Tensor, Tensor], Tensor]) -> str:
    """Check ``fn(weights, src_lengths) -> (h,)``: mean mass on source L-1-t over steps t < L. Chapter 7."""
    for weights, lengths in _cases():
        got = call_student(fn, weights.clone(), lengths.clone(), what="my_alignment_score")
        want = alignment_score(weights, reversal_targets(lengths, weights.shape[2]))
        expect_close(got, want, f"my_alignment_score for lengths {lengths.tolist()}",
                     _alignment_mistakes(weights, lengths))
    perfect = torch.zeros(1, 1, 4, 4)
    perfect[0, 0, torch.arange(3), torch.tensor([2, 1, 0])] = 1.0
    perfect[0, 0, 3, 3] = 1.0  # the EOS step looks at the EOS key
    got = call_student(fn, perfect, torch.tensor([3]), what="my_alignment_score")
    expect_close(got, torch.ones(1), "my_alignment_score on a perfect anti-diagonal", {
        "Leave out the EOS step (t = L): it copies no source character.": torch.tensor([0.75]),
    })
    return "A perfect anti-diagonal scores 1, uniform attention over T keys scores 1/T."


# ---------------------------------------------------------------- 7.2 entropy
def _entropy_cases() -> list[tuple[Tensor, Tensor]]:
    out = []
    for weights, lengths in _cases():
        T_q = weights.shape[2]
        query_mask = torch.arange(T_q).unsqueeze(0) <= lengths.unsqueeze(1)  # (B, T_q): characters and EOS
        out.append((weights, query_mask))
    return out


@checker("7.2", "entropy of attention rows")
def check_entropy(fn: Callable[[Tensor, Tensor], Tensor]) -> str:
    """Check ``fn(weights, query_mask) -> (h,)``: mean entropy in nats over the counting rows. Chapter 7."""
    for weights, query_mask in _entropy_cases():
        got = call_student(fn, weights.clone(), query_mask.clone(), what="my_entropy")
        got = expect_tensor(got, "my_entropy", (weights.shape[1],))
        if torch.isnan(got).any():
            raise CheckFailed(
                "my_entropy returned NaN. Padded keys have weight exactly 0 and 0 * log(0) is "
                "0 * (-inf) = NaN; the limit is 0: use torch.special.xlogy(p, p) or drop zero weights."
            )
        want = attention_entropy(weights, query_mask)
        rows_all = -torch.special.xlogy(weights, weights).sum(-1)  # (B, h, T_q)
        rows = rows_all.permute(0, 2, 1)[query_mask]  # (N, h)
        mistakes = {
            "Use the natural logarithm (nats), not log2 (bits).": want / math.log(2),
            "Average only over the rows that count (query_mask True): padding rows are not real queries.":
                rows_all.mean(dim=(0, 2)),
            "Average the row entropies over the counting rows (mean), do not sum them.": rows.sum(0),
            "Entropy is minus the sum of p log p: the sign is flipped.": -want,
            "Use the natural logarithm (nats), not log10.": want / math.log(10),
            "A row's entropy is the sum of -p log p over its keys, not the mean over keys.":
                want / weights.shape[-1],
            "The query mask is inverted: query_mask is True on the rows that count, so average "
            "rows_all[query_mask], not the padding rows.": rows_all.permute(0, 2, 1)[~query_mask].mean(0)
            if (~query_mask).any() else want * float("nan"),
            "Keep one entropy per head: average over the examples and rows only, not over the heads too.":
                want.mean().expand_as(want),
        }
        expect_close(got, want, f"my_entropy on weights of shape {tuple(weights.shape)}", mistakes)
    one_hot = torch.zeros(1, 2, 3, 5)
    one_hot[..., 1] = 1.0
    got = call_student(fn, one_hot, torch.ones(1, 3, dtype=torch.bool), what="my_entropy")
    expect_close(got, torch.zeros(2), "my_entropy of one-hot rows", {
        "my_entropy returned NaN on one-hot rows: 0 * log(0) must count as 0.": torch.full((2,), float("nan")),
    })
    return "One-hot rows have entropy 0 and uniform rows over T keys have ln(T)."


# ---------------------------------------------------------------- 7.3 strongest head
def _as_pair(got: Any, flat: int) -> tuple[int, int]:
    if isinstance(got, Tensor) and got.numel() == 1:
        got = int(got)
    if isinstance(got, (int, np.integer)) and not isinstance(got, bool):
        hint = " Turn the flat index into (layer, head) with divmod(index, n_heads)." if got == flat else ""
        raise CheckFailed(f"strongest_head should return a pair (layer, head), got the int {int(got)}.{hint}")
    if isinstance(got, (str, bytes)) or not hasattr(got, "__iter__"):
        raise CheckFailed(f"strongest_head should return a pair of ints (layer, head), got {type(got).__name__}")
    pair = tuple(as_int(v, "each entry of strongest_head's pair") for v in got)
    if len(pair) != 2:
        raise CheckFailed(f"strongest_head should return a pair (layer, head), got {len(pair)} values")
    return pair[0], pair[1]


@checker("7.3", "find the strongest head")
def check_strongest_head(fn: Callable[[Tensor], Any]) -> str:
    """Check ``fn(scores (n_layers, n_heads)) -> (layer, head)`` of the largest score. Chapter 7."""
    g = torch.Generator().manual_seed(73)
    mistakes: dict[str, Callable[[Tensor], tuple[int, int]]] = {
        "the pair is swapped: return (layer, head); rows are layers and columns are heads.":
            lambda s: divmod(int(s.argmax()), s.shape[1])[::-1],
        "you found the weakest head: use argmax, not argmin.":
            lambda s: divmod(int(s.argmin()), s.shape[1]),
        "divide the flat index by the number of heads (columns), not of layers.":
            lambda s: divmod(int(s.argmax()), s.shape[0]),
        "indices count from 0: the first layer and the first head are 0, not 1 (you added 1 to the head).":
            lambda s: (lambda lh: (lh[0], lh[1] + 1))(divmod(int(s.argmax()), s.shape[1])),
        "indices count from 0: the first layer and the first head are 0, not 1 (you added 1 to both).":
            lambda s: (lambda lh: (lh[0] + 1, lh[1] + 1))(divmod(int(s.argmax()), s.shape[1])),
        "you took the largest score of each layer and then the first layer, not the overall largest score.":
            lambda s: (0, int(s[0].argmax())),
    }
    answers = []
    for shape in [(3, 4), (2, 5), (1, 3), (4, 1), (2, 2), (3, 4), (2, 3)]:
        scores = torch.rand(*shape, generator=g)
        got = call_student(fn, scores.clone(), what="strongest_head")
        answers.append((scores, _as_pair(got, int(scores.argmax()))))
    wrong = [(s, pair) for s, pair in answers if pair != divmod(int(s.argmax()), s.shape[1])]
    if not wrong:
        return "It returns (layer, head) of the largest score."
    fail_on_mistake(answers, mistakes, lambda got, mistake: all(pair == tuple(mistake(s)) for s, pair in got))
    scores, pair = wrong[0]
    raise CheckFailed(f"for scores of shape {tuple(scores.shape)} the strongest head is (layer, head) = "
                      f"{divmod(int(scores.argmax()), scores.shape[1])}, got {pair}.")


# ---------------------------------------------------------------- 7.4 copy-task targets
@checker("7.4", "predict the copy-task pattern")
def check_copy_targets(fn: Callable[[Tensor, int], Tensor]) -> str:
    """Check ``fn(src_lengths, T_q) -> (B, T_q)``: position t for t < L, else -1. Chapter 7."""
    for lengths, T_q in [([3, 5, 1], 6), ([4], 5), ([2, 2], 4), ([7, 3], 9)]:
        src_lengths = torch.tensor(lengths)
        got = call_student(fn, src_lengths.clone(), T_q, what="my_copy_targets")
        got = expect_tensor(got, f"my_copy_targets({lengths}, {T_q})", (len(lengths), T_q))
        if got.dtype.is_floating_point or got.dtype == torch.bool:
            raise CheckFailed(f"my_copy_targets should return integer positions (torch.long), got dtype {got.dtype}")
        want = copy_targets(src_lengths, T_q)
        t = torch.arange(T_q).unsqueeze(0).expand(len(lengths), T_q)
        real = t < src_lengths.unsqueeze(1)
        mistakes = {
            "That is the reversal pattern (L-1-t). In a copy task output step t copies source position t: "
            "the main diagonal.": reversal_targets(src_lengths, T_q),
            "Steps t >= L (EOS and padding) copy nothing: mark them -1.": t,
            "Off by one: output step t predicts character t and copies source position t (the decoder "
            "input is shifted, the output is not).": torch.where(real, t - 1, -1),
            "Off by one: output step t copies source position t, not t+1.": torch.where(real, t + 1, -1),
            "Use < L, not <= L: the EOS step (t = L) copies nothing and gets -1.":
                torch.where(t <= src_lengths.unsqueeze(1), t, -1),
            "Use -1 (not 0) for the steps that copy nothing.": torch.where(real, t, 0),
        }
        expect_close(got.long(), want, f"my_copy_targets({lengths}, {T_q})", mistakes)
    return "A copy model's cross-attention should light up the main diagonal."


# ---------------------------------------------------------------- 7.5 experiment: knock out copy heads
def zero_head(merged: Tensor, head: int, n_heads: int) -> Tensor:
    """Reference for 7.5: merged heads (B, T, d_model) with head ``head``'s d_k columns set to 0. Chapter 7."""
    d_k = merged.shape[-1] // n_heads
    keep = torch.ones(merged.shape[-1], dtype=merged.dtype)
    keep[head * d_k : (head + 1) * d_k] = 0
    return merged * keep  # (B, T, d_model)


KNOCKOUT_OPTIONS = {
    "barely changes": "the other heads take over: exact match stays at 97 % or more",
    "drops, most strings survive": "exact match falls, but stays between 60 and 97 %",
    "collapses": "exact match falls below 60 %",
}
ONE_HEAD = Expected(
    "exact match on lengths 3-10 with the strongest copy head knocked out", 0.6, 0.97,
    "one head is not the whole copy mechanism: the other heads of its layer also align with the letter to copy and "
    "carry most strings, but not all of them.",
    below="Knock out one head only: zero its d_k columns of the merged heads, not more.",
    above="Did your function change anything? Zero the columns head * d_k .. (head + 1) * d_k - 1.",
)
WHOLE_LAYER = Expected(
    "exact match on lengths 3-10 with every cross-attention head of that layer knocked out", 0.0, 0.3,
    "without that layer's cross-attention the decoder can no longer read the letter to copy: the mechanism is "
    "shared by the heads of the layer, and redundant between them.",
    above="Does your function zero the head it is given? The whole layer should be silenced here.",
)


def _knockout_em(model: Any, layer: int, heads: list[int], fn: Callable[..., Tensor]) -> float:
    from ..evaluation import evaluate_by_length

    mha = model.decoder_layers[layer].cross_attn
    n_heads = mha.n_heads

    def pre_hook(module: Any, inputs: tuple[Tensor, ...]) -> tuple[Tensor]:
        merged = inputs[0]
        for head in heads:
            merged = call_student(fn, merged, head, n_heads, what="your zero_head")
            merged = expect_tensor(merged, "zero_head(merged, head, n_heads)", inputs[0].shape)
        return (merged,)

    handle = mha.W_O.register_forward_pre_hook(pre_hook)
    try:
        scores = evaluate_by_length(model, range(3, 11), n_per_length=30)
    finally:
        handle.remove()
    return sum(scores[n]["exact_match"] for n in scores) / len(scores)


@checker("7.5", "knock out the copy heads")
def check_knockout(fn: Callable[[Tensor, int, int], Tensor], prediction: Any) -> str:
    """Record the prediction, check ``fn(merged, head, n_heads)`` zeroes one head's columns, then knock out the
    shipped model's strongest cross-attention head, and then its whole layer, and judge the exact matches."""
    guess = read_prediction(prediction, KNOCKOUT_OPTIONS)
    g = torch.Generator().manual_seed(0)
    for B, T, h, d_k, head in ((2, 3, 4, 2, 1), (1, 5, 2, 3, 0), (3, 2, 8, 1, 7)):
        merged = torch.randn(B, T, h * d_k, generator=g)
        got = call_student(fn, merged, head, h, what="your zero_head")
        got = expect_tensor(got, "zero_head(merged, head, n_heads)", merged.shape)
        want = zero_head(merged, head, h)
        mistakes = {
            "You zeroed a position (dimension 1 is time); the heads sit side by side in the last dimension, "
            "d_k columns each.": merged.index_fill(1, torch.tensor([head]), 0.0) if head < T else merged,
            "You kept the head and zeroed all the others: zero only the given head.": merged - want,
            "Nothing changed: set the head's d_k columns to zero (multiply by a 0/1 mask or use torch.where).": merged,
            "You zeroed one column only: a head owns d_k columns.":
                merged.index_fill(-1, torch.tensor([head * d_k]), 0.0),
        }
        expect_close(got, want, "zero_head(merged, head, n_heads)", mistakes=mistakes)
    from ..data import make_batch, random_strings
    from ..runs.reversal import load_reversal_model

    model = load_reversal_model()
    strings = random_strings(200, 3, 10, generator=torch.Generator().manual_seed(0))
    src, tgt_in, _ = make_batch(strings)
    with torch.no_grad():
        _, weights = model(src, tgt_in, return_attention=True)
    targets = reversal_targets(torch.tensor([len(s) for s in strings]), tgt_in.shape[1])
    table = torch.stack([alignment_score(w, targets) for w in weights["cross"]])  # (n_layers, h)
    layer, head = divmod(int(table.argmax()), table.shape[1])
    one = _knockout_em(model, layer, [head], fn)
    whole = _knockout_em(model, layer, list(range(table.shape[1])), fn)
    outcome = "barely changes" if one >= 0.97 else "collapses" if one < 0.6 else "drops, most strings survive"
    return (f"Knocked out: layer {layer + 1}, head {head + 1}, the head with the highest alignment score. "
            f"{judge_range(one, ONE_HEAD, what='the exact match', show=True)} "
            f"{judge_range(whole, WHOLE_LAYER, what='the exact match', show=True)} "
            f"{compare_prediction(guess, outcome)}")
