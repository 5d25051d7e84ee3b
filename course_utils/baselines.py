"""The recurrent baselines the Transformer replaced: a GRU encoder-decoder without attention and
with Bahdanau (additive) attention. Chapter 10.

Both models speak the Transformer's interface, so Chapter 6's training loop, greedy decoding
and evaluation run on them unchanged:

- ``model(src, tgt_in) -> logits (B, T_tgt, V)`` (teacher forcing, for ``training.train``);
- ``encode(src, src_mask) -> memory (B, T_src, 2 d_hidden)``: the bidirectional GRU's states;
- ``decode(tgt, memory, src_mask, cache=None) -> logits``; with a :class:`GRUCache` it feeds
  only the new tokens and continues from the cached decoder state (for ``greedy_decode``).

Reads bottom-up: config -> additive attention -> cache -> the model.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor, nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from .masks import padding_mask
from .validate import check_bool_mask, check_int, check_model_tokens, check_positive_int, check_rank


@dataclass
class GRUConfig:
    """Sizes and switches of a GRU encoder-decoder. Chapter 10."""

    vocab_size: int  # one vocabulary for source and target (V)
    d_embed: int = 64  # token embedding width
    d_hidden: int = 64  # GRU state width per direction (the encoder is bidirectional)
    attention: bool = False  # False: the decoder sees the source only through its first state
    pad_id: int = 0  # token id of padding

    def __post_init__(self) -> None:
        for name in ("vocab_size", "d_embed", "d_hidden"):
            setattr(self, name, check_positive_int(name, getattr(self, name)))  # NumPy ints -> int
        if not isinstance(self.attention, bool):
            raise TypeError(f"attention must be a bool, got {type(self.attention).__name__}")
        self.pad_id = check_int("pad_id", self.pad_id, 0, self.vocab_size - 1)


class AdditiveAttention(nn.Module):
    """Bahdanau attention: score(s, h_j) = v^T tanh(W_s s + W_h h_j), softmax over kept keys. Chapter 10."""

    def __init__(self, d_query: int, d_key: int, d_attn: int):
        super().__init__()
        d_query, d_key, d_attn = (check_positive_int(n, v) for n, v in (("d_query", d_query), ("d_key", d_key),
                                                                        ("d_attn", d_attn)))
        self.W_s = nn.Linear(d_query, d_attn, bias=False)  # decoder state -> d_attn
        self.W_h = nn.Linear(d_key, d_attn)  # encoder annotation -> d_attn
        self.v = nn.Linear(d_attn, 1, bias=False)  # d_attn -> one score

    def forward(self, s: Tensor, keys: Tensor, keys_proj: Tensor, keep: Tensor) -> tuple[Tensor, Tensor]:
        """s (B, d_query), keys (B, T_src, d_key), keys_proj = W_h keys, keep (B, T_src) -> context, weights."""
        scores = self.v(torch.tanh(self.W_s(s)[:, None, :] + keys_proj)).squeeze(-1)  # (B, T_src)
        scores = scores.masked_fill(~keep, float("-inf"))
        weights = torch.softmax(scores, dim=-1)  # (B, T_src), zero on padding
        context = torch.bmm(weights[:, None, :], keys).squeeze(1)  # (B, 1, T_src) x (B, T_src, d_key) -> (B, d_key)
        return context, weights


class GRUCache:
    """The decoder's GRU state after the tokens fed so far (for incremental greedy decoding). Chapter 10."""

    def __init__(self) -> None:
        self.state: Tensor | None = None  # (B, d_hidden)
        self.length = 0  # target tokens consumed

    def __repr__(self) -> str:
        return f"GRUCache(length={self.length})"


