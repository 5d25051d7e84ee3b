"""Checkers for the exercises of Chapter 6 (training on string reversal)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import torch
import torch.nn.functional as F
from torch import Tensor

from ..data import EOS_ID, PAD_ID, SOS_ID, make_batch
from ..evaluation import exact_match
from ..training import masked_cross_entropy
from .core import CheckFailed, call_student, checker, expect_close, expect_tensor

_STRINGS = (["abc", "hello", "q"], ["xyz"], ["reverse", "me", "please", "now"])


@checker("6.1", "teacher-forcing shift")
def check_shift_right(fn: Callable[[Tensor], Tensor]) -> None:
    """Check ``fn(tgt_out)`` builds the decoder input: SOS, then tgt_out shifted right, EOS -> PAD."""
    for strings in _STRINGS:
        _, want, tgt_out = make_batch(strings)
        got = call_student(fn, tgt_out.clone(), what="your shift_right")
        got = expect_tensor(got, "shift_right(tgt_out)")
        if got.shape != want.shape:
            raise CheckFailed(
                f"shift_right(tgt_out) should keep the shape {tuple(want.shape)} of tgt_out, got {tuple(got.shape)}. "
                "Drop the last column after putting SOS in front."
            )
        B = tgt_out.shape[0]
        sos = torch.full((B, 1), SOS_ID)
        keep_eos = torch.cat([sos, tgt_out[:, :-1]], dim=1)
        mistakes = {
            "The EOS token is still in the decoder input: replace it by PAD (the decoder never reads EOS).":
                keep_eos,
            "Off by one: you shifted left. The decoder input starts with SOS and lags the target by one step.":
                torch.cat([tgt_out[:, 1:], torch.full((B, 1), PAD_ID)], dim=1),
            "The first input token must be SOS (id 1), not PAD.":
                torch.cat([torch.full((B, 1), PAD_ID), tgt_out[:, :-1]], dim=1).masked_fill(keep_eos == EOS_ID, PAD_ID),
            "You returned tgt_out unchanged: the input at step t must be the target of step t - 1.": tgt_out,
        }
        expect_close(got.long(), want, "shift_right(tgt_out)", mistakes=mistakes, atol=0, rtol=0)


def _ce_inputs(seed: int) -> tuple[Tensor, Tensor]:
    g = torch.Generator().manual_seed(seed)
    _, _, targets = make_batch(_STRINGS[seed % len(_STRINGS)])
    logits = torch.randn(*targets.shape, 29, generator=g) * 2  # (B, T, V)
    return logits, targets


@checker("6.2", "cross-entropy that ignores PAD")
def check_masked_cross_entropy(fn: Callable[[Tensor, Tensor, int], Tensor]) -> None:
    """Check ``fn(logits, targets, pad_id)`` is the mean cross-entropy over the non-PAD targets."""
    for seed in range(3):
        logits, targets = _ce_inputs(seed)
        got = call_student(fn, logits.clone(), targets.clone(), PAD_ID, what="your masked_cross_entropy")
        got = expect_tensor(got, "masked_cross_entropy(logits, targets, pad_id)")
        if got.dim() != 0:
            raise CheckFailed(f"the loss should be a single number (a 0-d tensor), got shape {tuple(got.shape)}.")
        flat_logits, flat_targets = logits.reshape(-1, 29), targets.reshape(-1)
        per_token = F.cross_entropy(flat_logits, flat_targets, reduction="none").view(targets.shape)  # (B, T)
        real = (targets != PAD_ID).float()
        mistakes = {
            "You averaged over the PAD positions too: they must count neither in the sum nor in the number "
            "of tokens (use ignore_index=pad_id, or a mask).": per_token.mean(),
            "PAD is excluded from the sum but you still divided by all B*T positions.":
                (per_token * real).sum() / targets.numel(),
            "You returned the sum over tokens; the loss should be the mean over the non-PAD tokens.":
                (per_token * real).sum(),
            "You averaged per sequence first and then over the batch; average over all real tokens at once.":
                ((per_token * real).sum(1) / real.sum(1)).mean(),
        }
        want = masked_cross_entropy(logits, targets, PAD_ID)
        expect_close(got, want, "the loss", mistakes=mistakes, atol=1e-5, rtol=1e-5)


@checker("6.3", "temperature softmax")
def check_temperature_probs(fn: Callable[[Tensor, float], Tensor]) -> None:
    """Check ``fn(logits, temperature)`` returns softmax(logits / temperature) over the last dimension."""
    g = torch.Generator().manual_seed(0)
    for temperature in (0.8, 2.0, 0.25):
        logits = torch.randn(3, 29, generator=g) * 3  # (B, V)
        got = call_student(fn, logits.clone(), temperature, what="your temperature_probs")
        want = torch.softmax(logits / temperature, dim=-1)
        mistakes = {
            "You multiplied the logits by the temperature; divide them (T < 1 must sharpen the distribution).":
                torch.softmax(logits * temperature, dim=-1),
            "The temperature is not used: divide the logits by it before the softmax.": torch.softmax(logits, dim=-1),
            "You divided the probabilities, not the logits, by the temperature (and they no longer sum to 1).":
                torch.softmax(logits, dim=-1) / temperature,
            "The softmax runs over the wrong dimension: use dim=-1 (the vocabulary).":
                torch.softmax(logits / temperature, dim=0),
        }
        expect_close(got, want, f"temperature_probs(logits, {temperature})", mistakes=mistakes)
    return None


@checker("6.4", "exact-match accuracy")
def check_exact_match(fn: Callable[[Sequence[str], Sequence[str]], float]) -> None:
    """Check ``fn(predictions, targets)`` is the fraction of predictions equal to their target."""
    cases = [
        (["cba", "olle", "zyx", "ab"], ["cba", "olleh", "zyx", "ba"]),
        (["olleh", "ba"], ["olleh", "ba"]),
        (["olleha", "xy", "q"], ["olleh", "yx", "q"]),
    ]
    for preds, targets in cases:
        got = call_student(fn, list(preds), list(targets), what="your exact_match")
        if isinstance(got, Tensor):
            got = got.item()
        if not isinstance(got, (int, float)):
            raise CheckFailed(f"exact_match should return a number, got {type(got).__name__}.")
        want = exact_match(preds, targets)
        if math.isclose(got, want, abs_tol=1e-9):
            continue
        prefix = sum(all(a == b for a, b in zip(p, t, strict=False)) for p, t in zip(preds, targets, strict=True))
        chars = sum(sum(a == b for a, b in zip(p, t, strict=False)) for p, t in zip(preds, targets, strict=True))
        if math.isclose(got, sum(p == t for p, t in zip(preds, targets, strict=True))):
            raise CheckFailed("You returned the number of matches; return the fraction (divide by len(targets)).")
        if math.isclose(got, prefix / len(targets)):
            raise CheckFailed(
                "A prediction that is a prefix of the target (or longer than it) counted as right: zip() stops "
                "at the shorter string. Compare whole strings with ==."
            )
        if math.isclose(got, chars / sum(len(t) for t in targets)):
            raise CheckFailed("That is per-character (token) accuracy; exact match compares whole strings.")
        raise CheckFailed(f"exact_match({preds}, {targets}) should be {want:.4g}, got {got:.4g}.")
