"""An encoder-only masked-language model on the tiny Shakespeare characters (BERT, Devlin et
al. 2019, in miniature): Chapter 5's encoder blocks with no causal mask, BERT's masking rule,
the loss on masked positions only, and the measurements that compare it with Chapter 8's
decoder-only model. Chapter 12.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from .charlm import consecutive_windows
from .model import EncoderBlock, init_weights
from .norm import LayerNorm
from .positional import SinusoidalPositionalEncoding
from .validate import (
    check_bool,
    check_finite,
    check_float_tensor,
    check_int,
    check_model_tokens,
    check_module,
    check_number,
    check_positive_int,
    check_rank,
    check_token_ids,
)

IGNORE = -100  # target of a position that is not scored (cross_entropy's ignore_index)


def bert_mask(ids: Tensor, vocab_size: int, mask_id: int, rate: float = 0.15,
              generator: torch.Generator | None = None) -> tuple[Tensor, Tensor]:
    """BERT's masking rule on ids (B, T): (inputs, targets), targets IGNORE where not chosen. Chapter 12.

    Each position is chosen with probability ``rate``; a chosen position becomes ``mask_id``
    with probability 0.8, a uniformly random id in [0, vocab_size) with 0.1, and stays as it
    is with 0.1 (Devlin et al. 2019, section 3.1). Targets hold the original id at chosen
    positions, so the loss is computed on them only.
    """
    check_positive_int("vocab_size", vocab_size)
    check_token_ids("ids", ids, vocab_size, "(B, T) of character ids ([MASK] is not an input id)")
    check_int("mask_id", mask_id, low=vocab_size)  # [MASK] is an id of its own, after the characters
    check_number("rate", rate, 0.0, 1.0)
    if generator is not None and not isinstance(generator, torch.Generator):
        raise TypeError(f"generator must be a torch.Generator or None, got {type(generator).__name__}")
    chosen = torch.rand(ids.shape, generator=generator) < rate  # (B, T)
    action = torch.rand(ids.shape, generator=generator)  # (B, T): < 0.8 mask, < 0.9 random, else keep
    random_ids = torch.randint(0, vocab_size, ids.shape, generator=generator)  # (B, T)
    inputs = torch.where(chosen & (action < 0.8), torch.full_like(ids, mask_id), ids)
    inputs = torch.where(chosen & (action >= 0.8) & (action < 0.9), random_ids, inputs)
    targets = torch.where(chosen, ids, torch.full_like(ids, IGNORE))
    return inputs, targets


class EncoderOnlyLM(nn.Module):
    """Embeddings (the characters and [MASK]) + positions, N encoder blocks with no mask, a tied head. Chapter 12."""

    def __init__(self, vocab_size: int, d_model: int = 64, n_heads: int = 4, d_ff: int = 256, n_layers: int = 3,
                 max_len: int = 64, dropout: float = 0.0):
        super().__init__()
        for name, value in (("vocab_size", vocab_size), ("d_model", d_model), ("n_heads", n_heads),
                            ("d_ff", d_ff), ("n_layers", n_layers), ("max_len", max_len)):
            check_positive_int(name, value)
        self.vocab_size, self.d_model, self.max_len = vocab_size, d_model, max_len
        self.mask_id = vocab_size  # one extra embedding row for [MASK]; it is never predicted
        self.embedding = nn.Embedding(vocab_size + 1, d_model)
        self.pe = SinusoidalPositionalEncoding(d_model, max_len)
        self.layers = nn.ModuleList(
            EncoderBlock(d_model, n_heads, d_ff, dropout, norm_first=True) for _ in range(n_layers))
        self.final_norm = LayerNorm(d_model)
        init_weights(self, (self.embedding,), d_model)  # as every model of the course

    def forward(self, tokens: Tensor, return_attention: bool = False) -> Tensor | tuple[Tensor, list[Tensor]]:
        """tokens (B, T), ids in [0, vocab_size] (vocab_size = [MASK]) -> logits (B, T, vocab_size). Chapter 12."""
        check_model_tokens("tokens", tokens, self.mask_id + 1, self.max_len)  # [MASK] = vocab_size is an input id
        x = self.pe(self.embedding(tokens) * math.sqrt(self.d_model))  # (B, T, d_model)
        weights = []
        for block in self.layers:
            x, w = block(x, None, need_weights=return_attention)  # mask None: every position sees both sides
            if w is not None:
                weights.append(w)
        logits = self.final_norm(x) @ self.embedding.weight[: self.vocab_size].T  # tied: (B, T, vocab_size)
        return (logits, weights) if return_attention else logits


def masked_loss(logits: Tensor, targets: Tensor) -> Tensor:
    """Mean cross-entropy over the scored (chosen) positions only; targets IGNORE elsewhere. Chapter 12."""
    check_finite("logits", check_float_tensor("logits", logits, 3, "(B, T, V)"), "a NaN logit makes the loss NaN")
    if not bool((check_rank("targets", targets, 2, "(B, T)") != IGNORE).any()):
        raise ValueError(f"targets must score at least one position, got only IGNORE={IGNORE} (the loss would be NaN)")
    return nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1),
                                       ignore_index=IGNORE)


def val_windows(val_ids: Tensor, block_size: int, n: int) -> Tensor:
    """The first n consecutive windows (n, block_size) of the validation ids. Chapter 12."""
    check_positive_int("n", n), check_positive_int("block_size", block_size), check_rank("val_ids", val_ids, 1, "(N,)")
    if len(val_ids) < block_size + 1:
        raise ValueError(f"val_ids must hold at least block_size + 1 = {block_size + 1} tokens, got {len(val_ids)}")
    if val_ids.dtype.is_floating_point or val_ids.dtype == torch.bool or int(val_ids.min()) < 0:
        raise ValueError(f"val_ids must hold integer token ids >= 0, got dtype {val_ids.dtype} and min "
                         f"{val_ids.min().item()}")
    return val_ids[consecutive_windows(len(val_ids), block_size, n)]  # (n, T)


def _check_encoder(model: object) -> EncoderOnlyLM:
    if not isinstance(model, EncoderOnlyLM):
        raise TypeError(f"model must be an EncoderOnlyLM, got {type(model).__name__}")
    return model


@torch.no_grad()
def masked_accuracy(model: EncoderOnlyLM, windows: Tensor, rate: float = 0.15, seed: int = 0) -> float:
    """Share of chosen positions (BERT's rule, seeded) predicted right (arg-max), all kinds together. Chapter 12."""
    return masked_accuracy_by_kind(model, windows, rate, seed)["all"][0]


@torch.no_grad()
def masked_accuracy_by_kind(model: EncoderOnlyLM, windows: Tensor, rate: float = 0.15,
                            seed: int = 0) -> dict[str, tuple[float, int]]:
    """Accuracy and count of the chosen positions by what the input shows there. Chapter 12.

    Keys: "mask" (the input shows [MASK]), "random" (another character), "kept" (its own
    character, so the answer is in the input) and "all"; each maps to (accuracy, positions).
    """
    model = _check_encoder(model)
    check_token_ids("windows", windows, model.vocab_size, "(n, T) of character ids")
    check_int("seed", seed)
    model.eval()
    inputs, targets = bert_mask(windows, model.vocab_size, model.mask_id, rate, torch.Generator().manual_seed(seed))
    scored = targets != IGNORE
    right = model(inputs).argmax(-1) == targets  # (n, T)
    kinds = {"mask": scored & (inputs == model.mask_id), "random": scored & (inputs != model.mask_id)
             & (inputs != windows), "kept": scored & (inputs == windows), "all": scored}
    return {k: (float(right[where].float().mean()) if bool(where.any()) else float("nan"), int(where.sum()))
            for k, where in kinds.items()}


@torch.no_grad()
def next_char_accuracy(model: nn.Module, val_ids: Tensor, block_size: int, n: int) -> float:
    """Share of positions of n validation windows where a causal LM's arg-max is the next character. Chapter 12."""
    check_module("model", model)
    check_positive_int("n", n), check_positive_int("block_size", block_size), check_rank("val_ids", val_ids, 1, "(N,)")
    if len(val_ids) < block_size + 1:
        raise ValueError(f"val_ids must hold at least block_size + 1 = {block_size + 1} tokens, got {len(val_ids)}")
    model.eval()
    idx = consecutive_windows(len(val_ids), block_size, n)  # (n, T)
    return float((model(val_ids[idx]).argmax(-1) == val_ids[idx + 1]).float().mean())


@torch.no_grad()
def gap_accuracy(model: EncoderOnlyLM, windows: Tensor, position: int, right_context: bool = True) -> float:
    """Fill one [MASK] at ``position`` of every window; without right context the window ends at the gap. Chapter 12.

    The same model, the same gaps: with ``right_context=False`` the characters after the gap are
    cut off, which is all a causal model ever sees.
    """
    model = _check_encoder(model)
    check_token_ids("windows", windows, model.vocab_size, "(n, T) of character ids")
    check_int("position", position, low=0, high=windows.shape[1] - 1)
    check_bool("right_context", right_context)
    model.eval()
    inputs = windows.clone()
    inputs[:, position] = model.mask_id
    if not right_context:
        inputs = inputs[:, : position + 1]  # (n, position + 1): the gap is the last character
    predicted = model(inputs)[:, position].argmax(-1)  # (n,)
    return float((predicted == windows[:, position]).float().mean())


@torch.no_grad()
def causal_gap_accuracy(model: nn.Module, windows: Tensor, position: int) -> float:
    """A causal LM's arg-max for the character at ``position`` given the characters before it. Chapter 12."""
    check_module("model", model)
    check_token_ids("windows", windows, shape_hint="(n, T) of character ids")
    check_int("position", position, low=1, high=windows.shape[1] - 1)
    model.eval()
    predicted = model(windows[:, :position])[:, -1].argmax(-1)  # (n,)
    return float((predicted == windows[:, position]).float().mean())
