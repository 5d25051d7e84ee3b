"""Induction behaviour, measured: repeated random sequences and a small attention-only model. Chapter 8.

An induction head completes repeats: having seen ``A B`` once, at the next ``A`` it attends to
the ``B`` that followed and predicts it (Olsson et al., 2022). Behaviour, not attention maps,
is the test: on a random sequence repeated twice, no model can predict the first copy better
than chance, and a model with induction heads predicts the second copy almost perfectly.

API:

- ``repeated_sequences(batch_size, half, vocab_size, generator)`` -> (B, 2 * half) ids: random
  tokens, then the same tokens again.
- ``per_position_loss(model, tokens)`` -> (2 * half - 1,) mean next-token loss in nats at every
  position (a model maps (B, T) ids to (B, T, V) logits).
- ``copy_losses(model, tokens)`` -> (first, second): mean loss on predictions inside the first
  copy and inside the second copy.
- ``AttentionOnly(vocab_size, d_model, n_heads, n_layers, max_len)``: embedding + learned
  positions, pre-LN causal self-attention blocks with residuals and no feed-forward network,
  a final LayerNorm and an output projection: the smallest model where induction heads form.
- ``varied_repeats(batch_size, length, vocab_size, generator)``: training data where the distance
  between the two copies varies, so that only induction, not a fixed look-back, solves it.

The recipe of the chapter's run (``INDUCTION_RECIPE``), its runner ``train_attention_only`` and the
cached ``reference_attention_only(n_layers)`` live in :mod:`course_utils.runs.induction`, on
Chapter 6's training loop.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .attention import MultiHeadAttention
from .masks import causal_mask
from .norm import LayerNorm
from .validate import check_model_tokens, check_module, check_positive_int, check_rank, check_token_ids


def repeated_sequences(batch_size: int, half: int, vocab_size: int, generator: torch.Generator | None = None) -> Tensor:
    """(batch_size, 2 * half) ids: ``half`` uniform random tokens, then the same tokens again. Chapter 8."""
    for name, value in (("batch_size", batch_size), ("half", half), ("vocab_size", vocab_size)):
        check_positive_int(name, value)
    _check_generator(generator)
    first = torch.randint(0, vocab_size, (batch_size, half), generator=generator)  # (B, half)
    return torch.cat([first, first], dim=1)  # (B, 2 * half)


def _check_generator(generator: object) -> None:
    if generator is not None and not isinstance(generator, torch.Generator):
        raise TypeError(f"generator must be a torch.Generator or None, got {type(generator).__name__}")


@torch.no_grad()
def per_position_loss(model: nn.Module, tokens: Tensor) -> Tensor:
    """Mean next-token cross-entropy (nats) at each position 0..T-2 of ``tokens`` (B, T): (T - 1,). Chapter 8."""
    check_module("model", model)
    vocab = getattr(getattr(model, "embedding", None), "num_embeddings", None)
    check_token_ids("tokens", tokens, vocab, "(B, T) of token ids")
    was_training = model.training
    model.eval()
    logits = model(tokens[:, :-1])  # (B, T - 1, V)
    model.train(was_training)
    losses = F.cross_entropy(logits.transpose(1, 2), tokens[:, 1:], reduction="none")  # (B, T - 1)
    return losses.mean(dim=0)


def copy_losses(model: nn.Module, tokens: Tensor) -> tuple[float, float]:
    """Mean loss on the predictions of the first copy's tokens 1..half-1 and the second copy's 1..half-1. Chapter 8.

    The prediction at position p is of token p + 1; the first token of each copy is skipped (the
    first is unpredictable, the second copy's first token follows nothing repeated yet).
    """
    check_module("model", model)
    half = check_rank("tokens", tokens, 2, "(B, 2 * half)").shape[1] // 2
    loss = per_position_loss(model, tokens)  # (2 * half - 1,): loss[p] predicts token p + 1
    return float(loss[: half - 1].mean()), float(loss[half:].mean())


class AttentionOnly(nn.Module):
    """Causal self-attention blocks with residuals and pre-LN, no FFN: where induction heads form. Chapter 8."""

    def __init__(self, vocab_size: int, d_model: int = 32, n_heads: int = 2, n_layers: int = 2, max_len: int = 64):
        super().__init__()
        for name, value in (("vocab_size", vocab_size), ("d_model", d_model), ("n_heads", n_heads),
                            ("n_layers", n_layers), ("max_len", max_len)):
            check_positive_int(name, value)
        self.embedding = nn.Embedding(vocab_size, d_model)
        self.positions = nn.Embedding(max_len, d_model)  # learned positions
        # fused: Chapter 3's LayerNorm through PyTorch's one kernel, the same maths, a third less training time here
        self.norms = nn.ModuleList(LayerNorm(d_model, fused=True) for _ in range(n_layers))
        self.attn = nn.ModuleList(MultiHeadAttention(d_model, n_heads) for _ in range(n_layers))
        self.final_norm = LayerNorm(d_model, fused=True)
        self.output_projection = nn.Linear(d_model, vocab_size)
        self.max_len = max_len

    def forward(self, tokens: Tensor, return_attention: bool = False) -> Tensor | tuple[Tensor, list[Tensor]]:
        """tokens (B, T) -> logits (B, T, V) [, attention weights (B, h, T, T) per layer]."""
        T = check_model_tokens("tokens", tokens, self.embedding.num_embeddings, self.max_len).shape[1]
        x = self.embedding(tokens) + self.positions(torch.arange(T, device=tokens.device))  # (B, T, d_model)
        mask = causal_mask(T, tokens.device)  # (1, 1, T, T)
        weights = []
        for norm, attn in zip(self.norms, self.attn, strict=True):
            h = norm(x)
            out, w = attn(h, h, h, mask=mask, need_weights=return_attention)
            x = x + out  # the residual stream: each layer adds what it read
            if w is not None:
                weights.append(w)
        logits = self.output_projection(self.final_norm(x))  # (B, T, V)
        return (logits, weights) if return_attention else logits


def varied_repeats(batch_size: int, length: int, vocab_size: int, generator: torch.Generator | None = None) -> Tensor:
    """(batch_size, length) ids: random tokens, then a random segment of h tokens twice, h varying per row. Chapter 8.

    Because the distance between the two copies changes from row to row, "look back a fixed
    number of positions" does not solve it; finding the earlier occurrence of the current token
    and reading what followed it (an induction head) does.
    """
    check_positive_int("batch_size", batch_size), check_positive_int("vocab_size", vocab_size)
    _check_generator(generator)
    check_positive_int("length", length)
    if length < 8:
        raise ValueError(f"length must be at least 8 (room for two copies of 4 tokens), got {length}")
    tokens = torch.randint(0, vocab_size, (batch_size, length), generator=generator)  # (B, length)
    h = torch.randint(4, length // 2 + 1, (batch_size,), generator=generator)  # (B,): segment length per row
    start = length - 2 * h  # (B,): the first copy starts here, the second at start + h
    pos = torch.arange(length)  # (length,)
    second = pos[None, :] >= (start + h)[:, None]  # (B, length): the second copy's positions
    source = (pos[None, :] - h[:, None]).clamp(min=0)  # (B, length): the same token one copy earlier
    return torch.where(second, tokens.gather(1, source), tokens)


def reference_attention_only(n_layers: int = 2) -> tuple[AttentionOnly, tuple[float, ...]]:
    """The chapter's run, trained once per session: :func:`course_utils.runs.induction.reference_attention_only`.

    Kept here because Chapter 8 imported it from this module; the recipe and the run live in
    :mod:`course_utils.runs.induction` (a teaching module holds no recipe). Chapter 8.
    """
    from .runs.induction import reference_attention_only as reference  # the one allowed lazy import of runs

    return reference(n_layers)