class GRUSeq2Seq(nn.Module):
    """Bidirectional-GRU encoder + GRU decoder, with or without Bahdanau attention. Chapter 10.

    Without attention the whole source must squeeze through the decoder's first state (the
    encoder's final forward and backward states); with attention every decoder step reads a
    fresh weighted average of all encoder states (Bahdanau et al., 2015).
    """

    def __init__(self, config: GRUConfig):
        super().__init__()
        if not isinstance(config, GRUConfig):
            raise TypeError(f"config must be a GRUConfig, got {type(config).__name__}")
        self.config = c = config
        H = c.d_hidden
        self.src_embed = nn.Embedding(c.vocab_size, c.d_embed, padding_idx=c.pad_id)
        self.tgt_embed = nn.Embedding(c.vocab_size, c.d_embed, padding_idx=c.pad_id)
        self.encoder = nn.GRU(c.d_embed, H, batch_first=True, bidirectional=True)
        self.init_state = nn.Linear(2 * H, H)  # [last forward; first backward] -> decoder s_0
        d_context = 2 * H if c.attention else 0
        self.attention = AdditiveAttention(H, 2 * H, H) if c.attention else None
        self.decoder_cell = nn.GRUCell(c.d_embed + d_context, H)
        self.output_projection = nn.Linear(H + d_context + c.d_embed, c.vocab_size)  # [s_t; c_t; y_{t-1}] -> V

    # -- helpers -----------------------------------------------------------------------------
    def _keep(self, src_mask: Tensor, B: int, T_src: int) -> Tensor:
        check_bool_mask("src_mask", src_mask)
        if src_mask.numel() != B * T_src:
            raise ValueError(f"src_mask must be a padding keep-mask (B={B}, 1, 1, T_src={T_src}), "
                             f"got shape {tuple(src_mask.shape)}")
        return src_mask.reshape(B, T_src)  # (B, 1, 1, T_src) -> (B, T_src)

    def first_state(self, memory: Tensor, keep: Tensor) -> Tensor:
        """s_0 (B, H) from memory (B, T_src, 2H): forward state at the last real token, backward at the first."""
        H = self.config.d_hidden
        last = keep.sum(dim=1).clamp(min=1) - 1  # (B,) index of the last real source token
        fwd = memory[torch.arange(memory.shape[0]), last, :H]  # (B, H)
        bwd = memory[:, 0, H:]  # (B, H): the backward GRU ends at position 0
        return torch.tanh(self.init_state(torch.cat([fwd, bwd], dim=-1)))  # (B, H)

    # -- the three entry points ----------------------------------------------------------------
    def encode(self, src: Tensor, src_mask: Tensor | None = None) -> Tensor:
        """src (B, T_src) -> memory (B, T_src, 2 d_hidden): forward and backward GRU states. Chapter 10."""
        check_model_tokens("src", src, self.config.vocab_size)
        B, T = src.shape
        if src_mask is None:
            src_mask = padding_mask(src, self.config.pad_id)  # (B, 1, 1, T_src)
        keep = self._keep(src_mask, B, T)
        lengths = keep.sum(dim=1).clamp(min=1).cpu()  # (B,)
        packed = pack_padded_sequence(self.src_embed(src), lengths, batch_first=True, enforce_sorted=False)
        out, _ = self.encoder(packed)  # the GRUs run over the real tokens only, T steps one after another
        memory, _ = pad_packed_sequence(out, batch_first=True, total_length=T)  # (B, T_src, 2H), zeros on PAD
        return memory

    def decode(
        self,
        tgt: Tensor,
        memory: Tensor,
        src_mask: Tensor | None = None,
        tgt_mask: Tensor | None = None,
        cache: GRUCache | None = None,
        return_attention: bool = False,
    ) -> Tensor | tuple[Tensor, Tensor | None]:
        """tgt (B, T_tgt), memory -> logits (B, T_tgt, V) [, attention weights (B, T_tgt, T_src)]. Chapter 10.

        The GRU is causal by construction, so ``tgt_mask`` is accepted and not needed. With a
        :class:`GRUCache`, ``tgt`` holds only the new tokens and the state continues from the cache.
        """
        del tgt_mask  # a recurrence never sees the future
        check_model_tokens("tgt", tgt, self.config.vocab_size)
        check_rank("memory", memory, 3, "(B, T_src, 2 d_hidden)")
        B, T_tgt = tgt.shape
        T_src = memory.shape[1]
        if memory.shape[0] != B or memory.shape[2] != 2 * self.config.d_hidden:
            raise ValueError(f"memory must have shape (B={B}, T_src, 2 d_hidden={2 * self.config.d_hidden}), "
                             f"got {tuple(memory.shape)}")
        keep = (torch.ones(B, T_src, dtype=torch.bool, device=memory.device) if src_mask is None
                else self._keep(src_mask, B, T_src))
        if cache is not None and not isinstance(cache, GRUCache):
            raise TypeError(f"cache must be a GRUCache, got {type(cache).__name__}")
        s = cache.state if cache is not None and cache.state is not None else self.first_state(memory, keep)
        keys_proj = self.attention.W_h(memory) if self.attention is not None else None  # (B, T_src, H), once
        y = self.tgt_embed(tgt)  # (B, T_tgt, d_embed)
        features, weights = [], []
        for t in range(T_tgt):  # one step after another: this loop is what self-attention removes
            if self.attention is not None:
                context, w = self.attention(s, memory, keys_proj, keep)  # (B, 2H), (B, T_src)
                s = self.decoder_cell(torch.cat([y[:, t], context], dim=-1), s)  # (B, H)
                features.append(torch.cat([s, context, y[:, t]], dim=-1))
                weights.append(w)
            else:
                s = self.decoder_cell(y[:, t], s)  # (B, H)
                features.append(torch.cat([s, y[:, t]], dim=-1))
        if cache is not None:
            cache.state, cache.length = s, cache.length + T_tgt
        logits = self.output_projection(torch.stack(features, dim=1))  # (B, T_tgt, V)
        if return_attention:
            return logits, (torch.stack(weights, dim=1) if weights else None)  # (B, T_tgt, T_src)
        return logits

    def forward(self, src: Tensor, tgt: Tensor, src_mask: Tensor | None = None) -> Tensor:
        """src (B, T_src), tgt (B, T_tgt) -> logits (B, T_tgt, V), teacher-forced. Chapter 10."""
        check_model_tokens("src", src, self.config.vocab_size)
        if src_mask is None:
            src_mask = padding_mask(src, self.config.pad_id)  # (B, 1, 1, T_src)
        logits = self.decode(tgt, self.encode(src, src_mask), src_mask)
        assert isinstance(logits, Tensor)  # without return_attention, decode gives the logits alone
        return logits

    def new_cache(self) -> GRUCache:
        """An empty GRUCache, for incremental greedy decoding. Chapter 10."""
        return GRUCache()
