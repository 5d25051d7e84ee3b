"""Checker for Chapter 10's debugging exercise (Exercise 10.5): tell a healthy toy model from three
broken ones by probing it, as the chapter's debugging table says.

The checker builds small causal attention models, each healthy or with one bug of the table (a mask
that lets position i see i + 1, no positional encoding, a -1e9 mask added in float16), hands them to
the learner's ``diagnose(model, vocab_size)`` in a shuffled order and names the probe that was missed.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor, nn

from ..positional import sinusoidal_encoding
from .core import CheckFailed, call_student, checker

__all__ = ["DIAGNOSES", "ToyCausalLM", "check_diagnose"]

DIAGNOSES = ("healthy", "leaking mask", "missing positions", "float16 overflow")


class ToyCausalLM(nn.Module):
    """One causal self-attention layer over embeddings, healthy or with one bug of Chapter 10's table."""

    pe: Tensor  # (max_len, d_model), a buffer

    def __init__(self, vocab_size: int, d_model: int, bug: str = "healthy", seed: int = 0, max_len: int = 32):
        super().__init__()
        if bug not in DIAGNOSES:
            raise ValueError(f"bug must be one of {DIAGNOSES}, got {bug!r}")
        gen = torch.Generator().manual_seed(seed)
        self.d_model = d_model
        # the bug lives only in this function's closure, so the learner's probe cannot read it off the model
        self._wiring = _wiring(bug)
        self.embedding = nn.Parameter(torch.randn(vocab_size, d_model, generator=gen) / math.sqrt(d_model))
        self.W = nn.Parameter(torch.randn(3, d_model, d_model, generator=gen) / math.sqrt(d_model))
        self.register_buffer("pe", sinusoidal_encoding(max_len, d_model))

    def forward(self, tokens: Tensor) -> Tensor:
        """tokens (B, T) -> outputs (B, T, d_model)."""
        T = tokens.shape[-1]
        x = self.embedding[tokens] * math.sqrt(self.d_model)  # (B, T, d_model)
        return self._wiring(x, self.pe[:T], self.W)


def _wiring(bug: str) -> Callable[[Tensor, Tensor, Tensor], Tensor]:
    """The forward pass after the embedding lookup, healthy or with ``bug`` (held in the closure)."""

    def forward(x: Tensor, pe: Tensor, W: Tensor) -> Tensor:
        T, d_model = x.shape[-2], x.shape[-1]
        if bug != "missing positions":
            x = x + pe
        q, k, v = (x @ w for w in W)  # (B, T, d_model) each
        scores = q @ k.transpose(-2, -1) / math.sqrt(d_model)  # (B, T, T)
        offset = 1 if bug == "leaking mask" else 0
        keep = torch.ones(T, T, dtype=torch.bool).tril(diagonal=offset)  # (T, T): True = attend
        if bug == "float16 overflow":  # the additive mask of many tutorials, in half precision
            blocked = (~keep).to(torch.float16)
            scores = (scores.to(torch.float16) + blocked * torch.tensor(-1e9).to(torch.float16)).float()
        else:
            scores = scores.masked_fill(~keep, float("-inf"))
        return torch.softmax(scores, dim=-1) @ v  # (B, T, d_model)

    return forward


_MISSED = {
    "leaking mask": "Change the token at the last position and compare the outputs at every earlier position: "
                    "a causal model's earlier outputs must not move (Chapter 4's leakage test).",
    "missing positions": "Swap two early tokens and look at a later output: with positions it changes, without "
                         "them attention only sees the set of earlier tokens (Chapter 1: attention ignores order).",
    "float16 overflow": "Look for NaN in the output first (torch.isnan): -1e9 does not fit in float16 and becomes "
                        "-inf, and -inf times a 0 in the mask is NaN (Chapter 4).",
    "healthy": "A test of yours fires on a healthy model: compare outputs with torch.allclose and a small tolerance, "
               "change one thing per probe, and check NaN before comparing anything.",
}

# The probe that fired on a model without its bug: (what the learner answered) -> what to fix in that probe.
_FALSE_ALARM = {
    "leaking mask": "Your leakage probe fires on a model whose mask does not leak (it has {bug}). Change only a "
                    "later token (the last one) and compare only the outputs at the positions before it: the "
                    "changed position's own output moves in every model, and so does every output after it.",
    "missing positions": "Your order probe fires on a model that has its positional encoding (it has {bug}). "
                         "Swap two early tokens and compare only the outputs after both of them: the swapped "
                         "positions' own outputs change in every model, with or without positions.",
    "float16 overflow": "Your NaN probe fires on a model without NaN (it has {bug}): test torch.isnan(out).any() "
                        "on the output itself, not on a difference of outputs or on a threshold.",
}


def _hint(bug: str, got: str) -> str:
    """What the learner should fix when a model with ``bug`` was diagnosed as ``got``."""
    if bug == "float16 overflow" or got == "healthy":
        return _MISSED[bug]  # NaN broke a later comparison, or the probe for ``bug`` never fired
    if bug == "healthy":
        return _FALSE_ALARM[got].format(bug="no bug") + " " + _MISSED["healthy"]
    return _FALSE_ALARM[got].format(bug=f"a {bug}" if bug == "leaking mask" else bug)


@checker("10.5", "diagnose a broken model")
def check_diagnose(fn: Callable[[nn.Module, int], Any]) -> str:
    """Check ``fn(model, vocab_size) -> str``, one of DIAGNOSES, on shuffled healthy and broken toy models."""
    order = torch.randperm(4 * len(DIAGNOSES), generator=torch.Generator().manual_seed(10)).tolist()
    cases = [(DIAGNOSES[i % len(DIAGNOSES)], i // len(DIAGNOSES)) for i in order]
    for bug, seed in cases:
        vocab_size, d_model = 12 + 3 * seed, 8 + 4 * (seed % 2)
        model = ToyCausalLM(vocab_size, d_model, bug, seed).eval()
        got = call_student(fn, model, vocab_size, what="diagnose")
        if not isinstance(got, str) or got not in DIAGNOSES:
            raise CheckFailed(f"diagnose should return one of {list(DIAGNOSES)}, got {got!r}")
        if got != bug:
            raise CheckFailed(f"a model with bug {bug!r} was diagnosed as {got!r}. {_hint(bug, got)}")
    return f"{len(cases)} models, each diagnosed right: healthy, leaking mask, missing positions and float16 overflow."
