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
from .core import CheckFailed, as_number, call_student, checker, expect_close, expect_tensor, fmt_number

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
            "Drop the last column of tgt_out, not the first: tgt_in = [SOS] + tgt_out[:, :-1].":
                (lambda t: t.masked_fill(t == EOS_ID, PAD_ID))(torch.cat([sos, tgt_out[:, 1:]], dim=1)),
            "EOS became PAD but SOS is missing: put SOS (id 1) in the first column, then tgt_out[:, :-1].":
                tgt_out.masked_fill(tgt_out == EOS_ID, PAD_ID),
        }
        expect_close(got.long(), want, "shift_right(tgt_out)", mistakes=mistakes, atol=0, rtol=0)


def _ce_inputs(seed: int) -> tuple[Tensor, Tensor, int]:
    """(logits, targets, pad_id): PAD is id 0 in the first cases and id 28 ('z') in the last one."""
    g = torch.Generator().manual_seed(seed)
    strings = _STRINGS[seed % len(_STRINGS)] if seed < len(_STRINGS) else ["abc", "hello", "q"]
    _, _, targets = make_batch(strings)
    logits = torch.randn(*targets.shape, 29, generator=g) * 2  # (B, T, V)
    if seed < len(_STRINGS):
        return logits, targets, PAD_ID
    return logits, targets.masked_fill(targets == PAD_ID, 28), 28  # no 'z' in these strings


@checker("6.2", "cross-entropy that ignores PAD")
def check_masked_cross_entropy(fn: Callable[[Tensor, Tensor, int], Tensor]) -> None:
    """Check ``fn(logits, targets, pad_id)`` is the mean cross-entropy over the non-PAD targets."""
    for seed in range(4):
        logits, targets, pad_id = _ce_inputs(seed)
        got = call_student(fn, logits.clone(), targets.clone(), pad_id, what="your masked_cross_entropy")
        if not isinstance(got, Tensor):
            got = torch.tensor(as_number(got, "masked_cross_entropy(logits, targets, pad_id)"))
        got = expect_tensor(got, "masked_cross_entropy(logits, targets, pad_id)")
        if got.dim() != 0:
            raise CheckFailed(f"the loss should be a single number (a 0-d tensor), got shape {tuple(got.shape)}.")
        V = logits.shape[-1]
        flat_logits, flat_targets = logits.reshape(-1, V), targets.reshape(-1)
        per_token = F.cross_entropy(flat_logits, flat_targets, reduction="none").view(targets.shape)  # (B, T)
        real = (targets != pad_id).float()
        mistakes = {}
        if pad_id != 0:
            mistakes[f"Use the pad_id argument (here {pad_id}): your loss ignores a fixed id 0 instead."] = (
                F.cross_entropy(flat_logits, flat_targets, ignore_index=0)
            )
        mistakes.update({
            "You averaged over the PAD positions too: they must count neither in the sum nor in the number "
            "of tokens (use ignore_index=pad_id, or a mask).": per_token.mean(),
            "PAD is excluded from the sum but you still divided by all B*T positions.":
                (per_token * real).sum() / targets.numel(),
            "You returned the sum over tokens; the loss should be the mean over the non-PAD tokens.":
                (per_token * real).sum(),
            "You averaged per sequence first and then over the batch; average over all real tokens at once.":
                ((per_token * real).sum(1) / real.sum(1)).mean(),
            "The sign is flipped: cross-entropy is minus the mean log-probability of the targets.":
                -masked_cross_entropy(logits, targets, pad_id),
            "Take log_softmax of the logits first: the logits themselves are not log-probabilities.":
                -(logits.gather(-1, targets.unsqueeze(-1)).squeeze(-1) * real).sum() / real.sum(),
            "The mask is inverted: average over the positions where targets != pad_id.":
                (per_token * (1 - real)).sum() / (1 - real).sum(),
        })
        want = masked_cross_entropy(logits, targets, pad_id)
        expect_close(got, want, f"the loss with pad_id={pad_id}", mistakes=mistakes, atol=1e-5, rtol=1e-5)


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
            "Return probabilities (softmax), not log-probabilities (log_softmax).":
                torch.log_softmax(logits / temperature, dim=-1),
            "Use the temperature argument: your result matches a fixed temperature of 1.0.":
                torch.softmax(logits / 1.0, dim=-1),
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
        (["ba", "ab", "q"], ["ab", "ba", "x"]),  # right strings in the wrong places: nothing matches
    ]
    for preds, targets in cases:
        got = call_student(fn, list(preds), list(targets), what="your exact_match")
        got = as_number(got, f"exact_match({preds}, {targets})")
        want = exact_match(preds, targets)
        def near(a: float, b: float) -> bool:
            return math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-9)  # a float32 answer counts

        if near(got, want):
            continue
        n = len(targets)
        prefix = sum(all(a == b for a, b in zip(p, t, strict=False)) for p, t in zip(preds, targets, strict=True))
        chars = sum(sum(a == b for a, b in zip(p, t, strict=False)) for p, t in zip(preds, targets, strict=True))
        anywhere = sum(p in targets for p in preds)
        if near(got, sum(p == t for p, t in zip(preds, targets, strict=True))):
            raise CheckFailed("You returned the number of matches; return the fraction (divide by len(targets)).")
        if near(got, 100 * want):
            raise CheckFailed("You returned a percentage; return the fraction between 0 and 1.")
        if near(got, anywhere / n):
            raise CheckFailed(
                "A prediction counted as right when it equals any target: compare each prediction with its own "
                "target, pairing them with zip(predictions, targets)."
            )
        if near(got, prefix / n):
            raise CheckFailed(
                "A prediction that is a prefix of the target (or longer than it) counted as right: zip() stops "
                "at the shorter string. Compare whole strings with ==."
            )
        if near(got, chars / sum(len(t) for t in targets)):
            raise CheckFailed("That is per-character (token) accuracy; exact match compares whole strings.")
        if near(got, 1 - want):
            raise CheckFailed("You returned the fraction of mismatches; exact match counts the equal pairs.")
        raise CheckFailed(
            f"exact_match({preds}, {targets}) should be {fmt_number(want, got)}, got {fmt_number(got, want)}."
        )
